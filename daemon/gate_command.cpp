#include "daemon/gate_command.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <ostream>
#include <random>
#include <sstream>

#include "common/shown_path.hpp"
#include "daemon/contract_source.hpp"
#include "daemon/scan_progress.hpp"
#include "probes/discovery.hpp"
#include "report/ci_output.hpp"
#include "report/junit.hpp"
#include "report/report_table.hpp"

namespace envcontract::daemon {

namespace {

namespace fs = std::filesystem;

constexpr const char* k_prefix = "envcontract gate: ";

// Every variable the gate reads from the job's environment.
constexpr const char* k_variables[] = {"GITHUB_ACTIONS",
                                       "GITHUB_STEP_SUMMARY",
                                       "GITHUB_WORKSPACE",
                                       "GITHUB_RUN_ID",
                                       "GITHUB_JOB",
                                       "GITLAB_CI",
                                       "CI_PROJECT_DIR",
                                       "CI_JOB_ID",
                                       "CONDA_PREFIX",
                                       "VIRTUAL_ENV",
                                       "ENVCONTRACT_PLATFORM",
                                       "ENVCONTRACT_RUNNER_LABELS",
                                       "ENVCONTRACT_GATE_BYPASS"};

std::string variable(const GateOptions& options, const std::string& name) {
  const auto it = options.variables.find(name);
  return it == options.variables.end() ? "" : it->second;
}

long long unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The contract inputs with what the job's environment adds to the flags.
GateContractInputs contract_inputs(const GateOptions& options) {
  GateContractInputs inputs = options.contract;
  if (inputs.workspace.empty()) {
    for (const char* name : {"GITHUB_WORKSPACE", "CI_PROJECT_DIR"}) {
      if (const std::string dir = variable(options, name); !dir.empty()) {
        inputs.workspace = dir;
        break;
      }
    }
  }
  if (inputs.workspace.empty()) {
    std::error_code error;
    inputs.workspace = fs::current_path(error);
  }
  if (inputs.platform.empty()) {
    inputs.platform = variable(options, "ENVCONTRACT_PLATFORM");
  }
  if (inputs.runner_labels.empty()) {
    std::istringstream labels(variable(options, "ENVCONTRACT_RUNNER_LABELS"));
    for (std::string label; std::getline(labels, label, ',');) {
      const auto first = label.find_first_not_of(" \t");
      const auto last = label.find_last_not_of(" \t");
      if (first != std::string::npos) {
        inputs.runner_labels.push_back(label.substr(first, last - first + 1));
      }
    }
  }
  return inputs;
}

struct ChosenEnvs {
  std::vector<fs::path> prefixes;  // empty: every env discovery finds
  std::string why;
};

// The env the job is about to use: --env (a prefix, or a name discovery
// knows), else the job shell's conda env or venv, else every env.
common::Result<ChosenEnvs> choose_envs(const GateOptions& options) {
  const std::string& wanted = options.env;
  if (!wanted.empty() && wanted.find('/') != std::string::npos) {
    std::error_code error;
    if (!fs::is_directory(wanted, error)) {
      return common::Error{"--env " + wanted + " is not a directory: name the env's prefix"};
    }
    return ChosenEnvs{{fs::absolute(wanted)}, "--env"};
  }
  if (!wanted.empty()) {
    const auto discovery = probes::discover_envs(options.settings.facts.discovery);
    std::vector<fs::path> named;
    std::string known;
    for (const auto& env : discovery.envs) {
      if (env.name == wanted) {
        named.push_back(env.prefix);
      }
      known += (known.empty() ? "" : ", ") + env.name;
    }
    if (named.size() != 1) {
      return common::Error{
          (named.empty() ? "no env is named " + wanted : "several envs are named " + wanted) +
          " (found: " + (known.empty() ? std::string("none") : known) +
          "); name it by its prefix (--env /path/to/env)"};
    }
    return ChosenEnvs{named, "--env " + wanted};
  }
  for (const char* name : {"CONDA_PREFIX", "VIRTUAL_ENV"}) {
    if (const std::string prefix = variable(options, name); !prefix.empty()) {
      std::error_code error;
      if (!fs::is_directory(prefix, error)) {
        return common::Error{std::string("the job's ") + name + " (" + prefix +
                             ") is not a directory: activate the env the job uses, or name it "
                             "(--env)"};
      }
      return ChosenEnvs{{prefix}, std::string("the job's ") + name};
    }
  }
  return ChosenEnvs{{}, "every env found"};
}

// A token no env can guess: between `::stop-commands::TOKEN` and `::TOKEN::`
// the runner takes no line for a workflow command, so nothing an env's
// strings put in the table can become one.
std::string stop_commands_token() {
  std::random_device random;
  std::string token = "envcontract-";
  for (int i = 0; i < 4; ++i) {
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(random()));
    token += hex;
  }
  return token;
}

void append_step_summary(const std::string& file, const std::string& markdown, std::ostream& err) {
  std::ofstream summary(file, std::ios::app);
  summary << markdown;
  summary.flush();
  if (!summary) {
    err << k_prefix << "cannot append the summary to " << file
        << " ($GITHUB_STEP_SUMMARY): the annotations above say the same\n";
  }
}

}  // namespace

std::map<std::string, std::string> gate_variables_from_environment() {
  std::map<std::string, std::string> variables;
  for (const char* name : k_variables) {
    if (const char* value = std::getenv(name); value != nullptr) {
      variables[name] = value;
    }
  }
  return variables;
}

int run_gate(const GateOptions& options, std::ostream& out, std::ostream& err) {
  const long long started = unix_now();
  const auto inputs = contract_inputs(options);
  const auto chosen = choose_gate_contract(inputs);
  if (!chosen) {
    err << k_prefix << chosen.error() << "\n";
    return 2;
  }
  err << k_prefix << "contract " << common::shown_path(chosen->file) << " (" << chosen->why
      << ")\n";
  auto loaded = load_contract(chosen->file, {}, inputs.workspace);
  if (!loaded) {
    err << loaded.error();
    return 2;
  }
  const auto envs = choose_envs(options);
  if (!envs) {
    err << k_prefix << envs.error() << "\n";
    return 2;
  }
  ScanSettings settings = options.settings;
  if (!envs->prefixes.empty()) {
    settings.facts.discovery.roots.clear();
    settings.facts.discovery.prefixes = envs->prefixes;
  }
  err << k_prefix << "env: " << envs->why
      << (envs->prefixes.empty() ? "" : " " + common::shown_path(envs->prefixes.front())) << "\n";

  Scanner scanner;
  const auto report = scan_with_progress(scanner, *loaded.value(), settings, false, err);
  const auto decision = report::gate_decision(report);
  std::string bypass = options.bypass;
  if (bypass.empty()) {
    bypass = variable(options, "ENVCONTRACT_GATE_BYPASS");
  }

  const std::string table = report::render_table(report, {true, false});
  if (variable(options, "GITHUB_ACTIONS") == "true") {
    const std::string token = stop_commands_token();
    out << report::github_annotations(report, decision, bypass) << "::stop-commands::" << token
        << "\n"
        << table << "::" << token << "::\n";
    if (const std::string file = variable(options, "GITHUB_STEP_SUMMARY"); !file.empty()) {
      append_step_summary(file, report::markdown_summary(report, decision, bypass), err);
    }
  } else if (variable(options, "GITLAB_CI") == "true") {
    out << k_prefix << decision.why << "\n"
        << report::gitlab_section("envcontract_gate", "envcontract: the env's checks", table,
                                  started, unix_now());
  } else {
    out << table << k_prefix << decision.why << "\n";
  }
  if (!options.junit.empty()) {
    std::ofstream junit(options.junit);
    junit << report::junit_xml({{report.value("host", std::string("localhost")), &report, ""}});
    if (!junit.flush()) {
      err << k_prefix << "cannot write " << options.junit.string() << "\n";
    }
  }
  if (decision.outcome != report::GateDecision::Outcome::go && !bypass.empty()) {
    err << k_prefix << "BYPASSED: the job starts although " << decision.why << " (" << bypass
        << ")\n";
    return 0;
  }
  err << k_prefix
      << (decision.outcome == report::GateDecision::Outcome::go ? "go" : "the job is stopped")
      << "\n";
  return decision.exit_code();
}

}  // namespace envcontract::daemon
