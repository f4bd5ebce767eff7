#include "daemon/cli.hpp"

#include <unistd.h>

#include <iostream>

#include <CLI/CLI.hpp>

#include "contracts/spelling.hpp"
#include "contracts/validate_files.hpp"
#include "contracts/values.hpp"
#include "daemon/container_config.hpp"
#include "daemon/facts_command.hpp"
#include "daemon/fleet_command.hpp"
#include "daemon/logging.hpp"
#include "daemon/probe_command.hpp"
#include "daemon/provision_cli.hpp"
#include "daemon/scan_command.hpp"
#include "daemon/serve_command.hpp"
#include "report/report_table.hpp"

namespace envcontract::daemon {
namespace {

struct ValidateArguments {
  std::vector<std::string> files;
  bool print = false;
};

CLI::App* add_validate(CLI::App& app, ValidateArguments& arguments) {
  auto* verb = app.add_subcommand(
      "validate", "Check contract files; print 'ok' or every error as file:line:column");
  verb->add_option("FILE", arguments.files,
                   "contract files (YAML), or directories of them (CI configs too)")
      ->required()
      ->check(CLI::ExistingPath);
  verb->add_flag("--print", arguments.print,
                 "print the normalised contract (every check with its kind and parameters) as "
                 "JSON; takes exactly one FILE");
  verb->footer("Exit status: 0 all valid, 1 any invalid, 2 usage error.");
  return verb;
}

int run(const ValidateArguments& arguments) {
  if (arguments.print && arguments.files.size() != 1) {
    std::cerr << "envcontractd validate: --print takes exactly one FILE, got "
              << arguments.files.size() << "\n";
    return 2;
  }
  const std::vector<std::filesystem::path> paths(arguments.files.begin(), arguments.files.end());
  using contracts::ValidateOutput;
  return contracts::validate_files(
      paths, arguments.print ? ValidateOutput::normalized_json : ValidateOutput::verdicts,
      std::cout, std::cerr);
}

// Where to look for envs and the image reference: shared by facts and scan.
struct HostArguments {
  std::vector<std::string> roots;
  std::vector<std::string> prefixes;
  std::string run_root_envs_as = probes::k_dynamic_probe_user;
  std::string image_tag_file;
  std::string image_tag_env;
  std::string image_tag_command;
  std::string containers_file;
};

void add_discovery_options(CLI::App* verb, std::vector<std::string>& roots,
                           std::vector<std::string>& prefixes, std::string& run_root_envs_as) {
  verb->add_option("--root", roots,
                   "a filesystem root or directory to search for envs (repeatable; default /)");
  verb->add_option("--prefix", prefixes, "an env prefix to include (repeatable)");
  verb->add_option("--run-root-envs-as", run_root_envs_as,
                   "whom root-owned envs' code runs as: 'dynamic', a uid of its own for each "
                   "env; a user's name, that user for all; 'root', root, and reports say so "
                   "(docs/security.md)")
      ->capture_default_str();
}

// Where to look for envs: the roots and prefixes given, or the whole host.
probes::DiscoveryOptions discovery_options(const std::vector<std::string>& roots,
                                           const std::vector<std::string>& prefixes,
                                           const std::string& run_root_envs_as) {
  probes::DiscoveryOptions options;
  options.run_as.root_envs_user = run_root_envs_as;
  options.roots.assign(roots.begin(), roots.end());
  options.prefixes.assign(prefixes.begin(), prefixes.end());
  if (roots.empty() && prefixes.empty()) {
    options.roots.emplace_back("/");
  }
  return options;
}

void add_host_options(CLI::App* verb, HostArguments& arguments) {
  add_discovery_options(verb, arguments.roots, arguments.prefixes, arguments.run_root_envs_as);
  auto* file = verb->add_option("--image-tag-file", arguments.image_tag_file,
                                "file holding the host's container image reference");
  auto* variable = verb->add_option("--image-tag-env", arguments.image_tag_env,
                                    "environment variable holding the image reference");
  auto* command = verb->add_option("--image-tag-command", arguments.image_tag_command,
                                   "shell command printing the image reference (10 s timeout)");
  file->excludes(variable)->excludes(command);
  variable->excludes(command);
  verb->add_option("--containers", arguments.containers_file,
                   "YAML file with a 'containers:' list (and 'container_discovery:'): "
                   "containers whose envs run inside them (docs/containers.md)");
}

// The containers of --containers FILE into `options`; false (after saying
// why) when the file is not valid.
bool read_container_targets(const HostArguments& arguments, probes::HostFactsOptions& options) {
  if (arguments.containers_file.empty()) {
    return true;
  }
  ContainerSettings settings;
  const auto problems = read_containers_file(arguments.containers_file, settings);
  std::cerr << problems;
  options.containers = std::move(settings.containers);
  options.container_discovery = std::move(settings.discovery);
  return problems.empty();
}

probes::HostFactsOptions host_options(const HostArguments& arguments) {
  probes::HostFactsOptions options;
  options.discovery =
      discovery_options(arguments.roots, arguments.prefixes, arguments.run_root_envs_as);
  using Kind = probes::ImageTagSource::Kind;
  if (!arguments.image_tag_file.empty()) {
    options.image = {Kind::file, arguments.image_tag_file};
  } else if (!arguments.image_tag_env.empty()) {
    options.image = {Kind::environment, arguments.image_tag_env};
  } else if (!arguments.image_tag_command.empty()) {
    options.image = {Kind::command, arguments.image_tag_command};
  }
  return options;
}

CLI::App* add_facts(CLI::App& app, HostArguments& arguments) {
  auto* verb = app.add_subcommand("facts",
                                  "Discover this host's Python envs and print what their files "
                                  "and activation tell, as JSON (no env code runs)");
  add_host_options(verb, arguments);
  verb->footer("Exit status: 0 envs found, 1 none found, 2 usage error.");
  return verb;
}

int run_facts_verb(const HostArguments& arguments) {
  auto options = host_options(arguments);
  if (!read_container_targets(arguments, options)) {
    return 2;
  }
  return run_facts(options, std::cout, std::cerr);
}

struct ScanArguments {
  HostArguments host;
  std::string contract;
  std::string contracts_dir = "/usr/share/envcontract/contracts";
  std::string detect_root = "/";
  std::string format = "table";
  std::string progress = "auto";
  std::vector<std::string> run_tests;
  std::string checkout;
  bool verbose = false;
  unsigned concurrency = 0;
};

const std::vector<std::string> k_scan_formats = {"table", "json", "junit"};

CLI::App* add_scan(CLI::App& app, ScanArguments& arguments) {
  auto* verb = app.add_subcommand(
      "scan",
      "Scan this host once (discover, probe, judge) without a daemon or database and print "
      "the report");
  verb->add_option("--contract", arguments.contract,
                   "the contract to judge against (YAML), or 'auto' to pick one of "
                   "--contracts-dir by the devices and tools this host has")
      ->required()
      ->check(CLI::ExistingFile | CLI::IsMember({"auto"}));
  verb->add_option("--contracts-dir", arguments.contracts_dir, "where 'auto' looks for contracts")
      ->capture_default_str();
  verb->add_option("--detect-root", arguments.detect_root,
                   "where 'auto' looks for /dev nodes and tools")
      ->capture_default_str();
  add_host_options(verb, arguments.host);
  verb->add_option("-o,--output,--format", arguments.format,
                   "table (for people), json (docs/report.md) or junit (for CI systems)")
      ->check(CLI::IsMember(k_scan_formats))
      ->capture_default_str();
  verb->add_flag("-v,--verbose", arguments.verbose,
                 "with -o table: evidence and remedy under each failing check");
  verb->add_option(
      "--concurrency", arguments.concurrency,
      "envs read and probed at once, and the interpreters an env's probe may run side by side "
      "(default: the number of cores)");
  verb->add_option("--run-test", arguments.run_tests,
                   "with a CI platform config as the contract: also run this integration test "
                   "(id, name or check id), though it has no phase: preflight (repeatable)");
  verb->add_option("--checkout", arguments.checkout,
                   "a checkout of the repository whose platform configs integration_test "
                   "checks name as {checkout}/... (the shipped contracts' CI preflights)")
      ->check(CLI::ExistingDirectory);
  verb->add_option("--progress", arguments.progress,
                   "a line per finished env and, every 5 s, what is still running, on stderr: "
                   "auto (on a terminal), always (CI logs too) or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  verb->footer(
      "A scan waits for each env's slowest check: a smoke snippet that hangs holds it for "
      "its time-out, on purpose, to show where it hangs.\n"
      "Exit status: 0 compliant, 1 drift, 2 error (invalid contract, a check that could not "
      "be judged, usage error).");
  return verb;
}

int run(const ScanArguments& arguments) {
  ScanCommandOptions options;
  options.contract = arguments.contract;
  options.contracts_dir = arguments.contracts_dir;
  options.detect_root = arguments.detect_root;
  options.run_tests = arguments.run_tests;
  if (!arguments.checkout.empty()) {
    options.checkout = std::filesystem::absolute(arguments.checkout);
  }
  options.settings.facts = host_options(arguments.host);
  if (!read_container_targets(arguments.host, options.settings.facts)) {
    return 2;
  }
  options.settings.concurrency = arguments.concurrency;
  options.format = arguments.format == "json"    ? ReportFormat::json
                   : arguments.format == "junit" ? ReportFormat::junit
                                                 : ReportFormat::table;
  options.verbose = arguments.verbose;
  options.progress = arguments.progress == "always" ||
                     (arguments.progress == "auto" && ::isatty(STDERR_FILENO) != 0);
  options.colour = report::colour_wanted(STDOUT_FILENO);
  return run_scan(options, std::cout, std::cerr);
}

struct ProbeArguments {
  std::vector<std::string> roots;
  std::vector<std::string> prefixes;
  std::string run_root_envs_as = probes::k_dynamic_probe_user;
  std::string contract;
  std::vector<std::string> envs;
  unsigned concurrency = 0;
};

CLI::App* add_probe(CLI::App& app, ProbeArguments& arguments) {
  auto* verb = app.add_subcommand(
      "probe",
      "Run the dynamic probes (imports, devices, smoke snippets) in every env, each stage in "
      "its own subprocess; print one JSON object per env as it finishes");
  add_discovery_options(verb, arguments.roots, arguments.prefixes, arguments.run_root_envs_as);
  verb->add_option("--contract", arguments.contract,
                   "contract whose imports, device and smoke checks decide what runs")
      ->check(CLI::ExistingFile);
  verb->add_option("--env", arguments.envs, "probe only the env of this name (repeatable)");
  verb->add_option("--concurrency", arguments.concurrency,
                   "envs probed at once (default: the number of cores)");
  verb->footer("Exit status: 0 probed, 1 no env found, 2 usage error or invalid contract.");
  return verb;
}

int run(const ProbeArguments& arguments) {
  ProbeOptions options;
  options.discovery =
      discovery_options(arguments.roots, arguments.prefixes, arguments.run_root_envs_as);
  if (!arguments.contract.empty()) {
    options.contract = arguments.contract;
  }
  options.only_envs = arguments.envs;
  options.concurrency = arguments.concurrency;
  return run_probe(options, std::cout, std::cerr);
}

struct ServeArguments {
  std::string checkout;
  std::string config_file;
  std::string contract;
  std::string contracts_dir;
  std::vector<std::string> roots;
  std::vector<std::string> prefixes;
  std::string listen;
  std::string database;
  std::string image_tag_file;
  std::string interval;
  std::string reprobe_interval;
  std::string token_file;
  std::string log_level;
  unsigned concurrency = 0;
  std::string ready_file;
  std::string run_root_envs_as;
  CLI::App* verb = nullptr;
};

constexpr const char* k_default_config = "/etc/envcontract/agent.yaml";

CLI::App* add_serve(CLI::App& app, ServeArguments& arguments) {
  auto* verb = app.add_subcommand(
      "serve",
      "Run the agent: scan at startup, every interval and on demand; keep history in SQLite; "
      "serve the report, API, metrics and dashboard over HTTP");
  arguments.verb = verb;
  verb->add_option("--config", arguments.config_file,
                   std::string("YAML config (docs/agent.md); default ") + k_default_config +
                       " when it exists. Flags override it");
  verb->add_option("--contract", arguments.contract,
                   "contract file, or 'auto' to pick one of --contracts-dir by the devices and "
                   "tools this host has (default auto)");
  verb->add_option("--contracts-dir", arguments.contracts_dir,
                   "where 'auto' looks for contracts (default /usr/share/envcontract/contracts)");
  verb->add_option("--root", arguments.roots,
                   "a filesystem root or directory to search for envs (repeatable; default /)");
  verb->add_option("--prefix", arguments.prefixes, "an env prefix to include (repeatable)");
  verb->add_option("--run-root-envs-as", arguments.run_root_envs_as,
                   "whom root-owned envs' code runs as (default dynamic: a uid of its own "
                   "for each env; a user's name: that user for all; 'root' runs it as root, "
                   "and reports say so)");
  verb->add_option("--listen", arguments.listen,
                   "HOST:PORT to serve on (default 127.0.0.1:9714; port 0: any free port)");
  verb->add_option("--database", arguments.database,
                   "SQLite file for history (default /var/lib/envcontract/agent.db)");
  verb->add_option("--image-tag-file", arguments.image_tag_file,
                   "file holding the host's container image reference");
  verb->add_option("--interval", arguments.interval, "time between scans (default 5m)");
  verb->add_option("--reprobe-interval", arguments.reprobe_interval,
                   "longest time an unchanged env goes without its dynamic probes (devices, "
                   "smoke) running again (default 30m)");
  verb->add_option("--token-file", arguments.token_file,
                   "file (mode 0600) holding the bearer token POST /api/v1/scan needs; without "
                   "it, anyone who reaches the port may start scans");
  verb->add_option("--log-level", arguments.log_level,
                   "trace, debug, info (default), warn, error, critical or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  verb->add_option(
      "--concurrency", arguments.concurrency,
      "envs read and probed at once, and the interpreters an env's probe may run side by side "
      "(default: the number of cores)");
  verb->add_option("--checkout", arguments.checkout,
                   "a checkout of the repository whose platform configs integration_test "
                   "checks name as {checkout}/... (default: none; they are skipped)");
  verb->add_option("--ready-file", arguments.ready_file,
                   "write the dashboard's URL to this file once listening (for scripts)");
  verb->footer(
      "Signals: SIGHUP reloads the contract (an invalid one is logged and the last good one "
      "stays); SIGTERM and SIGINT stop.\n"
      "Exit status: 0 stopped cleanly, 2 cannot start (invalid config or contract, database "
      "refused, port taken).");
  return verb;
}

bool given(const ServeArguments& arguments, const char* flag) {
  return arguments.verb->get_option(flag)->count() > 0;
}

std::optional<std::chrono::milliseconds> duration_flag(const std::string& flag,
                                                       const std::string& text) {
  const auto parsed = contracts::parse_duration(text);
  if (!parsed) {
    std::cerr << "envcontractd serve: " << flag << ": " << parsed.error() << "\n";
    return std::nullopt;
  }
  return parsed.value();
}

int run(const ServeArguments& arguments) {
  ServeOptions options;
  auto& config = options.config;
  const bool explicit_config = given(arguments, "--config");
  const std::filesystem::path config_file =
      explicit_config ? arguments.config_file : k_default_config;
  std::error_code error;
  if (explicit_config || std::filesystem::exists(config_file, error)) {
    const auto problems = read_agent_config(config_file, config);
    if (!problems.empty()) {
      std::cerr << problems;
      return 2;
    }
  }
  if (given(arguments, "--contract"))
    config.contract = arguments.contract;
  if (given(arguments, "--contracts-dir"))
    config.contracts_dir = arguments.contracts_dir;
  if (given(arguments, "--root") || given(arguments, "--prefix")) {
    config.roots.assign(arguments.roots.begin(), arguments.roots.end());
    config.prefixes.assign(arguments.prefixes.begin(), arguments.prefixes.end());
  }
  if (given(arguments, "--run-root-envs-as"))
    config.run_root_envs_as = arguments.run_root_envs_as;
  if (given(arguments, "--listen"))
    config.listen = arguments.listen;
  if (given(arguments, "--database"))
    config.database = arguments.database;
  if (given(arguments, "--image-tag-file")) {
    config.image = {probes::ImageTagSource::Kind::file, arguments.image_tag_file};
  }
  if (given(arguments, "--interval")) {
    const auto interval = duration_flag("--interval", arguments.interval);
    if (!interval)
      return 2;
    config.interval = *interval;
  }
  if (given(arguments, "--reprobe-interval")) {
    const auto interval = duration_flag("--reprobe-interval", arguments.reprobe_interval);
    if (!interval)
      return 2;
    config.reprobe_interval = *interval;
  }
  if (given(arguments, "--token-file"))
    config.token_file = arguments.token_file;
  if (given(arguments, "--log-level"))
    config.log_level = arguments.log_level;
  if (given(arguments, "--concurrency"))
    config.concurrency = arguments.concurrency;
  if (given(arguments, "--checkout"))
    config.checkout = std::filesystem::absolute(arguments.checkout);
  if (!parse_listen_address(config.listen)) {
    std::cerr << "envcontractd serve: --listen must be HOST:PORT such as 127.0.0.1:9714, got '"
              << config.listen << "'\n";
    return 2;
  }
  options.ready_file = arguments.ready_file;
  configure_logging(config.log_level);
  return run_serve(options);
}

}  // namespace

int run_envcontractd(int argc, char** argv) {
  CLI::App app{
      "envcontractd: keeps a host's Python environments honest to its accelerator "
      "contract"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(ENVCONTRACT_VERSION));
  ValidateArguments validate_arguments;
  HostArguments facts_arguments;
  auto* validate = add_validate(app, validate_arguments);
  auto* facts = add_facts(app, facts_arguments);
  ProbeArguments probe_arguments;
  auto* probe = add_probe(app, probe_arguments);
  ScanArguments scan_arguments;
  auto* scan = add_scan(app, scan_arguments);
  ServeArguments serve_arguments;
  auto* serve = add_serve(app, serve_arguments);
  ProvisioningCli provisioning(app);
  FleetCli fleet(app);
  // -o before the verb, as fleetctl takes it: `envcontractd -o json scan`.
  std::string leading_output;
  app.add_option("-o,--output,--format", leading_output,
                 "scan's output format, before or after the verb")
      ->check(CLI::IsMember(k_scan_formats));

  std::vector<std::string> verbs;
  for (const auto* verb : app.get_subcommands({})) {
    verbs.push_back(verb->get_name());
  }
  if (const auto problem = contracts::unknown_verb("envcontractd", argc, argv, verbs);
      !problem.empty()) {
    std::cerr << problem << "\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (app.count("--output") != 0) {
    if (!scan->parsed()) {
      std::cerr << "envcontractd: -o is for scan; the other verbs print one format\n";
      return 2;
    }
    if (scan->count("--output") != 0 && scan_arguments.format != leading_output) {
      std::cerr << "envcontractd: -o " << leading_output << " before the verb and -o "
                << scan_arguments.format << " after it: give one\n";
      return 2;
    }
    scan_arguments.format = leading_output;
  }
  if (validate->parsed()) {
    return run(validate_arguments);
  }
  if (facts->parsed()) {
    return run_facts_verb(facts_arguments);
  }
  if (scan->parsed()) {
    return run(scan_arguments);
  }
  if (serve->parsed()) {
    return run(serve_arguments);
  }
  if (probe->parsed()) {
    return run(probe_arguments);
  }
  if (const auto status = fleet.run()) {
    return *status;
  }
  return provisioning.run().value_or(2);
}

}  // namespace envcontract::daemon
