#include "report/report.hpp"

#include <algorithm>

#include "common/json_fields.hpp"
#include "common/shown_values.hpp"

namespace envcontract::report {
namespace {

using common::array_field;
using common::string_field;

Json checks_json(const std::vector<contracts::CheckResult>& checks) {
  auto json = Json::array();
  for (const auto& check : checks) {
    auto entry = contracts::to_json(check);
    entry["since"] = nullptr;
    entry["flapping"] = false;
    json.push_back(std::move(entry));
  }
  return json;
}

// The target envs run under: the one whose image their machine (the host,
// or their container) runs, else the first.
Json env_target(const std::vector<contracts::TargetJudgement>& targets) {
  for (const auto& target : targets) {
    if (target.check.status == contracts::CheckStatus::pass) {
      return target.name;
    }
  }
  return targets.empty() ? Json(nullptr) : Json(targets.front().name);
}

Json targets_json(const std::vector<contracts::TargetJudgement>& judged) {
  auto targets = Json::array();
  for (const auto& target : judged) {
    targets.push_back(
        {{"name", target.name}, {"image", target.image}, {"checks", checks_json({target.check})}});
  }
  return targets;
}

// Each container target: where it is read, how its envs run, its image and
// how that image is judged, and its envs.
Json containers_json(const contracts::HostJudgement& judgement,
                     const facts::HostFacts& host_facts) {
  auto containers = Json::array();
  for (const auto& container : host_facts.containers) {
    const auto judged = std::find_if(judgement.containers.begin(), judgement.containers.end(),
                                     [&](const auto& each) { return each.name == container.name; });
    auto envs = Json::array();
    for (const auto& env : host_facts.envs) {
      if (!env.env.exec.empty() && env.env.exec.target == container.name) {
        envs.push_back(env.env.name);
      }
    }
    containers.push_back(
        {{"name", container.name},
         {"root", container.root},
         {"exec", container.exec},
         {"image", to_json(container.image)},
         {"problem", container.problem.empty() ? Json(nullptr) : Json(container.problem)},
         {"targets",
          judged == judgement.containers.end() ? Json::array() : targets_json(judged->targets)},
         {"envs", std::move(envs)}});
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

}  // namespace

std::string env_summary(const Json& env) {
  std::string first;
  std::size_t more = 0;
  for (const auto& check : array_field(env, "checks")) {
    const std::string status = string_field(check, "status");
    if ((status != "fail" && status != "error") || string_field(check, "severity") != "required") {
      continue;
    }
    if (first.empty()) {
      const auto& diagnosis = check.contains("diagnosis") ? check.at("diagnosis") : Json();
      first = string_field(check, "id") + ": " + string_field(diagnosis, "summary");
    } else {
      ++more;
    }
  }
  if (first.empty()) {
    return string_field(env, "verdict") == "compliant" ? "complies" : "";
  }
  return more == 0 ? first : first + " (and " + std::to_string(more) + " more)";
}

namespace {

// What activation changes, bounded: the scripts are the env's, and a value
// can be as long as they make it.
Json activation_json(const facts::ActivatedEnvironment& activation) {
  constexpr std::size_t k_most_changes = 64;
  constexpr std::size_t k_most_value_bytes = 4096;
  const auto value = [&](const facts::Environment& environment, const std::string& name) {
    const auto found = environment.find(name);
    if (found == environment.end()) {
      return Json(nullptr);
    }
    // Only where things are found is shown (common/shown_values.hpp).
    const std::string shown = common::shown_variable_value(name, found->second);
    return Json(shown.size() <= k_most_value_bytes ? shown
                                                   : shown.substr(0, k_most_value_bytes) + "... (" +
                                                         std::to_string(shown.size()) + " bytes)");
  };
  auto scripts = Json::array();
  for (const auto& script : activation.scripts) {
    scripts.push_back(script.string());
  }
  const auto changes = facts::environment_changes(activation.bare, activation.activated);
  auto listed = Json::array();
  for (std::size_t i = 0; i < changes.size() && i < k_most_changes; ++i) {
    const auto& name = changes[i].name;
    // A name is the env's too, and bash takes one of any length.
    constexpr std::size_t k_most_name_bytes = 256;
    listed.push_back(
        {{"name", name.size() <= k_most_name_bytes ? name
                                                   : name.substr(0, k_most_name_bytes) + "... (" +
                                                         std::to_string(name.size()) + " bytes)"},
         {"bare", value(activation.bare, name)},
         {"activated", value(activation.activated, name)}});
  }
  const std::size_t more = changes.size() - listed.size();
  return {{"scripts", std::move(scripts)},
          {"changes", std::move(listed)},
          {"more_changes", more},
          {"problem", activation.problem}};
}

}  // namespace

Json build_report(const ContractIdentity& contract, const contracts::HostJudgement& judgement,
                  const facts::HostFacts& host_facts, double duration_ms) {
  Json report;
  report["schema_version"] = schema_version;
  report["host"] = host_facts.host;
  report["scanned_at"] = host_facts.gathered_at;
  report["duration_ms"] = duration_ms;
  report["contract"] = {
      {"name", contract.name}, {"path", contract.path}, {"sha256", contract.sha256}};
  if (!contract.platform.empty()) {
    report["contract"]["platform"] = contract.platform;
  }
  report["verdict"] = contracts::to_string(judgement.verdict);
  report["reasons"] = judgement.reasons;
  report["compliant_envs"] = judgement.compliant_envs;
  report["image"] = to_json(host_facts.image);

  report["targets"] = targets_json(judgement.targets);
  report["containers"] = containers_json(judgement, host_facts);

  const Json host_target = env_target(judgement.targets);
  auto envs = Json::array();
  for (const auto& env : judgement.envs) {
    const facts::EnvFacts* facts = find_env_facts(host_facts, env.name);
    const bool contained = facts != nullptr && !facts->env.exec.empty();
    Json target = host_target;
    if (contained) {
      for (const auto& container : judgement.containers) {
        if (container.name == facts->env.exec.target) {
          target = env_target(container.targets);
        }
      }
    }
    Json entry = {
        {"name", env.name},
        {"prefix", facts != nullptr ? facts->env.prefix.string() : ""},
        {"kind", facts != nullptr ? to_string(facts->env.kind) : ""},
        {"python_version", facts != nullptr ? facts->env.python_version : ""},
        {"target", target},
        {"container", contained ? Json(facts->env.exec.target) : Json(nullptr)},
        {"probed_at", facts != nullptr && facts->dynamic ? Json(facts->probed_at) : Json(nullptr)},
        {"verdict", contracts::to_string(env.judgement.verdict)},
        {"checks", checks_json(env.judgement.checks)}};
    entry["summary"] = env_summary(entry);
    if (facts != nullptr) {
      const auto& run_as = facts->env.run_as;
      entry["run_as"] = {{"user", run_as.user},
                         {"uid", run_as.uid},
                         {"reason", run_as.reason},
                         {"as_root", run_as.uid == 0 && run_as.problem.empty()}};
      entry["activation"] = activation_json(facts->activation);
    }
    envs.push_back(std::move(entry));
  }
  report["envs"] = std::move(envs);
  auto problems = Json::array();
  for (const auto& problem : host_facts.problems) {
    problems.push_back({{"path", problem.path.string()}, {"problem", problem.problem}});
  }
  report["problems"] = std::move(problems);
  return report;
}

int exit_status(const Json& report) {
  const std::string verdict = string_field(report, "verdict");
  return verdict == "compliant" ? 0 : verdict == "drift" ? 1 : 2;
}

}  // namespace envcontract::report
