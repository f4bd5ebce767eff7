#include "fleet/fleet_view.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>

#include "common/json_fields.hpp"
#include "report/report.hpp"

namespace envcontract::fleet {
namespace {

using common::string_field;

// A hang is the cause that cost days in the incident behind this project:
// a row names it first, however few envs it is in.
constexpr std::string_view k_first_cause = "hang";

const std::vector<std::string>& known_states() {
  static const std::vector<std::string> states = {"compliant", "drift", "error", "pending",
                                                  "unavailable"};
  return states;
}

// A check that makes its env (or target) fail: failing or unjudged, and
// not merely advisory, as fleetctl counts them.
bool failing(const report::CheckReport& check) {
  return (check.status == contracts::CheckStatus::fail ||
          check.status == contracts::CheckStatus::error) &&
         check.severity != contracts::Severity::advisory;
}

struct FailingCheck {
  std::string owner;  // "env NAME" or "target NAME"
  std::string check;
  std::string cause;
};

// Every failing check of a report's targets and envs.
std::vector<FailingCheck> failing_checks(const report::Report& report) {
  std::vector<FailingCheck> found;
  const auto collect = [&](const std::vector<report::CheckReport>& checks,
                           const std::string& name) {
    for (const auto& check : checks) {
      if (failing(check)) {
        found.push_back({name, check.id, report::diagnosis_of(check).cause});
      }
    }
  };
  for (const auto& target : report.targets) {
    collect(target.checks, "target " + target.name);
  }
  for (const auto& env : report.envs) {
    collect(env.checks, "env " + env.name);
  }
  return found;
}

// How many envs (or targets) fail each check and each cause.
void count_owners(const report::Report& report, std::map<std::string, int>& checks,
                  std::map<std::string, int>& causes) {
  std::set<std::pair<std::string, std::string>> seen_checks;
  std::set<std::pair<std::string, std::string>> seen_causes;
  for (const auto& each : failing_checks(report)) {
    if (seen_checks.insert({each.check, each.owner}).second) {
      ++checks[each.check];
    }
    if (!each.cause.empty() && seen_causes.insert({each.cause, each.owner}).second) {
      ++causes[each.cause];
    }
  }
}

// "name" -> count, as [{key: name, "count": count}] with the most first,
// but `first` before all.
Json ranked(const std::map<std::string, int>& counts, const char* key,
            std::string_view first = {}) {
  std::vector<std::pair<std::string, int>> order(counts.begin(), counts.end());
  std::stable_sort(order.begin(), order.end(), [first](const auto& a, const auto& b) {
    const bool a_first = a.first == first;
    const bool b_first = b.first == first;
    return a_first != b_first ? a_first : a.second > b.second;
  });
  auto out = Json::array();
  for (const auto& [name, count] : order) {
    out.push_back({{key, name}, {"count", count}});
  }
  return out;
}

// A host's state as the view counts it (a verdict it does not know, a
// Prometheus series of a newer agent, was read as an error of that host).
std::string state_of(const HostReport& host) {
  return host.state();
}

int state_rank(const std::string& state) {
  static const std::vector<std::string> order = {"error", "unavailable", "drift", "pending",
                                                 "compliant"};
  const auto it = std::find(order.begin(), order.end(), state);
  return static_cast<int>(it - order.begin());
}

// What the view knows of a host: its report, or for a host without one now
// what was last known of it; null when nothing is.
const report::Report* facts_of(const HostReport& host) {
  return host.report ? &*host.report : host.last_known ? &*host.last_known : nullptr;
}

}  // namespace

// Filter values are compared without regard to case: "ASCEND" finds the
// ascend hosts (platforms, causes and verdicts are lower case; a check's
// id differing only in case from another's would be a confusing contract).
bool same_value(const std::string& wanted, const std::string& value) {
  return wanted.size() == value.size() &&
         std::equal(wanted.begin(), wanted.end(), value.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

Json history_json(const ComplianceHistory& history) {
  auto points = Json::array();
  for (const auto& point : history.points) {
    points.push_back({{"time", point.time},
                      {"compliant", point.compliant},
                      {"drift", point.drift},
                      {"error", point.error},
                      {"down", point.down}});
  }
  Json out = {{"step_seconds", history.step_seconds}, {"points", std::move(points)}};
  if (!history.problem.empty()) {
    out["problem"] = history.problem;
  }
  if (!history.scope.empty()) {
    out["scope"] = history.scope;
  }
  return out;
}

Json FleetFilter::to_json() const {
  Json out = Json::object();
  for (const auto& [name, value] : {std::pair{"verdict", verdict},
                                    {"cause", cause},
                                    {"check", check},
                                    {"platform", platform}}) {
    if (!value.empty()) {
      out[name] = value;
    }
  }
  return out;
}

common::Result<FleetFilter> parse_fleet_filter(
    const std::multimap<std::string, std::string>& params) {
  FleetFilter filter;
  for (const auto& [name, value] : params) {
    if (params.count(name) > 1) {
      return common::Error{"give '" + name + "' once"};
    }
    if (name == "verdict") {
      const std::string& given =
          value;  // a structured binding: not capturable before C++20's P1091 in clang 14
      const auto known =
          std::find_if(known_states().begin(), known_states().end(),
                       [&given](const std::string& each) { return same_value(each, given); });
      if (known == known_states().end()) {
        return common::Error{
            "verdict must be one of compliant, drift, error, pending, "
            "unavailable; got '" +
            value + "'"};
      }
      filter.verdict = *known;
    } else if (name == "cause") {
      filter.cause = value;
    } else if (name == "check") {
      filter.check = value;
    } else if (name == "platform") {
      filter.platform = value;
    } else {
      return common::Error{"unknown parameter '" + name +
                           "'; the fleet is filtered by verdict, cause, check and platform"};
    }
  }
  return filter;
}

CompliancePoint count_verdicts(const std::vector<HostReport>& hosts, const std::string& time) {
  CompliancePoint point;
  point.time = time;
  for (const auto& host : hosts) {
    const std::string state = state_of(host);
    if (state == "compliant") {
      ++point.compliant;
    } else if (state == "drift") {
      ++point.drift;
    } else if (state == "error") {
      ++point.error;
    } else {
      ++point.down;  // unavailable, or a first scan still running
    }
  }
  return point;
}

bool host_matches(const HostReport& host, const FleetFilter& filter) {
  if (!filter.verdict.empty() && state_of(host) != filter.verdict) {
    return false;
  }
  const report::Report* facts = facts_of(host);
  if (!filter.platform.empty() &&
      (facts == nullptr || !same_value(filter.platform, facts->contract.platform))) {
    return false;
  }
  if (filter.cause.empty() && filter.check.empty()) {
    return true;
  }
  if (facts == nullptr) {
    return false;
  }
  const auto checks = failing_checks(*facts);
  return std::any_of(checks.begin(), checks.end(), [&](const FailingCheck& each) {
    return (filter.check.empty() || same_value(filter.check, each.check)) &&
           (filter.cause.empty() || same_value(filter.cause, each.cause));
  });
}

Json host_row(const HostReport& host) {
  static const report::Report no_report;
  const report::Report* facts = facts_of(host);
  const report::Report& report = facts != nullptr ? *facts : no_report;  // never a copy
  Json row = {{"host", host.address.text},
              {"agent_url", host.address.port > 0 ? host.address.base_url() + "/" : ""},
              {"state", state_of(host)},
              {"up", host.up},
              {"contract", report.contract.name},
              {"platform", report.contract.platform},
              {"image", report.image.value}};
  const auto drifting = std::count_if(report.envs.begin(), report.envs.end(), [](const auto& env) {
    return env.verdict != contracts::EnvVerdict::compliant;
  });
  row["envs"] = report.envs.size();
  row["drifting_envs"] = drifting;
  std::map<std::string, int> causes;
  std::map<std::string, int> checks;
  count_owners(report, checks, causes);
  row["top_causes"] = ranked(causes, "cause", k_first_cause);
  row["failing_checks"] = ranked(checks, "check");
  row["last_scan"] = report.scanned_at;  // "" : unknown
  row["last_seen"] = host.last_seen;
  row["last_verdict"] = host.last_verdict;
  // Contract, platform, envs and causes above are what was last known of a
  // host that is down, not what it is now.
  row["last_known"] = !host.report && host.last_known;
  if (!host.report && host.last_known) {
    row["last_known_from"] = host.last_known_from;
  }
  row["error"] = host.error;
  return row;
}

Json fleet_view(const std::vector<HostReport>& hosts, const FleetFilter& filter,
                const std::string& source, const ComplianceHistory& history) {
  std::set<std::string> platforms;
  std::set<std::string> checks_known;
  std::set<std::string> causes_known;
  std::vector<std::pair<const HostReport*, Json>> shown;
  for (const auto& host : hosts) {
    Json row = host_row(host);
    if (const std::string platform = string_field(row, "platform"); !platform.empty()) {
      platforms.insert(platform);
    }
    if (const auto* facts = facts_of(host)) {
      for (const auto& each : failing_checks(*facts)) {
        checks_known.insert(each.check);
        if (!each.cause.empty()) {
          causes_known.insert(each.cause);
        }
      }
    }
    if (host_matches(host, filter)) {
      shown.emplace_back(&host, std::move(row));
    }
  }
  std::stable_sort(shown.begin(), shown.end(), [](const auto& a, const auto& b) {
    const int left = state_rank(state_of(*a.first));
    const int right = state_rank(state_of(*b.first));
    return left != right ? left < right : a.first->address.text < b.first->address.text;
  });

  Json counts = {{"hosts", shown.size()}};
  for (const auto& state : known_states()) {
    counts[state] = 0;
  }
  // Per check and per cause: how many hosts fail it, and in how many envs.
  std::map<std::string, std::pair<int, int>> by_check;
  std::map<std::string, std::pair<int, int>> by_cause;
  auto rows = Json::array();
  for (auto& [host, row] : shown) {
    const std::string state = state_of(*host);
    counts[state] = counts.value(state, 0) + 1;
    if (const auto* facts = facts_of(*host)) {
      std::map<std::string, int> checks;
      std::map<std::string, int> causes;
      count_owners(*facts, checks, causes);
      for (const auto& [check, envs] : checks) {
        auto& count = by_check[check];
        ++count.first;
        count.second += envs;
      }
      for (const auto& [cause, envs] : causes) {
        auto& count = by_cause[cause];
        ++count.first;
        count.second += envs;
      }
    }
    rows.push_back(std::move(row));
  }
  // Most hosts first, then most envs; `first` before all.
  const auto listed = [](const std::map<std::string, std::pair<int, int>>& counted, const char* key,
                         std::string_view first = {}) {
    std::vector<std::pair<std::string, std::pair<int, int>>> order(counted.begin(), counted.end());
    std::stable_sort(order.begin(), order.end(), [first](const auto& a, const auto& b) {
      if ((a.first == first) != (b.first == first)) {
        return a.first == first;
      }
      return a.second.first != b.second.first ? a.second.first > b.second.first
                                              : a.second.second > b.second.second;
    });
    auto out = Json::array();
    for (const auto& [name, count] : order) {
      out.push_back({{key, name}, {"hosts", count.first}, {"envs", count.second}});
    }
    return out;
  };
  return {{"source", source},
          {"filter", filter.to_json()},
          {"total_hosts", hosts.size()},
          {"counts", std::move(counts)},
          {"checks", listed(by_check, "check")},
          {"causes", listed(by_cause, "cause", k_first_cause)},
          {"platforms", platforms},
          {"checks_known", checks_known},
          {"causes_known", causes_known},
          {"hosts", std::move(rows)},
          {"history", history_json(history)}};
}

}  // namespace envcontract::fleet
