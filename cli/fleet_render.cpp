#include "cli/fleet_render.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "common/json_fields.hpp"
#include "report/junit.hpp"
#include "report/printable.hpp"
#include "report/report_json.hpp"

namespace envcontract::cli {
namespace {

using common::array_field;
using common::object_field;
using common::string_field;

// The causes a host fails for, each counted once per host.
std::set<std::string> host_causes(const report::Report& report) {
  std::set<std::string> causes;
  const auto collect = [&](const std::vector<report::CheckReport>& checks) {
    for (const auto& check : checks) {
      if ((check.status == contracts::CheckStatus::fail ||
           check.status == contracts::CheckStatus::error) &&
          check.severity != contracts::Severity::advisory &&
          !report::diagnosis_of(check).cause.empty()) {
        causes.insert(report::diagnosis_of(check).cause);
      }
    }
  };
  for (const auto& target : report.targets) {
    collect(target.checks);
  }
  for (const auto& env : report.envs) {
    collect(env.checks);
  }
  return causes;
}

std::string padded(const std::string& text, std::size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

// Green for compliant (or a change to pass), red for drift (or to fail), yellow otherwise.
std::string painted(const std::string& state, const report::TableStyle& style) {
  if (!style.colour) {
    return state;
  }
  const bool good = state == "compliant" || state.ends_with("-> pass");
  const bool bad = state == "drift" || state.ends_with("-> fail");
  const char* code = good ? "32" : bad ? "31" : "33";
  return std::string("\x1b[") + code + "m" + state + "\x1b[0m";
}

std::string joined(const std::set<std::string>& items) {
  std::string text;
  for (const auto& item : items) {
    text += (text.empty() ? "" : ", ") + item;
  }
  return text;
}

}  // namespace

namespace {

// Reports and errors from hosts we do not control, made safe for a terminal.
std::vector<HostReport> printable_hosts(const std::vector<HostReport>& hosts) {
  std::vector<HostReport> safe = hosts;
  for (auto& host : safe) {
    host.address.text = report::printable(host.address.text);  // a Prometheus label, say
    host.error = report::printable(host.error);
    if (host.report) {
      host.report = report::printable_report(*host.report);
    }
  }
  return safe;
}

}  // namespace

std::string fleet_summary(const std::vector<HostReport>& hosts) {
  // Of the reports, only their causes are shown: those alone are made
  // printable, not a copy of every report.
  std::map<std::string, int> states;
  std::map<std::string, int> causes;
  for (const auto& host : hosts) {
    ++states[host.state()];
    if (host.report) {
      for (const auto& cause : host_causes(*host.report)) {
        ++causes[cause];
      }
    }
  }
  std::ostringstream out;
  const auto total = hosts.size();
  out << states["drift"] << " of " << total << (total == 1 ? " host drifts" : " hosts drift");
  if (states["error"] > 0) {
    out << "; " << states["error"] << " could not be judged";
  }
  if (states["unavailable"] > 0) {
    out << "; " << states["unavailable"] << " unavailable";
  }
  out << "; " << states["compliant"] << " compliant";
  std::vector<std::pair<std::string, int>> ranked(causes.begin(), causes.end());
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (!ranked.empty()) {
    out << "; top causes:";
    for (std::size_t i = 0; i < ranked.size() && i < 5; ++i) {
      out << (i == 0 ? " " : ", ") << report::printable(ranked[i].first) << " " << ranked[i].second;
    }
  }
  return out.str();
}

std::string fleet_table(const std::vector<HostReport>& unsafe_hosts,
                        const report::TableStyle& style) {
  const auto hosts = printable_hosts(unsafe_hosts);
  std::size_t width = 4;
  for (const auto& host : hosts) {
    width = std::max(width, host.address.text.size());
  }
  std::ostringstream out;
  out << padded("HOST", width + 2) << padded("STATE", 13) << padded("ENVS", 11) << "DETAIL\n";
  for (const auto& host : hosts) {
    const std::string state = host.state();
    std::string envs = "-";
    std::string detail = host.error;
    if (host.report) {
      envs = std::to_string(host.report->compliant_envs.size()) + "/" +
             std::to_string(host.report->envs.size()) + " ok";
      detail = joined(host_causes(*host.report));
      if (detail.empty()) {
        detail = host.report->verdict == report::Verdict::compliant
                     ? "complies (contract " + host.report->contract.name + ")"
                     : "no failing check named (contract " + host.report->contract.name + ")";
      }
      if (!host.error.empty()) {  // a report that was read with a problem says it first
        detail = host.error + "; " + detail;
      }
    }
    out << padded(host.address.text, width + 2) << painted(state, style)
        << std::string(state.size() < 13 ? 13 - state.size() : 1, ' ') << padded(envs, 11) << detail
        << "\n";
  }
  out << "\n" << fleet_summary(hosts) << "\n";
  return out.str();
}

Json fleet_json(const std::vector<HostReport>& hosts) {
  auto list = Json::array();
  std::map<std::string, int> states;
  for (const auto& host : hosts) {
    ++states[host.state()];
    list.push_back({{"host", host.address.text},
                    {"state", host.state()},
                    {"error", host.error.empty() ? Json(nullptr) : Json(host.error)},
                    {"report", host.report ? report::to_json(*host.report) : Json(nullptr)}});
  }
  return {{"hosts", list},
          {"summary",
           {{"hosts", hosts.size()},
            {"compliant", states["compliant"]},
            {"drift", states["drift"]},
            {"error", states["error"]},
            {"unavailable", states["unavailable"]},
            {"text", fleet_summary(hosts)}}}};
}

std::string history_table(const Json& unsafe_transitions, const report::TableStyle& style) {
  const Json transitions = report::printable_json(unsafe_transitions);
  std::ostringstream out;
  if (!transitions.is_array() || transitions.empty()) {
    return "no transitions\n";
  }
  std::size_t subject_width = 7;
  std::size_t check_width = 5;
  for (const auto& row : transitions) {
    const std::string subject =
        string_field(row, "scope") == "host" ? "host" : string_field(row, "name");
    subject_width = std::max(subject_width, subject.size());
    check_width = std::max(check_width, string_field(row, "check").size());
  }
  out << padded("AT", 22) << padded("SUBJECT", subject_width + 2)
      << padded("CHECK", check_width + 2) << padded("CHANGE", 24) << "CAUSE / SUMMARY\n";
  for (const auto& row : transitions) {
    const std::string scope = string_field(row, "scope");
    const std::string subject = scope == "host"     ? "host"
                                : scope == "target" ? "target " + string_field(row, "name")
                                                    : string_field(row, "name");
    const std::string previous = string_field(row, "previous_status");
    const std::string status = string_field(row, "status");
    const std::string change = (previous.empty() ? "(new)" : previous) + " -> " + status;
    const std::string cause = string_field(row, "cause");
    const std::string summary = string_field(row, "summary");
    out << padded(string_field(row, "at"), 22) << padded(subject, subject_width + 2)
        << padded(string_field(row, "check"), check_width + 2) << painted(change, style)
        << std::string(change.size() < 24 ? 24 - change.size() : 1, ' ') << cause
        << (cause.empty() || summary.empty() ? "" : ": ") << summary << "\n";
  }
  return out.str();
}

namespace {

Json check_state(const Json& check) {
  const Json& diagnosis = check.contains("diagnosis") && check.at("diagnosis").is_object()
                              ? check.at("diagnosis")
                              : Json::object();
  return {{"status", string_field(check, "status")},
          {"cause", string_field(diagnosis, "cause")},
          {"summary", string_field(diagnosis, "summary")}};
}

std::map<std::string, const Json*> by_name(const Json& items, const char* key) {
  std::map<std::string, const Json*> map;
  for (const auto& item : items) {
    map[string_field(item, key)] = &item;
  }
  return map;
}

}  // namespace

Json diff_reports(const Json& a, const Json& b) {
  Json diff = Json::object();
  const auto field_diff = [&](const std::string& name, const Json& left, const Json& right) {
    if (left != right) {
      diff[name] = {{"a", left}, {"b", right}};
    }
  };
  const Json& contract_a = object_field(a, "contract");
  const Json& contract_b = object_field(b, "contract");
  field_diff(
      "contract",
      string_field(contract_a, "name") + " " + string_field(contract_a, "sha256").substr(0, 12),
      string_field(contract_b, "name") + " " + string_field(contract_b, "sha256").substr(0, 12));
  field_diff("image", string_field(object_field(a, "image"), "value"),
             string_field(object_field(b, "image"), "value"));
  field_diff("verdict", string_field(a, "verdict"), string_field(b, "verdict"));

  const auto envs_a = by_name(array_field(a, "envs"), "name");
  const auto envs_b = by_name(array_field(b, "envs"), "name");
  auto only_a = Json::array();
  auto only_b = Json::array();
  auto checks = Json::array();
  std::size_t not_compared = 0;
  for (const auto& [name, env] : envs_a) {
    if (!envs_b.contains(name)) {
      only_a.push_back({{"env", name}, {"verdict", string_field(*env, "verdict")}});
    }
  }
  for (const auto& [name, env] : envs_b) {
    if (!envs_a.contains(name)) {
      only_b.push_back({{"env", name}, {"verdict", string_field(*env, "verdict")}});
    }
  }
  for (const auto& [name, env_a] : envs_a) {
    const auto found = envs_b.find(name);
    if (found == envs_b.end()) {
      continue;
    }
    const auto checks_a = by_name(array_field(*env_a, "checks"), "id");
    const auto checks_b = by_name(array_field(*found->second, "checks"), "id");
    std::set<std::string> ids;
    for (const auto& [id, check] : checks_a) {
      ids.insert(id);
    }
    for (const auto& [id, check] : checks_b) {
      ids.insert(id);
    }
    for (const auto& id : ids) {
      // A check only one contract has is a contract difference, reported as such.
      if (!checks_a.contains(id) || !checks_b.contains(id)) {
        ++not_compared;
        continue;
      }
      const auto left = check_state(*checks_a.at(id));
      const auto right = check_state(*checks_b.at(id));
      if (left["status"] != right["status"] || left["cause"] != right["cause"]) {
        checks.push_back({{"env", name}, {"check", id}, {"a", left}, {"b", right}});
      }
    }
  }
  if (!only_a.empty()) {
    diff["only_in_a"] = only_a;
  }
  if (!only_b.empty()) {
    diff["only_in_b"] = only_b;
  }
  if (!checks.empty()) {
    diff["checks"] = checks;
  }
  if (not_compared > 0) {
    diff["checks_in_one_contract_only"] = not_compared;
  }
  return diff;
}

bool diff_is_empty(const Json& diff) {
  return diff.empty();
}

std::string diff_table(const Json& unsafe_diff, const std::string& a, const std::string& b) {
  const Json diff = report::printable_json(unsafe_diff);
  std::ostringstream out;
  if (diff.empty()) {
    out << a << " and " << b << " agree: same contract, image, verdicts and checks\n";
    return out.str();
  }
  out << "A = " << a << "\nB = " << b << "\n";
  for (const char* field : {"contract", "image", "verdict"}) {
    if (diff.contains(field)) {
      out << padded(field, 10) << "A: " << diff[field]["a"].get<std::string>()
          << "\n          B: " << diff[field]["b"].get<std::string>() << "\n";
    }
  }
  for (const auto& [key, label] :
       {std::pair{"only_in_a", "only on A"}, {"only_in_b", "only on B"}}) {
    if (diff.contains(key)) {
      for (const auto& env : diff[key]) {
        out << "env " << env["env"].get<std::string>() << ": " << label << " ("
            << env["verdict"].get<std::string>() << ")\n";
      }
    }
  }
  if (diff.contains("checks_in_one_contract_only")) {
    out << diff["checks_in_one_contract_only"].get<std::size_t>()
        << " checks of shared envs are in one contract only (not compared)\n";
  }
  if (diff.contains("checks")) {
    std::size_t env_width = 3;
    std::size_t check_width = 5;
    for (const auto& row : diff["checks"]) {
      env_width = std::max(env_width, row["env"].get<std::string>().size());
      check_width = std::max(check_width, row["check"].get<std::string>().size());
    }
    const auto describe = [](const Json& state) {
      const std::string cause = state["cause"].get<std::string>();
      const std::string summary = state["summary"].get<std::string>();
      return state["status"].get<std::string>() + (cause.empty() ? "" : " " + cause) +
             (summary.empty() ? "" : ": " + summary);
    };
    out << "\n" << padded("ENV", env_width + 2) << padded("CHECK", check_width + 2) << "A / B\n";
    for (const auto& row : diff["checks"]) {
      out << padded(row["env"].get<std::string>(), env_width + 2)
          << padded(row["check"].get<std::string>(), check_width + 2) << "A: " << describe(row["a"])
          << "\n"
          << std::string(env_width + check_width + 4, ' ') << "B: " << describe(row["b"]) << "\n";
    }
  }
  return out.str();
}

namespace {

// A report cut to what every fleet source knows (JunitDetail::failing_checks).
Json failing_checks_only(const Json& report) {
  const auto failing = [](const Json& owner) {
    auto checks = Json::array();
    for (const auto& check : array_field(owner, "checks")) {
      const std::string status = string_field(check, "status");
      if (status == "fail" || status == "error") {
        checks.push_back(check);
      }
    }
    return checks;
  };
  // Prometheus names a target's series by the target alone, a container's
  // too (docs/containers.md): so are they listed here, each check once.
  std::vector<std::pair<std::string, Json>> by_name;
  const auto add_target = [&](const Json& target) {
    const std::string name = string_field(target, "name");
    auto listed = std::find_if(by_name.begin(), by_name.end(),
                               [&](const auto& each) { return each.first == name; });
    for (auto& check : failing(target)) {
      if (listed == by_name.end()) {
        by_name.emplace_back(name, Json::array());
        listed = std::prev(by_name.end());
      }
      auto& checks = listed->second;
      const bool known = std::any_of(checks.begin(), checks.end(), [&](const Json& each) {
        return string_field(each, "id") == string_field(check, "id");
      });
      if (!known) {
        checks.push_back(std::move(check));
      }
    }
  };
  for (const auto& target : array_field(report, "targets")) {
    add_target(target);
  }
  for (const auto& container : array_field(report, "containers")) {
    for (const auto& target : array_field(container, "targets")) {
      add_target(target);
    }
  }
  auto targets = Json::array();
  for (auto& [name, checks] : by_name) {
    targets.push_back({{"name", name}, {"checks", std::move(checks)}});
  }
  auto envs = Json::array();
  for (const auto& env : array_field(report, "envs")) {
    auto checks = failing(env);
    if (checks.empty()) {
      // Prometheus has no series of the checks that pass: the env's
      // compliance is the one case both sources can state.
      const bool complies = string_field(env, "verdict") == "compliant";
      checks.push_back(
          {{"id", "complies"},
           {"status", complies ? "pass" : "error"},
           {"diagnosis",
            {{"summary", complies ? ""
                                  : "the env's verdict is " + string_field(env, "verdict") +
                                        " with no failing check known"}}}});
    }
    envs.push_back({{"name", string_field(env, "name")}, {"checks", std::move(checks)}});
  }
  return {{"targets", std::move(targets)}, {"envs", std::move(envs)}};
}

}  // namespace

std::string fleet_junit(const std::vector<HostReport>& hosts, JunitDetail detail) {
  std::vector<report::Report> read;
  read.reserve(hosts.size());  // JunitHost points into it: no reallocation
  std::vector<report::JunitHost> named;
  for (const auto& host : hosts) {
    const report::Report* report = nullptr;
    if (host.report) {
      read.push_back(
          detail == JunitDetail::failing_checks
              ? report::report_from_json(failing_checks_only(report::to_json(*host.report)))
              : *host.report);
      report = &read.back();
    }
    named.push_back({host.address.text, report, report != nullptr ? "" : host.error});
    if (report != nullptr && !host.error.empty()) {
      // A report read with a problem (a verdict this fleetctl does not know):
      // the problem is a failure of its own, not hidden behind the checks.
      named.push_back({host.address.text, nullptr, host.error});
    }
  }
  return report::junit_xml(named);
}

}  // namespace envcontract::cli
