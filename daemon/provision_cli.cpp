#include "daemon/provision_cli.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>

#include "command_line/command_line.hpp"
#include "contracts/values.hpp"
#include "daemon/contract_detection.hpp"
#include "daemon/provision_command.hpp"
#include "daemon/shared_flags.hpp"
#include "daemon/snapshot_command.hpp"
#include "daemon/store.hpp"

namespace envcontract::daemon {
namespace {

constexpr const char* k_default_config = "/etc/envcontract/agent.yaml";

// "alice (uid 1000)", or with sudo "alice via sudo (uid 0)": who ran the verb.
std::string who_asked() {
  const uid_t uid = ::getuid();
  const auto* entry = ::getpwuid(uid);
  std::string name = entry != nullptr ? entry->pw_name : std::to_string(uid);
  if (const char* sudo_user = std::getenv("SUDO_USER"); sudo_user != nullptr && uid == 0) {
    name = std::string(sudo_user) + " via sudo";
  }
  return "cli: " + name + " (uid " + std::to_string(uid) + ")";
}

}  // namespace

struct ProvisioningCli::Arguments {
  CLI::App* plan = nullptr;
  CLI::App* provision = nullptr;
  CLI::App* promote = nullptr;
  CLI::App* rollback = nullptr;
  CLI::App* snapshot = nullptr;
  std::vector<CLI::App*> verbs;
  bool pin = false;
  std::string snapshot_output_file;
  std::string snapshot_format;  // yaml, or (deprecated) the file -o named before --output-file
  std::string snapshot_name;

  ScanFlags flags;
  std::string config_file;
  std::string contract;
  std::string envs_dir;
  std::string user;
  std::string on_failure;
  std::vector<std::string> python_dirs;
  std::string database;
  std::string env;
  std::string format = "table";
  std::string name;
  bool apply = false;
  std::string promote_env;
  std::string promote_as;
  std::string rollback_name;

  void add_common(CLI::App* verb, bool contract_needed) {
    verb->add_option("--config", config_file,
                     std::string("agent config (docs/agent.md) for provisioning, database and "
                                 "image; default ") +
                         k_default_config + " when it exists. Flags override it");
    if (contract_needed) {
      add_contract_option(verb, contract)->required();
      flags.add_contract_detection(verb);
    }
    verb->add_option("--envs-dir", envs_dir, "where new envs are made (provisioning.envs_dir)");
    verb->add_option("--user", user,
                     "who runs the steps and owns the links when the agent is root "
                     "(provisioning.user); never root");
    verb->add_option("--database", database,
                     "SQLite file that records the action, in a directory that exists");
    verbs.push_back(verb);
  }

  // The config file, then the flags over it.
  std::optional<ProvisioningCommandOptions> options(CLI::App* verb) {
    AgentConfig config;
    const bool explicit_config = verb->count("--config") != 0;
    const std::filesystem::path file = explicit_config ? config_file : k_default_config;
    std::error_code error;
    const bool read_config = explicit_config || std::filesystem::exists(file, error);
    if (read_config) {
      const auto diagnostics = read_agent_config(file, config);
      std::cerr << diagnostics.text();
      if (diagnostics.has_errors()) {
        return std::nullopt;
      }
    }
    if (!flags.apply(config, std::cerr)) {
      return std::nullopt;
    }
    ProvisioningCommandOptions options;
    options.contract = contract;
    if (contract == "auto") {
      const auto detected = detect_contract(config.contracts_dir, config.detect_root);
      if (!detected) {
        std::cerr << "envcontractd " << verb->get_name() << ": " << detected.error() << "\n";
        return std::nullopt;
      }
      options.contract = detected->file;
      std::cerr << "contract: auto chose " << detected->file.string() << " (" << detected->why
                << ")\n";
    }
    options.provisioning = config.provisioning;
    options.run_tests = config.run_integration_tests;
    options.checkout = config.checkout;
    if (!envs_dir.empty())
      options.provisioning.envs_dir = envs_dir;
    if (!user.empty())
      options.provisioning.user = user;
    if (!on_failure.empty())
      options.provisioning.remove_on_failure = on_failure == "remove";
    if (!python_dirs.empty())
      options.provisioning.python_dirs.assign(python_dirs.begin(), python_dirs.end());
    options.database = !database.empty() ? std::filesystem::path(database)
                       : read_config     ? config.database
                                         : std::filesystem::path();
    // Said before anything is done, not after, as a record that was lost.
    if (const auto problem = Store::directory_problem(options.database); !problem.empty()) {
      std::cerr << "envcontractd " << verb->get_name() << ": " << problem << "\n";
      return std::nullopt;
    }
    options.requested_by = who_asked();
    options.json = format == "json";
    options.progress_on_terminal = ::isatty(STDOUT_FILENO) != 0;
    options.scan_progress = flags.progress_wanted();
    options.scan.facts = host_facts_options(config);
    options.scan.probe_limits = config.probe_limits;
    options.scan.env_deadline = config.env_deadline;
    return options;
  }
};

ProvisioningCli::ProvisioningCli(CLI::App& app) : m_arguments(std::make_unique<Arguments>()) {
  auto& a = *m_arguments;
  a.plan = app.add_subcommand(
      "plan",
      "Scan this host and print, for each env that does not comply, the ordered steps that "
      "would make it comply, each naming the checks it fixes");
  a.add_common(a.plan, true);
  a.flags.add_discovery(a.plan);
  a.flags.add_image(a.plan);
  a.flags.add_containers(a.plan);
  a.plan->add_option("--env", a.env, "only this env's plan");
  command_line::add_format_option(a.plan, a.format, {"table", "json"},
                                  "table (for people) or json; before or after the verb");
  a.flags.add_progress(a.plan);
  a.plan->footer("Exit status: 0 nothing to do, 1 steps planned, 2 error.");

  a.provision = app.add_subcommand(
      "provision",
      "Build a new env from the contract's provision: recipe, beside the others (never over "
      "one), then scan it with the whole contract. A dry run unless --apply");
  a.add_common(a.provision, true);
  a.flags.add_run_as(a.provision);
  a.flags.add_image(a.provision);
  a.flags.add_progress(a.provision);
  a.provision->add_option("--name", a.name, "the new env's name (in the envs directory)")
      ->required();
  a.provision->add_flag("--apply", a.apply, "run the steps (without it: print them only)");
  a.provision
      ->add_option("--on-failure", a.on_failure,
                   "keep (the half-built env stays, marked failed) or remove")
      ->check(CLI::IsMember({"keep", "remove"}));
  a.provision->add_option("--python-dir", a.python_dirs,
                          "where an interpreter named by version (python: 3.10) is looked for "
                          "(repeatable; default /usr/local/bin, /usr/bin)");
  a.provision->footer(
      "Exit status: 0 built and compliant (or the dry run), 1 built but not compliant, 2 "
      "failed (a step, the lock, usage).");

  a.promote = app.add_subcommand(
      "promote",
      "Scan a built env again and, only when it complies, switch the link NAME to it in one "
      "rename (the previous target is kept for rollback)");
  a.add_common(a.promote, true);
  a.flags.add_run_as(a.promote);
  a.flags.add_image(a.promote);
  a.flags.add_progress(a.promote);
  a.promote->add_option("ENV", a.promote_env, "the env: a name in the envs directory, or a path")
      ->required();
  a.promote->add_option("--as", a.promote_as, "the link that users and CI activate")->required();
  a.promote->footer(
      "Exit status: 0 promoted, 1 refused (the env does not comply, or is marked as a failed "
      "provision), 2 error.");

  a.rollback = app.add_subcommand(
      "rollback", "Switch the link NAME back to what it pointed to before the last promote");
  a.add_common(a.rollback, false);
  a.rollback->add_option("NAME", a.rollback_name, "the link")->required();
  a.rollback->footer("Exit status: 0 switched back, 2 error (nothing to go back to).");

  a.snapshot = app.add_subcommand(
      "snapshot",
      "Write a contract that states what a known-good env is (torch build, triton, imports, "
      "activation, the host's image; pins on request), commented for review");
  a.flags.add_discovery(a.snapshot);
  a.flags.add_image(a.snapshot);
  a.snapshot->add_option("--env", a.env, "the env to snapshot (needed when several are found)");
  add_base_contract_option(a.snapshot, a.contract,
                           "a base contract: its devices and smoke checks are run in the env and "
                           "kept (device counts as observed)");
  a.snapshot->add_option("--name", a.snapshot_name,
                         "the new contract's name (default ENV-snapshot)");
  a.snapshot->add_flag("--pin", a.pin, "pin every distribution at the version installed");
  a.snapshot->add_option("--output-file", a.snapshot_output_file,
                         "write the contract to this file instead of stdout");
  a.snapshot->add_option("-o,--output,--format", a.snapshot_format,
                         "yaml, the one format it writes (-o FILE, its old spelling of "
                         "--output-file, still writes FILE, with a warning)");
  a.snapshot->footer("Exit status: 0 written, 2 error (no such env, incomplete facts).");
}

ProvisioningCli::~ProvisioningCli() = default;

std::optional<int> ProvisioningCli::run() {
  auto& a = *m_arguments;
  if (a.snapshot->parsed()) {
    const auto config = a.flags.over_defaults("snapshot", std::cerr);
    if (!config) {
      return 2;
    }
    SnapshotOptions options;
    const auto facts = host_facts_options(*config);
    options.discovery = facts.discovery;
    options.image = facts.image;
    options.env = a.env;
    options.base_contract = a.contract;
    options.name = a.snapshot_name;
    options.pin = a.pin;
    options.output = a.snapshot_output_file;
    if (const auto& format = a.snapshot_format; !format.empty() && format != "yaml") {
      // -o is a format everywhere; snapshot's -o FILE is its old spelling of --output-file.
      if (format == "table" || format == "json" || format == "junit" ||
          !a.snapshot_output_file.empty()) {
        std::cerr << "envcontractd snapshot: -o " << format
                  << " is not a format it writes; it writes yaml (the file: --output-file)\n";
        return 2;
      }
      std::cerr << "envcontractd snapshot: -o FILE is deprecated (-o is the output format of "
                   "every verb): write --output-file "
                << format << "\n";
      options.output = format;
    }
    return run_snapshot(options, std::cout, std::cerr);
  }
  for (auto* verb : a.verbs) {
    if (!verb->parsed()) {
      continue;
    }
    const auto options = a.options(verb);
    if (!options) {
      return 2;
    }
    if (verb == a.plan) {
      if (const auto problem = missing_directory(options->scan.facts.discovery); !problem.empty()) {
        std::cerr << "envcontractd plan: " << problem << "\n";
        return 2;
      }
      return run_plan(*options, a.env, std::cout, std::cerr);
    }
    if (verb == a.provision) {
      return run_provision_command(*options, a.name, a.apply, std::cout, std::cerr);
    }
    if (verb == a.promote) {
      return run_promote(*options, a.promote_env, a.promote_as, std::cout, std::cerr);
    }
    return run_rollback(*options, a.rollback_name, std::cout, std::cerr);
  }
  return std::nullopt;
}

}  // namespace envcontract::daemon
