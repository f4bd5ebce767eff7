#include "daemon/transitions.hpp"

#include <map>
#include <set>

#include "common/json_fields.hpp"

namespace envcontract::daemon {
namespace {

using common::array_field;
using common::string_field;
using report::Json;

bool complies(const std::string& verdict) {
  return verdict == "compliant";
}

Json verdict_or_null(const std::string& verdict) {
  return verdict.empty() ? Json(nullptr) : Json(verdict);
}

const Json& diagnosis_of(const Json& check) {
  static const Json none = Json::object();
  const auto found = check.find("diagnosis");
  return found != check.end() && found->is_object() ? *found : none;
}

std::map<std::string, const Json*> envs_by_name(const Json& report) {
  std::map<std::string, const Json*> envs;
  for (const auto& env : array_field(report, "envs")) {
    envs.emplace(string_field(env, "name"), &env);
  }
  return envs;
}

// The failing checks of an env, as a receiver needs them to act.
Json failing_checks(const Json& env) {
  auto failing = Json::array();
  for (const auto& check : array_field(env, "checks")) {
    const std::string status = string_field(check, "status");
    if (status != "fail" && status != "error") {
      continue;
    }
    const auto& diagnosis = diagnosis_of(check);
    failing.push_back({{"check", string_field(check, "id")},
                       {"status", status},
                       {"cause", string_field(diagnosis, "cause")},
                       {"summary", string_field(diagnosis, "summary")}});
  }
  return failing;
}

std::set<std::string> hanging_checks(const Json* env) {
  std::set<std::string> hanging;
  if (env == nullptr) {
    return hanging;
  }
  for (const auto& check : array_field(*env, "checks")) {
    const auto& diagnosis = diagnosis_of(check);
    if (string_field(diagnosis, "cause") == "hang") {
      hanging.insert(string_field(check, "id"));
    }
  }
  return hanging;
}

}  // namespace

Json transitions(const Json* previous, const Json& current) {
  auto events = Json::array();
  const std::string before = previous ? string_field(*previous, "verdict") : "";
  const std::string now = string_field(current, "verdict");
  if (previous == nullptr || complies(before) != complies(now)) {
    events.push_back({{"kind", "host"}, {"from", verdict_or_null(before)}, {"to", now}});
  }
  const auto old_envs = previous ? envs_by_name(*previous) : std::map<std::string, const Json*>{};
  const auto new_envs = envs_by_name(current);
  for (const auto& [name, env] : new_envs) {
    const auto old = old_envs.find(name);
    const Json* old_env = old == old_envs.end() ? nullptr : old->second;
    const std::string was = old_env ? string_field(*old_env, "verdict") : "";
    const std::string is = string_field(*env, "verdict");
    if (old_env == nullptr || complies(was) != complies(is)) {
      Json event = {{"kind", "env"}, {"env", name}, {"from", verdict_or_null(was)}, {"to", is}};
      if (!complies(is)) {
        event["failing"] = failing_checks(*env);
      }
      events.push_back(std::move(event));
    }
    const auto hung_before = hanging_checks(old_env);
    for (const auto& check : array_field(*env, "checks")) {
      const auto& diagnosis = diagnosis_of(check);
      const std::string id = string_field(check, "id");
      if (string_field(diagnosis, "cause") == "hang" && !hung_before.contains(id)) {
        events.push_back({{"kind", "hang"},
                          {"env", name},
                          {"check", id},
                          {"summary", string_field(diagnosis, "summary")}});
      }
    }
  }
  for (const auto& [name, env] : old_envs) {
    if (!new_envs.contains(name)) {
      events.push_back({{"kind", "env"},
                        {"env", name},
                        {"from", string_field(*env, "verdict")},
                        {"to", nullptr}});
    }
  }
  return events;
}

}  // namespace envcontract::daemon
