#include "report/report_json.hpp"

#include <limits>

#include "common/json_fields.hpp"
#include "report/printable.hpp"

namespace envcontract::report {
namespace {

using common::array_field;
using common::field;
using common::object_field;
using common::string_field;

Json optional_text(const std::optional<std::string>& text) {
  return text ? Json(*text) : Json(nullptr);
}

Json strings_json(const std::vector<std::string>& strings) {
  auto json = Json::array();
  for (const auto& text : strings) {
    json.push_back(text);
  }
  return json;
}

Json checks_json(const std::vector<CheckReport>& checks) {
  auto json = Json::array();
  for (const auto& check : checks) {
    json.push_back(to_json(check));
  }
  return json;
}

Json targets_json(const std::vector<TargetReport>& targets) {
  auto json = Json::array();
  for (const auto& target : targets) {
    json.push_back(
        {{"name", target.name}, {"image", target.image}, {"checks", checks_json(target.checks)}});
  }
  return json;
}

Json containers_json(const std::vector<ContainerReport>& containers) {
  auto json = Json::array();
  for (const auto& container : containers) {
    json.push_back({{"name", container.name},
                    {"root", container.root},
                    {"exec", strings_json(container.exec)},
                    {"image", facts::to_json(container.image)},
                    {"problem", optional_text(container.problem)},
                    {"targets", targets_json(container.targets)},
                    {"envs", strings_json(container.envs)}});
  }
  return json;
}

Json activation_json(const ActivationReport& activation) {
  auto changes = Json::array();
  for (const auto& change : activation.changes) {
    changes.push_back({{"name", change.name},
                       {"bare", optional_text(change.bare)},
                       {"activated", optional_text(change.activated)}});
  }
  return {{"scripts", strings_json(activation.scripts)},
          {"changes", std::move(changes)},
          {"more_changes", activation.more_changes},
          {"problem", activation.problem}};
}

// Readers: each takes what is there and leaves the default for the rest.

std::optional<std::string> optional_string_field(const Json& object, const char* key) {
  const Json& value = field(object, key);
  return value.is_string() ? std::optional<std::string>(value.get<std::string>()) : std::nullopt;
}

std::vector<std::string> strings_field(const Json& object, const char* key) {
  std::vector<std::string> strings;
  for (const auto& item : array_field(object, key)) {
    if (item.is_string()) {
      strings.push_back(item.get<std::string>());
    }
  }
  return strings;
}

template <typename Integer>
std::optional<Integer> integer_field(const Json& object, const char* key) {
  const Json& value = field(object, key);
  if (value.is_number_unsigned()) {
    const auto number = value.get<std::uint64_t>();
    if (number <= static_cast<std::uint64_t>(std::numeric_limits<Integer>::max())) {
      return static_cast<Integer>(number);
    }
  } else if (value.is_number_integer()) {
    const auto number = value.get<std::int64_t>();
    if (number >= static_cast<std::int64_t>(std::numeric_limits<Integer>::min()) &&
        (number < 0 || static_cast<std::uint64_t>(number) <=
                           static_cast<std::uint64_t>(std::numeric_limits<Integer>::max()))) {
      return static_cast<Integer>(number);
    }
  }
  return std::nullopt;
}

contracts::EnvVerdict env_verdict_from(const Json& object) {
  const std::string text = string_field(object, "verdict");
  return text == "compliant" ? contracts::EnvVerdict::compliant
         : text == "drift"   ? contracts::EnvVerdict::drift
                             : contracts::EnvVerdict::error;
}

contracts::CheckStatus status_from(const Json& check) {
  using contracts::CheckStatus;
  const std::string text = string_field(check, "status");
  for (const auto status :
       {CheckStatus::pass, CheckStatus::fail, CheckStatus::skip, CheckStatus::waived}) {
    if (text == contracts::to_string(status)) {
      return status;
    }
  }
  return CheckStatus::error;
}

contracts::Diagnosis diagnosis_from(const Json& json) {
  const Json& evidence = field(json, "evidence");
  return {string_field(json, "cause"), string_field(json, "summary"),
          evidence.is_null() ? Json::object() : evidence, string_field(json, "remedy")};
}

CheckReport check_from(const Json& json) {
  CheckReport check;
  check.id = string_field(json, "id");
  check.kind = string_field(json, "kind");
  check.severity = string_field(json, "severity") == "advisory" ? contracts::Severity::advisory
                                                                : contracts::Severity::required;
  check.status = status_from(json);
  check.expected = field(json, "expected");
  check.actual = field(json, "actual");
  if (const Json& diagnosis = field(json, "diagnosis"); diagnosis.is_object()) {
    check.diagnosis = diagnosis_from(diagnosis);
  }
  for (const auto& note : array_field(json, "notes")) {
    if (note.is_object()) {
      check.notes.push_back(diagnosis_from(note));
    }
  }
  check.since = optional_string_field(json, "since");
  check.flapping = field(json, "flapping") == true;
  return check;
}

std::vector<CheckReport> checks_from(const Json& object) {
  std::vector<CheckReport> checks;
  for (const auto& check : array_field(object, "checks")) {
    if (check.is_object()) {
      checks.push_back(check_from(check));
    }
  }
  return checks;
}

facts::ImageTag image_from(const Json& json) {
  return {string_field(json, "value"), string_field(json, "source"), string_field(json, "problem")};
}

std::vector<TargetReport> targets_from(const Json& object) {
  std::vector<TargetReport> targets;
  for (const auto& target : array_field(object, "targets")) {
    if (!target.is_object()) {
      continue;
    }
    targets.push_back(
        {string_field(target, "name"), string_field(target, "image"), checks_from(target)});
  }
  return targets;
}

ContainerReport container_from(const Json& json) {
  ContainerReport container;
  container.name = string_field(json, "name");
  container.root = string_field(json, "root");
  container.exec = strings_field(json, "exec");
  container.image = image_from(object_field(json, "image"));
  container.problem = optional_string_field(json, "problem");
  container.targets = targets_from(json);
  container.envs = strings_field(json, "envs");
  return container;
}

ActivationReport activation_from(const Json& json) {
  ActivationReport activation;
  activation.scripts = strings_field(json, "scripts");
  for (const auto& change : array_field(json, "changes")) {
    if (!change.is_object()) {
      continue;
    }
    activation.changes.push_back({string_field(change, "name"),
                                  optional_string_field(change, "bare"),
                                  optional_string_field(change, "activated")});
  }
  activation.more_changes = integer_field<std::size_t>(json, "more_changes").value_or(0);
  activation.problem = string_field(json, "problem");
  return activation;
}

}  // namespace

std::string to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::compliant:
      return "compliant";
    case Verdict::drift:
      return "drift";
    case Verdict::pending:
      return "pending";
    case Verdict::error:
      break;
  }
  return "error";
}

Verdict host_verdict(contracts::EnvVerdict verdict) {
  switch (verdict) {
    case contracts::EnvVerdict::compliant:
      return Verdict::compliant;
    case contracts::EnvVerdict::drift:
      return Verdict::drift;
    case contracts::EnvVerdict::error:
      break;
  }
  return Verdict::error;
}

std::optional<Verdict> verdict_from_string(const std::string& text) {
  for (const auto verdict :
       {Verdict::compliant, Verdict::drift, Verdict::error, Verdict::pending}) {
    if (text == to_string(verdict)) {
      return verdict;
    }
  }
  return std::nullopt;
}

Json to_json(const CheckReport& check) {
  auto json = contracts::to_json(static_cast<const contracts::CheckResult&>(check));
  json["since"] = optional_text(check.since);
  json["flapping"] = check.flapping;
  return json;
}

Json to_json(const EnvReport& env) {
  Json json = {{"name", env.name},
               {"prefix", env.prefix},
               {"kind", env.kind},
               {"python_version", env.python_version},
               {"target", optional_text(env.target)},
               {"container", optional_text(env.container)},
               {"probed_at", optional_text(env.probed_at)},
               {"verdict", contracts::to_string(env.verdict)},
               {"checks", checks_json(env.checks)},
               {"summary", env.summary}};
  if (env.run_as) {
    const auto& run_as = *env.run_as;
    json["run_as"] = {{"user", run_as.user},
                      {"uid", run_as.uid ? Json(*run_as.uid) : Json(nullptr)},
                      {"reason", run_as.reason},
                      {"as_root", run_as.as_root}};
  }
  if (env.activation) {
    json["activation"] = activation_json(*env.activation);
  }
  return json;
}

Json to_json(const Report& report) {
  Json json;
  json["schema_version"] = report.schema_version;
  json["host"] = report.host;
  json["scanned_at"] = report.scanned_at;
  json["duration_ms"] = report.duration_ms;
  json["contract"] = {{"name", report.contract.name},
                      {"path", report.contract.path},
                      {"sha256", report.contract.sha256}};
  if (!report.contract.platform.empty()) {
    json["contract"]["platform"] = report.contract.platform;
  }
  json["verdict"] = to_string(report.verdict);
  json["reasons"] = strings_json(report.reasons);
  json["compliant_envs"] = strings_json(report.compliant_envs);
  json["image"] = facts::to_json(report.image);
  json["targets"] = targets_json(report.targets);
  json["containers"] = containers_json(report.containers);
  auto envs = Json::array();
  for (const auto& env : report.envs) {
    envs.push_back(to_json(env));
  }
  json["envs"] = std::move(envs);
  auto problems = Json::array();
  for (const auto& problem : report.problems) {
    problems.push_back({{"path", problem.path}, {"problem", problem.problem}});
  }
  json["problems"] = std::move(problems);
  if (report.partial) {
    json["partial"] = {{"done", report.partial->done},
                       {"total", report.partial->total},
                       {"pending_envs", strings_json(report.partial->pending_envs)}};
  }
  if (report.scan_id) {
    json["scan_id"] = *report.scan_id;
  }
  if (report.not_persisted) {
    json["not_persisted"] = *report.not_persisted;
  }
  if (report.source) {
    json["source"] = *report.source;
  }
  if (report.agent_version) {
    json["agent_version"] = *report.agent_version;
  }
  return json;
}

EnvReport env_report_from_json(const Json& json) {
  EnvReport env;
  env.name = string_field(json, "name");
  env.prefix = string_field(json, "prefix");
  env.kind = string_field(json, "kind");
  env.python_version = string_field(json, "python_version");
  env.target = optional_string_field(json, "target");
  env.container = optional_string_field(json, "container");
  env.probed_at = optional_string_field(json, "probed_at");
  env.verdict = env_verdict_from(json);
  env.checks = checks_from(json);
  env.summary = string_field(json, "summary");
  if (const Json& run_as = field(json, "run_as"); run_as.is_object()) {
    // A uid is one uid_t can hold; anything else is unknown.
    const auto uid = integer_field<std::uint32_t>(run_as, "uid");
    env.run_as = RunAsReport{string_field(run_as, "user"),
                             uid ? std::optional<std::int64_t>(*uid) : std::nullopt,
                             string_field(run_as, "reason"), field(run_as, "as_root") == true};
  }
  if (const Json& activation = field(json, "activation"); activation.is_object()) {
    env.activation = activation_from(activation);
  }
  return env;
}

Report report_from_json(const Json& json) {
  Report report;
  report.schema_version = integer_field<int>(json, "schema_version").value_or(0);
  report.host = string_field(json, "host");
  report.scanned_at = string_field(json, "scanned_at");
  if (const Json& duration = field(json, "duration_ms"); duration.is_number()) {
    report.duration_ms = duration.get<double>();
  }
  // Scan ids start at 1 (SQLite's rowid).
  report.scan_id = integer_field<std::int64_t>(json, "scan_id");
  if (report.scan_id && *report.scan_id < 1) {
    report.scan_id.reset();
  }
  report.not_persisted = optional_string_field(json, "not_persisted");
  report.source = optional_string_field(json, "source");
  report.agent_version = optional_string_field(json, "agent_version");
  const Json& contract = object_field(json, "contract");
  report.contract = {string_field(contract, "name"), string_field(contract, "path"),
                     string_field(contract, "sha256"), string_field(contract, "platform")};
  report.verdict = verdict_from_string(string_field(json, "verdict")).value_or(Verdict::error);
  if (const Json& partial = field(json, "partial"); partial.is_object()) {
    report.partial = PartialScan{integer_field<std::size_t>(partial, "done").value_or(0),
                                 integer_field<std::size_t>(partial, "total").value_or(0),
                                 strings_field(partial, "pending_envs")};
  }
  report.reasons = strings_field(json, "reasons");
  report.compliant_envs = strings_field(json, "compliant_envs");
  report.image = image_from(object_field(json, "image"));
  report.targets = targets_from(json);
  // An entry that is not an object is no record of anything: left out.
  for (const auto& container : array_field(json, "containers")) {
    if (container.is_object()) {
      report.containers.push_back(container_from(container));
    }
  }
  for (const auto& env : array_field(json, "envs")) {
    if (env.is_object()) {
      report.envs.push_back(env_report_from_json(env));
    }
  }
  for (const auto& problem : array_field(json, "problems")) {
    if (problem.is_object()) {
      report.problems.push_back({string_field(problem, "path"), string_field(problem, "problem")});
    }
  }
  return report;
}

Report printable_report(const Report& report) {
  // Through the edge form: every string the report holds, present and
  // future fields alike, passes printable_json, and none can be missed.
  return report_from_json(printable_json(to_json(report)));
}

}  // namespace envcontract::report
