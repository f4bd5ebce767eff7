#include "daemon/cli.hpp"

#include <unistd.h>

#include <iostream>

#include <CLI/CLI.hpp>

#include "command_line/command_line.hpp"
#include "common/shown_path.hpp"
#include "contracts/validate_files.hpp"
#include "contracts/values.hpp"
#include "daemon/facts_command.hpp"
#include "daemon/fleet_command.hpp"
#include "daemon/gate_cli.hpp"
#include "daemon/logging.hpp"
#include "daemon/probe_command.hpp"
#include "daemon/provision_cli.hpp"
#include "daemon/scan_command.hpp"
#include "daemon/serve_command.hpp"
#include "daemon/shared_flags.hpp"
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

CLI::App* add_facts(CLI::App& app, ScanFlags& flags) {
  auto* verb = app.add_subcommand("facts",
                                  "Discover this host's Python envs and print what their files "
                                  "and activation tell, as JSON (no env code runs)");
  flags.add_discovery(verb);
  flags.add_image(verb);
  flags.add_containers(verb);
  verb->footer(
      "Exit status: 0 envs found, 1 none found, 2 usage error (a root or prefix that is not "
      "there).");
  return verb;
}

int run_facts_verb(const ScanFlags& flags) {
  const auto config = flags.over_defaults("facts", std::cerr);
  if (!config) {
    return 2;
  }
  return run_facts(host_facts_options(*config), std::cout, std::cerr);
}

struct ScanArguments {
  ScanFlags flags;
  std::string contract;
  std::string format = "table";
  std::vector<std::string> run_tests;
  std::string checkout;
  bool verbose = false;
  unsigned concurrency = 0;
};

CLI::App* add_scan(CLI::App& app, ScanArguments& arguments) {
  auto* verb = app.add_subcommand(
      "scan",
      "Scan this host once (discover, probe, judge) without a daemon or database and print "
      "the report");
  add_contract_option(verb, arguments.contract)->required();
  arguments.flags.add_contract_detection(verb);
  arguments.flags.add_discovery(verb);
  arguments.flags.add_image(verb);
  arguments.flags.add_containers(verb);
  command_line::add_format_option(
      verb, arguments.format, {"table", "json", "junit"},
      "table (for people), json (docs/report.md) or junit (for CI systems); before or after "
      "the verb");
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
  arguments.flags.add_progress(verb);
  verb->footer(
      "A scan waits for each env's slowest check: a smoke snippet that hangs holds it for "
      "its time-out, on purpose, to show where it hangs.\n"
      "Exit status: 0 compliant, 1 drift, 2 error (invalid contract, a check that could not "
      "be judged, usage error).");
  return verb;
}

int run(const ScanArguments& arguments) {
  const auto config = arguments.flags.over_defaults("scan", std::cerr);
  if (!config) {
    return 2;
  }
  ScanCommandOptions options;
  options.contract = arguments.contract;
  options.contracts_dir = config->contracts_dir;
  options.detect_root = config->detect_root;
  options.run_tests = arguments.run_tests;
  if (!arguments.checkout.empty()) {
    options.checkout = std::filesystem::absolute(arguments.checkout);
  }
  options.settings.facts = host_facts_options(*config);
  options.settings.concurrency = arguments.concurrency;
  options.format = arguments.format == "json"    ? ReportFormat::json
                   : arguments.format == "junit" ? ReportFormat::junit
                                                 : ReportFormat::table;
  options.verbose = arguments.verbose;
  options.progress = arguments.flags.progress_wanted();
  options.colour = report::colour_wanted(STDOUT_FILENO);
  return run_scan(options, std::cout, std::cerr);
}

struct ProbeArguments {
  ScanFlags flags;
  std::string contract;
  std::vector<std::string> envs;
  unsigned concurrency = 0;
};

CLI::App* add_probe(CLI::App& app, ProbeArguments& arguments) {
  auto* verb = app.add_subcommand(
      "probe",
      "Run the dynamic probes (imports, devices, smoke snippets) in every env, each stage in "
      "its own subprocess; print one JSON object per env as it finishes");
  arguments.flags.add_discovery(verb);
  add_base_contract_option(verb, arguments.contract,
                           "contract whose imports, device and smoke checks decide what runs");
  verb->add_option("--env", arguments.envs, "probe only the env of this name (repeatable)");
  verb->add_option("--concurrency", arguments.concurrency,
                   "envs probed at once (default: the number of cores)");
  verb->footer("Exit status: 0 probed, 1 no env found, 2 usage error or invalid contract.");
  return verb;
}

int run(const ProbeArguments& arguments) {
  const auto config = arguments.flags.over_defaults("probe", std::cerr);
  if (!config) {
    return 2;
  }
  ProbeOptions options;
  options.discovery = host_facts_options(*config).discovery;
  if (!arguments.contract.empty()) {
    options.contract = arguments.contract;
  }
  options.only_envs = arguments.envs;
  options.concurrency = arguments.concurrency;
  return run_probe(options, std::cout, std::cerr);
}

struct ServeArguments {
  ScanFlags flags;
  std::string checkout;
  std::string config_file;
  std::string contract;
  std::string listen;
  std::vector<std::string> allowed_hosts;
  std::string database;
  std::string interval;
  std::string reprobe_interval;
  std::string token_file;
  std::string log_level;
  unsigned concurrency = 0;
  std::string ready_file;
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
  add_contract_option(verb, arguments.contract);
  arguments.flags.add_contract_detection(verb);
  arguments.flags.add_discovery(verb);
  arguments.flags.add_image(verb);
  arguments.flags.add_containers(verb);
  verb->add_option("--listen", arguments.listen,
                   "HOST:PORT to serve on (default 127.0.0.1:9714; port 0: any free port)");
  add_allowed_host_option(verb, arguments.allowed_hosts);
  verb->add_option("--database", arguments.database,
                   "SQLite file for history, in a directory that exists (default "
                   "/var/lib/envcontract/agent.db, whose directory is made when missing)");
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
      "Exit status: 0 stopped cleanly, 2 cannot start (invalid config or contract, a root "
      "that is not there, database refused, port taken).");
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
    const auto diagnostics = read_agent_config(config_file, config);
    std::cerr << diagnostics.text();
    if (diagnostics.has_errors()) {
      return 2;
    }
  }
  if (given(arguments, "--contract"))
    config.contract = arguments.contract;
  if (!arguments.flags.apply(config, std::cerr)) {
    return 2;
  }
  // As scan: a root that is not there is a mistake, not a host without envs.
  if (const auto problem = missing_directory(host_facts_options(config).discovery);
      !problem.empty()) {
    std::cerr << "envcontractd serve: " << problem
              << (arguments.flags.roots.empty() && arguments.flags.prefixes.empty()
                      ? " (roots: or prefixes: of " + common::shown_path(config_file) + ")"
                      : std::string())
              << "\n";
    return 2;
  }
  if (given(arguments, "--listen"))
    config.listen = arguments.listen;
  if (given(arguments, "--allowed-host"))
    config.http_allowed_hosts = arguments.allowed_hosts;
  if (given(arguments, "--database"))
    config.database = arguments.database;
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
  ScanFlags facts_flags;
  auto* validate = add_validate(app, validate_arguments);
  auto* facts = add_facts(app, facts_flags);
  ProbeArguments probe_arguments;
  auto* probe = add_probe(app, probe_arguments);
  ScanArguments scan_arguments;
  auto* scan = add_scan(app, scan_arguments);
  ServeArguments serve_arguments;
  auto* serve = add_serve(app, serve_arguments);
  ProvisioningCli provisioning(app);
  FleetCli fleet(app);
  GateCli gate(app);
  // -o before the verb, as fleetctl takes it: `envcontractd -o json plan`
  // is `envcontractd plan -o json` (command_line/command_line.hpp).
  std::string leading_output;
  app.add_option("-o,--output,--format", leading_output,
                 "the output format of scan, plan and snapshot, before or after the verb");

  const auto line = command_line::read_command_line("envcontractd", app, argc, argv);
  if (!line.problem.empty()) {
    std::cerr << line.problem << "\n";
    return 2;
  }
  if (const auto status = command_line::parse_command_line(app, line)) {
    return *status;
  }
  if (validate->parsed()) {
    return run(validate_arguments);
  }
  if (facts->parsed()) {
    return run_facts_verb(facts_flags);
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
  if (const auto status = gate.run()) {
    return *status;
  }
  return provisioning.run().value_or(2);
}

}  // namespace envcontract::daemon
