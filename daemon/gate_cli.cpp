#include "daemon/gate_cli.hpp"

#include <iostream>

#include <CLI/CLI.hpp>

#include "daemon/gate_command.hpp"
#include "daemon/shared_flags.hpp"

namespace envcontract::daemon {

struct GateCli::Arguments {
  CLI::App* verb = nullptr;
  ScanFlags flags;
  std::string contract;
  std::string platform;
  std::vector<std::string> runner_labels;
  std::string workspace;
  std::string env;
  std::string bypass;
  std::string junit;
  std::string agent;
};

GateCli::GateCli(CLI::App& app) : m_arguments(std::make_unique<Arguments>()) {
  auto& arguments = *m_arguments;
  auto* verb = app.add_subcommand(
      "gate",
      "A CI job's first step: judge the env the job is about to use against the contract the "
      "job brings, and stop the job when it breaks it");
  arguments.verb = verb;
  verb->add_option("--contract", arguments.contract,
                   "the contract: a file, or auto (detected from this host's devices and tools); "
                   "default: the job's platform config in the workspace");
  verb->add_option("--platform", arguments.platform,
                   "the platform whose config .github/configs/PLATFORM.yml of the workspace is "
                   "the contract (default: $ENVCONTRACT_PLATFORM)");
  verb->add_option("--runner-label", arguments.runner_labels,
                   "a label of the runner (repeatable; default: $ENVCONTRACT_RUNNER_LABELS, "
                   "comma-separated): the platform config whose runner_labels it has");
  verb->add_option("--workspace", arguments.workspace,
                   "the job's checkout (default: $GITHUB_WORKSPACE, $CI_PROJECT_DIR, or here)")
      ->check(CLI::ExistingDirectory);
  verb->add_option("--env", arguments.env,
                   "the env the job uses: its prefix or name (default: the job shell's "
                   "$CONDA_PREFIX or $VIRTUAL_ENV, else every env found)");
  verb->add_option("--bypass", arguments.bypass,
                   "let the job start whatever the verdict, for this reason, which the output "
                   "shows (default: $ENVCONTRACT_GATE_BYPASS)");
  verb->add_option("--junit", arguments.junit,
                   "also write the report as JUnit XML to this file (GitLab's "
                   "artifacts:reports:junit)");
  verb->add_option("--agent", arguments.agent,
                   "the local agent asked for the verdict, HOST:PORT on loopback, or none "
                   "(default: $ENVCONTRACT_AGENT, else 127.0.0.1:9714); with no agent there, "
                   "the gate judges the env itself");
  arguments.flags.add_contract_detection(verb);
  arguments.flags.add_discovery(verb);
  arguments.flags.add_image(verb);
  verb->footer(
      "On GitHub Actions (GITHUB_ACTIONS=true) each failing check is an ::error annotation and "
      "a table goes to $GITHUB_STEP_SUMMARY; on GitLab CI the checks are a collapsed section.\n"
      "Exit status: 0 go, 1 the env breaks the contract, 2 cannot tell (no contract, no env, "
      "a check that could not be judged).");
}

GateCli::~GateCli() = default;

std::optional<int> GateCli::run() {
  const auto& arguments = *m_arguments;
  if (!arguments.verb->parsed()) {
    return std::nullopt;
  }
  const auto config = arguments.flags.over_defaults("gate", std::cerr);
  if (!config) {
    return 2;
  }
  GateOptions options;
  options.contract.contract = arguments.contract;
  options.contract.platform = arguments.platform;
  options.contract.runner_labels = arguments.runner_labels;
  if (!arguments.workspace.empty()) {
    options.contract.workspace = std::filesystem::absolute(arguments.workspace);
  }
  options.contract.contracts_dir = config->contracts_dir;
  options.contract.detect_root = config->detect_root;
  options.env = arguments.env;
  options.bypass = arguments.bypass;
  options.junit = arguments.junit;
  options.settings.facts = host_facts_options(*config);
  options.agent = arguments.agent;
  const auto& flags = arguments.flags;
  if (!flags.roots.empty() || !flags.prefixes.empty() || !flags.run_root_envs_as.empty()) {
    options.own_judgement_because = "--root, --prefix or --run-root-envs-as is the gate's own";
  } else if (!flags.image_tag_file.empty() || !flags.image_tag_env.empty() ||
             !flags.image_tag_command.empty()) {
    options.own_judgement_because = "the job's image is named by the gate's --image-tag-*";
  }
  options.variables = gate_variables_from_environment();
  return run_gate(options, std::cout, std::cerr);
}

}  // namespace envcontract::daemon
