#include "report/report.hpp"

#include "contracts/env_facts.hpp"

namespace envcontract::report {
namespace {

using contracts::array_field;
using contracts::string_field;

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

// The target envs run under: the one whose image the host runs, else the first.
Json env_target(const contracts::HostJudgement& judgement) {
  for (const auto& target : judgement.targets) {
    if (target.check.status == contracts::CheckStatus::pass) {
      return target.name;
    }
  }
  return judgement.targets.empty() ? Json(nullptr) : Json(judgement.targets.front().name);
}

const Json* find_env_facts(const Json& host_facts, const std::string& name) {
  for (const auto& env : array_field(host_facts, "envs")) {
    if (string_field(env, "name") == name) {
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

Json build_report(const ContractIdentity& contract, const contracts::HostJudgement& judgement,
                  const Json& host_facts, double duration_ms) {
  Json report;
  report["schema_version"] = schema_version;
  report["host"] = string_field(host_facts, "host");
  report["scanned_at"] = string_field(host_facts, "gathered_at");
  report["duration_ms"] = duration_ms;
  report["contract"] = {
      {"name", contract.name}, {"path", contract.path}, {"sha256", contract.sha256}};
  report["verdict"] = contracts::to_string(judgement.verdict);
  report["reasons"] = judgement.reasons;
  report["compliant_envs"] = judgement.compliant_envs;
  const Json& image = host_facts.is_object() && host_facts.contains("image")
                          ? host_facts.at("image")
                          : Json::object();
  report["image"] = {{"value", string_field(image, "value")},
                     {"source", string_field(image, "source")},
                     {"problem", string_field(image, "problem")}};

  auto targets = Json::array();
  for (const auto& target : judgement.targets) {
    targets.push_back(
        {{"name", target.name}, {"image", target.image}, {"checks", checks_json({target.check})}});
  }
  report["targets"] = std::move(targets);

  const Json target = env_target(judgement);
  auto envs = Json::array();
  for (const auto& env : judgement.envs) {
    const Json* facts = find_env_facts(host_facts, env.name);
    Json entry = {
        {"name", env.name},
        {"prefix", facts != nullptr ? string_field(*facts, "prefix") : ""},
        {"kind", facts != nullptr ? string_field(*facts, "kind") : ""},
        {"python_version", facts != nullptr ? string_field(*facts, "python_version") : ""},
        {"target", target},
        {"probed_at",
         facts != nullptr && facts->contains("probed_at") ? facts->at("probed_at") : Json(nullptr)},
        {"verdict", contracts::to_string(env.judgement.verdict)},
        {"checks", checks_json(env.judgement.checks)}};
    entry["summary"] = env_summary(entry);
    if (facts != nullptr && facts->contains("run_as") && facts->at("run_as").is_object()) {
      const Json& run_as = facts->at("run_as");
      const Json uid = run_as.value("uid", Json(0));
      entry["run_as"] = {{"user", string_field(run_as, "user")},
                         {"uid", uid.is_number_unsigned() ? uid : Json(0)},
                         {"reason", string_field(run_as, "reason")},
                         {"as_root", uid.is_number() && uid.get<long long>() == 0}};
    }
    envs.push_back(std::move(entry));
  }
  report["envs"] = std::move(envs);
  auto problems = Json::array();
  for (const auto& problem : array_field(host_facts, "problems")) {
    problems.push_back(
        {{"path", string_field(problem, "path")}, {"problem", string_field(problem, "problem")}});
  }
  report["problems"] = std::move(problems);
  return report;
}

int exit_status(const Json& report) {
  const std::string verdict = string_field(report, "verdict");
  return verdict == "compliant" ? 0 : verdict == "drift" ? 1 : 2;
}

}  // namespace envcontract::report
