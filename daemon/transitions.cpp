#include "daemon/transitions.hpp"

#include <map>
#include <set>

namespace envcontract::daemon {
namespace {

using contracts::CheckStatus;
using contracts::EnvVerdict;
using report::Json;

Json verdict_json(const std::optional<std::string>& verdict) {
  return verdict ? Json(*verdict) : Json(nullptr);
}

std::map<std::string, const report::EnvReport*> envs_by_name(const report::Report& report) {
  std::map<std::string, const report::EnvReport*> envs;
  for (const auto& env : report.envs) {
    envs.emplace(env.name, &env);
  }
  return envs;
}

bool is_hang(const report::CheckReport& check) {
  return check.diagnosis && check.diagnosis->cause == "hang";
}

// The failing checks of an env, as a receiver needs them to act.
Json failing_checks(const report::EnvReport& env) {
  auto failing = Json::array();
  for (const auto& check : env.checks) {
    if (check.status != CheckStatus::fail && check.status != CheckStatus::error) {
      continue;
    }
    const auto& diagnosis = report::diagnosis_of(check);
    failing.push_back({{"check", check.id},
                       {"status", contracts::to_string(check.status)},
                       {"cause", diagnosis.cause},
                       {"summary", diagnosis.summary}});
  }
  return failing;
}

std::set<std::string> hanging_checks(const report::EnvReport* env) {
  std::set<std::string> hanging;
  if (env == nullptr) {
    return hanging;
  }
  for (const auto& check : env->checks) {
    if (is_hang(check)) {
      hanging.insert(check.id);
    }
  }
  return hanging;
}

}  // namespace

Json transitions(const report::Report* previous, const report::Report& current) {
  auto events = Json::array();
  const auto complies = [](report::Verdict verdict) {
    return verdict == report::Verdict::compliant;
  };
  if (previous == nullptr || complies(previous->verdict) != complies(current.verdict)) {
    events.push_back({{"kind", "host"},
                      {"from", previous ? Json(to_string(previous->verdict)) : Json(nullptr)},
                      {"to", to_string(current.verdict)}});
  }
  const auto old_envs =
      previous ? envs_by_name(*previous) : std::map<std::string, const report::EnvReport*>{};
  const auto new_envs = envs_by_name(current);
  for (const auto& [name, env] : new_envs) {
    const auto old = old_envs.find(name);
    const report::EnvReport* old_env = old == old_envs.end() ? nullptr : old->second;
    const bool complies_now = env->verdict == EnvVerdict::compliant;
    if (old_env == nullptr || (old_env->verdict == EnvVerdict::compliant) != complies_now) {
      Json event = {
          {"kind", "env"},
          {"env", name},
          {"from", verdict_json(old_env ? std::optional(contracts::to_string(old_env->verdict))
                                        : std::nullopt)},
          {"to", contracts::to_string(env->verdict)}};
      if (!complies_now) {
        event["failing"] = failing_checks(*env);
      }
      events.push_back(std::move(event));
    }
    const auto hung_before = hanging_checks(old_env);
    for (const auto& check : env->checks) {
      if (is_hang(check) && !hung_before.contains(check.id)) {
        events.push_back({{"kind", "hang"},
                          {"env", name},
                          {"check", check.id},
                          {"summary", check.diagnosis->summary}});
      }
    }
  }
  for (const auto& [name, env] : old_envs) {
    if (!new_envs.contains(name)) {
      events.push_back({{"kind", "env"},
                        {"env", name},
                        {"from", contracts::to_string(env->verdict)},
                        {"to", nullptr}});
    }
  }
  return events;
}

}  // namespace envcontract::daemon
