#include "report/report.hpp"

#include <algorithm>

#include "common/shown_values.hpp"

namespace envcontract::report {
namespace {

std::vector<CheckReport> checks_of(const std::vector<contracts::CheckResult>& checks) {
  std::vector<CheckReport> reports;
  reports.reserve(checks.size());
  for (const auto& check : checks) {
    CheckReport report;
    static_cast<contracts::CheckResult&>(report) = check;
    reports.push_back(std::move(report));
  }
  return reports;
}

// The target envs run under: the one whose image their machine (the host,
// or their container) runs, else the first.
std::optional<std::string> env_target(const std::vector<contracts::TargetJudgement>& targets) {
  for (const auto& target : targets) {
    if (target.check.status == contracts::CheckStatus::pass) {
      return target.name;
    }
  }
  return targets.empty() ? std::nullopt : std::optional<std::string>(targets.front().name);
}

std::vector<TargetReport> targets_of(const std::vector<contracts::TargetJudgement>& judged) {
  std::vector<TargetReport> targets;
  for (const auto& target : judged) {
    targets.push_back({target.name, target.image, checks_of({target.check})});
  }
  return targets;
}

// Each container target: where it is read, how its envs run, its image and
// how that image is judged, and its envs.
std::vector<ContainerReport> containers_of(const contracts::HostJudgement& judgement,
                                           const facts::HostFacts& host_facts) {
  std::vector<ContainerReport> containers;
  for (const auto& container : host_facts.containers) {
    const auto judged = std::find_if(judgement.containers.begin(), judgement.containers.end(),
                                     [&](const auto& each) { return each.name == container.name; });
    ContainerReport report;
    report.name = container.name;
    report.root = container.root;
    report.exec = container.exec;
    report.image = container.image;
    if (!container.problem.empty()) {
      report.problem = container.problem;
    }
    if (judged != judgement.containers.end()) {
      report.targets = targets_of(judged->targets);
    }
    for (const auto& env : host_facts.envs) {
      if (!env.env.exec.empty() && env.env.exec.target == container.name) {
        report.envs.push_back(env.env.name);
      }
    }
    containers.push_back(std::move(report));
  }
  return containers;
}

const facts::EnvFacts* find_env_facts(const facts::HostFacts& host_facts, const std::string& name) {
  for (const auto& env : host_facts.envs) {
    if (env.env.name == name) {
      return &env;
    }
  }
  return nullptr;
}

// What activation changes, bounded: the scripts are the env's, and a value
// can be as long as they make it.
ActivationReport activation_of(const facts::ActivatedEnvironment& activation) {
  constexpr std::size_t k_most_changes = 64;
  constexpr std::size_t k_most_value_bytes = 4096;
  const auto value = [&](const facts::Environment& environment,
                         const std::string& name) -> std::optional<std::string> {
    const auto found = environment.find(name);
    if (found == environment.end()) {
      return std::nullopt;
    }
    // Only where things are found is shown (common/shown_values.hpp).
    const std::string shown = common::shown_variable_value(name, found->second);
    return shown.size() <= k_most_value_bytes ? shown
                                              : shown.substr(0, k_most_value_bytes) + "... (" +
                                                    std::to_string(shown.size()) + " bytes)";
  };
  ActivationReport report;
  for (const auto& script : activation.scripts) {
    report.scripts.push_back(script.string());
  }
  const auto changes = facts::environment_changes(activation.bare, activation.activated);
  for (std::size_t i = 0; i < changes.size() && i < k_most_changes; ++i) {
    const auto& name = changes[i].name;
    // A name is the env's too, and bash takes one of any length.
    constexpr std::size_t k_most_name_bytes = 256;
    report.changes.push_back({name.size() <= k_most_name_bytes
                                  ? name
                                  : name.substr(0, k_most_name_bytes) + "... (" +
                                        std::to_string(name.size()) + " bytes)",
                              value(activation.bare, name), value(activation.activated, name)});
  }
  report.more_changes = changes.size() - report.changes.size();
  report.problem = activation.problem;
  return report;
}

EnvReport env_report(const contracts::NamedEnvJudgement& env, const facts::EnvFacts* facts,
                     const contracts::HostJudgement& judgement,
                     const std::optional<std::string>& host_target) {
  EnvReport report;
  report.name = env.name;
  report.target = host_target;
  report.verdict = env.judgement.verdict;
  report.checks = checks_of(env.judgement.checks);
  report.summary = env_summary(report);
  if (facts == nullptr) {
    return report;
  }
  report.prefix = facts->env.prefix.string();
  report.kind = to_string(facts->env.kind);
  report.python_version = facts->env.python_version;
  if (!facts->env.exec.empty()) {
    report.container = facts->env.exec.target;
    for (const auto& container : judgement.containers) {
      if (container.name == facts->env.exec.target) {
        report.target = env_target(container.targets);
      }
    }
  }
  if (facts->dynamic) {
    report.probed_at = facts->probed_at;
  }
  const auto& run_as = facts->env.run_as;
  report.run_as = RunAsReport{run_as.user, static_cast<std::int64_t>(run_as.uid), run_as.reason,
                              run_as.uid == 0 && run_as.problem.empty()};
  report.activation = activation_of(facts->activation);
  return report;
}

}  // namespace

const contracts::Diagnosis& diagnosis_of(const contracts::CheckResult& check) {
  static const contracts::Diagnosis none;
  return check.diagnosis ? *check.diagnosis : none;
}

std::string env_summary(const EnvReport& env) {
  std::string first;
  std::size_t more = 0;
  for (const auto& check : env.checks) {
    if ((check.status != contracts::CheckStatus::fail &&
         check.status != contracts::CheckStatus::error) ||
        check.severity != contracts::Severity::required) {
      continue;
    }
    if (first.empty()) {
      first = check.id + ": " + (check.diagnosis ? check.diagnosis->summary : "");
    } else {
      ++more;
    }
  }
  if (first.empty()) {
    return env.verdict == contracts::EnvVerdict::compliant ? "complies" : "";
  }
  return more == 0 ? first : first + " (and " + std::to_string(more) + " more)";
}

Report build_report(const ContractIdentity& contract, const contracts::HostJudgement& judgement,
                    const facts::HostFacts& host_facts, double duration_ms) {
  Report report;
  report.host = host_facts.host;
  report.scanned_at = host_facts.gathered_at;
  report.duration_ms = duration_ms;
  report.contract = contract;
  report.verdict = host_verdict(judgement.verdict);
  report.reasons = judgement.reasons;
  report.compliant_envs = judgement.compliant_envs;
  report.image = host_facts.image;
  report.targets = targets_of(judgement.targets);
  report.containers = containers_of(judgement, host_facts);
  const auto host_target = env_target(judgement.targets);
  for (const auto& env : judgement.envs) {
    report.envs.push_back(
        env_report(env, find_env_facts(host_facts, env.name), judgement, host_target));
  }
  for (const auto& problem : host_facts.problems) {
    report.problems.push_back({problem.path.string(), problem.problem});
  }
  return report;
}

int exit_status(const Report& report) {
  return report.verdict == Verdict::compliant ? 0 : report.verdict == Verdict::drift ? 1 : 2;
}

}  // namespace envcontract::report
