#include "fleet/prometheus_fleet.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "common/json_fields.hpp"
#include "report/report_json.hpp"

namespace envcontract::fleet {
namespace {

using common::object_field;
using common::string_field;

// A PromQL string literal: the job name is the operator's, quotes, line
// breaks and all.
std::string promql_string(const std::string& text) {
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
      quoted += escaped;
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

std::string url_encoded(const std::string& text) {
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", c);
      out += escaped;
    }
  }
  return out;
}

double sample_value(const Json& sample) {
  const auto& value = sample.contains("value") ? sample.at("value") : Json();
  if (!value.is_array() || value.size() != 2 || !value[1].is_string()) {
    return 0;
  }
  try {
    return std::stod(value[1].get<std::string>());
  } catch (const std::exception&) {
    return 0;
  }
}

std::string label(const Json& sample, const char* name) {
  return string_field(object_field(sample, "metric"), name);
}

// The agent's own label: a scrape config's target label of the same name
// (labels: {env: prod}) makes Prometheus keep the agent's as exported_NAME.
std::string agent_label(const Json& sample, const std::string& name) {
  const std::string exported = label(sample, ("exported_" + name).c_str());
  return exported.empty() ? label(sample, name.c_str()) : exported;
}

// "" for what is no time of a scan (NaN, infinities, before 1970 or past
// 9999): casting such a value to time_t is undefined.
std::string rfc3339(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 253402300799.0) {
    return "";
  }
  const std::time_t when = static_cast<std::time_t>(seconds);
  std::tm utc{};
  ::gmtime_r(&when, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

const Json& result_of(const std::map<std::string, Json>& results, const std::string& name) {
  static const Json none = Json::array();
  const auto it = results.find(name);
  return it != results.end() && it->second.is_array() ? it->second : none;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> fleet_queries(const std::string& job) {
  const std::string selector = "{job=" + promql_string(job) + "}";
  return {
      {"up", "up" + selector},
      {"verdict", "envcontract_host_verdict" + selector + " == 1"},
      // For agents that are down: the verdict their last scrape carried.
      {"last_verdict", "last_over_time(envcontract_host_verdict" + selector + "[1d]) == 1"},
      {"info", "envcontract_info" + selector},
      // For agents that are down: what they last said of their contract
      // and image (one series each, unless the contract changed that day).
      {"last_info", "last_over_time(envcontract_info" + selector + "[1d])"},
      {"env", "envcontract_env_compliant" + selector},
      {"failing", "envcontract_check_failing" + selector},
      // Of agents that are down too: when they last scanned.
      {"last_scan", "last_over_time(envcontract_last_scan_timestamp_seconds" + selector + "[1d])"},
  };
}

namespace {

// One agent as Prometheus' series tell of it.
struct SampledHost {
  bool up = false;
  bool scraped = false;  // an `up` series of it exists (not so on a federating server)
  bool agent = false;    // it serves envcontract metrics
  std::string verdict;
  std::string last_verdict;
  std::vector<Json> last_info;  // the info series of the last day, kept for a host that is down
  Json report = Json::object();
  std::map<std::string, Json> envs;     // name -> {"name", "verdict", "checks"}
  std::map<std::string, Json> targets;  // name -> {"name", "checks"}
};

// The report's contract, agent version and image, from an info series.
void describe_from_info(Json& report, const Json& sample) {
  report["contract"] = {{"name", label(sample, "contract")},
                        {"sha256", label(sample, "contract_sha256")}};
  if (const std::string platform = label(sample, "platform"); !platform.empty()) {
    report["contract"]["platform"] = platform;
  }
  report["agent_version"] = label(sample, "version");
  report["image"] = {{"value", label(sample, "image")}};
}

// The hosts Prometheus scrapes or holds envcontract series of.
std::map<std::string, SampledHost> sampled_hosts(const std::map<std::string, Json>& results) {
  std::map<std::string, SampledHost> hosts;
  for (const auto& sample : result_of(results, "up")) {
    auto& host = hosts[label(sample, "instance")];
    // Several series of one agent (a pair of Prometheus servers for high
    // availability, federated): it is up when any of them scraped it.
    host.up = host.up || sample_value(sample) == 1;
    host.scraped = true;
  }
  // A server that federates the agents' series has no `up` of them: what it
  // holds fresh is up.
  for (const auto& sample : result_of(results, "info")) {
    auto& host = hosts[label(sample, "instance")];
    host.agent = true;
    if (!host.scraped) {
      host.up = true;
    }
  }
  return hosts;
}

// A failing check's series, under its env, or under its target when it is
// a target's (the image).
void add_failing_check(SampledHost& host, const Json& sample) {
  const std::string status = label(sample, "status");
  const std::string cause = agent_label(sample, "cause");
  Json check = {
      {"id", agent_label(sample, "check")},
      {"status", status},
      {"severity", agent_label(sample, "severity")},
      {"diagnosis", {{"cause", cause}, {"summary", cause + " (as Prometheus last scraped)"}}}};
  // The same check of the same env from several servers is listed once.
  const auto add = [](Json& owner, Json added) {
    if (!owner.contains("checks")) {
      owner["checks"] = Json::array();
    }
    for (const auto& listed : owner["checks"]) {
      if (listed["id"] == added["id"]) {
        return;
      }
    }
    owner["checks"].push_back(std::move(added));
  };
  const std::string env_name = agent_label(sample, "env");
  if (env_name.empty()) {
    const std::string target = agent_label(sample, "target");
    auto& targets = host.targets[target];
    targets["name"] = target;
    add(targets, std::move(check));
    return;
  }
  auto& env = host.envs[env_name];
  env["name"] = env_name;
  add(env, std::move(check));
}

// Each series of the queries but `up` read into the hosts it names.
void read_series(std::map<std::string, SampledHost>& hosts,
                 const std::map<std::string, Json>& results) {
  const auto each = [&](const char* query, const auto& use) {
    for (const auto& sample : result_of(results, query)) {
      const auto found = hosts.find(label(sample, "instance"));
      if (found != hosts.end()) {
        use(found->second, sample);
      }
    }
  };
  // Two series of one host that disagree (two servers, or an answer made
  // up) decide nothing: an error, never whichever came last.
  each("verdict", [](SampledHost& host, const Json& sample) {
    const std::string verdict = label(sample, "verdict");
    host.verdict = host.verdict.empty() || host.verdict == verdict ? verdict : "error";
  });
  each("last_verdict",
       [](SampledHost& host, const Json& sample) { host.last_verdict = label(sample, "verdict"); });
  each("info",
       [](SampledHost& host, const Json& sample) { describe_from_info(host.report, sample); });
  each("last_info",
       [](SampledHost& host, const Json& sample) { host.last_info.push_back(sample); });
  each("last_scan", [](SampledHost& host, const Json& sample) {
    if (const std::string when = rfc3339(sample_value(sample)); !when.empty()) {
      host.report["scanned_at"] = when;
    }
  });
  each("env", [](SampledHost& host, const Json& sample) {
    const std::string name = agent_label(sample, "env");
    auto& env = host.envs[name];
    env["name"] = name;
    env["verdict"] = sample_value(sample) == 1 ? "compliant" : "drift";
    if (!env.contains("checks")) {
      env["checks"] = Json::array();
    }
  });
  each("failing", add_failing_check);
}

// A host that is down or has no verdict: why, and what Prometheus' history
// still tells of it.
void describe_unjudged(HostReport& entry, const SampledHost& host) {
  entry.error = !host.up     ? "down: Prometheus' last scrape of it failed"
                : host.agent ? "Prometheus holds no verdict of it yet (its first scan is "
                               "running?)"
                             : "it serves no envcontract metrics: is it an agent?";
  if (!host.last_verdict.empty()) {
    entry.error += " (its last verdict: " + host.last_verdict + ")";
  }
  if (host.up || host.last_verdict.empty()) {
    return;
  }
  // Its failing checks are not there: their series end with the agent's
  // answers.
  Json known = {{"verdict", host.last_verdict},
                {"scanned_at", string_field(host.report, "scanned_at")}};
  entry.last_known_from =
      "Prometheus' history: its last verdict and scan time; not its failing checks";
  if (host.last_info.size() == 1) {
    describe_from_info(known, host.last_info.front());
    entry.last_known_from =
        "Prometheus' history: its last verdict, contract and scan time; not its failing "
        "checks";
  }
  entry.last_known = report::report_from_json(known);
}

// The report of a host with a verdict, made of its series.
Json judged_report(SampledHost& host, const std::string& prometheus) {
  auto& report = host.report;
  report["schema_version"] = report::schema_version;  // made here, in our schema
  report["verdict"] = host.verdict;
  report["source"] = "prometheus " + prometheus;
  auto envs = Json::array();
  auto compliant = Json::array();
  for (auto& [name, env] : host.envs) {
    if (env.value("verdict", "") == "compliant") {
      compliant.push_back(name);
    } else {
      // Errors only (checks that could not be judged) make an error env.
      const auto& checks = env["checks"];
      const bool only_errors =
          !checks.empty() && std::all_of(checks.begin(), checks.end(), [](const Json& check) {
            return check.value("status", "") == "error";
          });
      env["verdict"] = only_errors ? "error" : "drift";
    }
    envs.push_back(std::move(env));
  }
  auto targets = Json::array();
  for (auto& [name, target] : host.targets) {
    targets.push_back(std::move(target));
  }
  report["targets"] = std::move(targets);
  report["compliant_envs"] = std::move(compliant);
  report["envs"] = std::move(envs);
  return std::move(report);
}

}  // namespace

std::vector<HostReport> reports_from_samples(const std::map<std::string, Json>& results,
                                             const std::string& prometheus) {
  auto hosts = sampled_hosts(results);
  read_series(hosts, results);
  std::vector<HostReport> reports;
  for (auto& [instance, host] : hosts) {
    HostReport entry;
    entry.address = parse_host_address(instance).value_or(HostAddress{instance, instance, 0});
    entry.address.text = instance;
    entry.up = host.up;
    entry.last_verdict = host.verdict.empty() ? host.last_verdict : host.verdict;
    entry.last_seen = string_field(host.report, "scanned_at");
    if (!host.up || host.verdict.empty()) {
      describe_unjudged(entry, host);
    } else {
      // Prometheus' labels are another program's data: read as any report
      // from elsewhere. A verdict the view does not know (a newer agent's)
      // is an error of that host, never a new state.
      if (!report::verdict_from_string(host.verdict)) {
        entry.error = "its verdict '" + host.verdict + "' is none the fleet view knows";
      }
      entry.report = report::report_from_json(judged_report(host, prometheus));
    }
    reports.push_back(std::move(entry));
  }
  return reports;
}

namespace {

// One query's `data.result`, or an error naming the query; `path` is the
// API's ("/api/v1/query?...") without the query itself.
common::Result<Json> ask(const HostAddress& prometheus, const std::string& path,
                         const std::string& query, const ClientOptions& options) {
  auto answer = get_json(prometheus, path + "&query=" + url_encoded(query), options);
  if (!answer) {
    return common::Error{prometheus.text + ": query " + query + ": " + answer.error()};
  }
  const Json& data = object_field(*answer, "data");
  if (string_field(*answer, "status") != "success" || !data.contains("result") ||
      !data["result"].is_array()) {
    return common::Error{prometheus.text + ": query " + query +
                         ": not an answer of Prometheus' query API"};
  }
  return data["result"];
}

long unix_now() {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count());
}

}  // namespace

common::Result<std::vector<HostReport>> reports_from_prometheus(const HostAddress& prometheus,
                                                                const std::string& job,
                                                                const ClientOptions& options) {
  std::map<std::string, Json> results;
  // One evaluation time for every query: one moment of the fleet.
  char at[32];
  std::snprintf(
      at, sizeof at, "%.3f",
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  for (const auto& [name, query] : fleet_queries(job)) {
    auto result = ask(prometheus, "/api/v1/query?time=" + std::string(at), query, options);
    if (!result) {
      return common::Error{result.error()};
    }
    results[name] = std::move(result.value());
  }
  return reports_from_samples(results, prometheus.base_url());
}

namespace {

// A regular expression matching `text` alone, whatever its case: filter
// values are the operator's, metacharacters and all.
std::string any_case_literal(const std::string& text) {
  std::string pattern = "(?i)";
  for (const char c : text) {
    if (std::string_view("\\.+*?()|[]{}^$").find(c) != std::string_view::npos) {
      pattern += '\\';
    }
    pattern += c;
  }
  return pattern;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> compliance_queries(const std::string& job,
                                                                    const FleetFilter& filter) {
  const std::string job_label = "job=" + promql_string(job);
  // Hosts that match the platform, check and cause filters at each step:
  // their series of that step say so (a host that is down has none).
  std::string matching;
  if (!filter.platform.empty()) {
    matching += " and on (instance) (envcontract_info{" + job_label + ",platform=~" +
                promql_string(any_case_literal(filter.platform)) + "})";
  }
  if (!filter.check.empty() || !filter.cause.empty()) {
    std::string selector = job_label + ",severity!=\"advisory\"";
    if (!filter.check.empty()) {
      selector += ",check=~" + promql_string(any_case_literal(filter.check));
    }
    if (!filter.cause.empty()) {
      selector += ",cause=~" + promql_string(any_case_literal(filter.cause));
    }
    matching += " and on (instance) (envcontract_check_failing{" + selector + "})";
  }
  std::string verdicts = "{" + job_label;
  if (filter.verdict == "compliant" || filter.verdict == "drift" || filter.verdict == "error") {
    verdicts += ",verdict=\"" + filter.verdict + "\"";
  }
  verdicts += "}";
  std::vector<std::pair<std::string, std::string>> queries;
  if (filter.verdict.empty() || verdicts.find("verdict=") != std::string::npos) {
    // Each agent exports 1 for its verdict and 0 for the others; an
    // agent scraped by a pair of servers (each series twice) counts once.
    queries.emplace_back("verdicts",
                         "count by (verdict) ((max by (instance, verdict) "
                         "(envcontract_host_verdict" +
                             verdicts + ") == 1)" + matching + ")");
  }
  if (filter.verdict.empty() || filter.verdict == "unavailable") {
    queries.emplace_back("down",
                         "count((max by (instance) (up{" + job_label + "}) == 0)" + matching + ")");
  }
  return queries;
}

ComplianceHistory history_from_samples(const std::map<std::string, Json>& results, long start,
                                       long end, int step_seconds) {
  ComplianceHistory history;
  history.step_seconds = step_seconds;
  if (step_seconds <= 0 || end < start) {
    return history;
  }
  std::map<long, CompliancePoint> points;
  for (long t = start; t <= end; t += step_seconds) {
    points[t].time = rfc3339(static_cast<double>(t));
  }
  const auto each_value = [&](const Json& series, const auto& use) {
    if (!series.is_object() || !series.contains("values") || !series["values"].is_array()) {
      return;
    }
    for (const auto& pair : series["values"]) {
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number()) {
        continue;
      }
      const auto found = points.find(std::lround(pair[0].get<double>()));
      if (found != points.end()) {
        use(found->second, static_cast<int>(std::lround(sample_value({{"value", pair}}))));
      }
    }
  };
  for (const auto& series : result_of(results, "verdicts")) {
    const std::string verdict = label(series, "verdict");
    each_value(series, [&](CompliancePoint& point, int count) {
      if (verdict == "compliant") {
        point.compliant = count;
      } else if (verdict == "drift") {
        point.drift = count;
      } else if (verdict == "error") {
        point.error = count;
      }
    });
  }
  for (const auto& series : result_of(results, "down")) {
    each_value(series, [](CompliancePoint& point, int count) { point.down = count; });
  }
  for (auto& [time, point] : points) {
    history.points.push_back(std::move(point));
  }
  return history;
}

namespace {

common::Result<ComplianceHistory> history_between(
    const HostAddress& prometheus, const std::vector<std::pair<std::string, std::string>>& queries,
    long start, long end, int step, const ClientOptions& options) {
  std::map<std::string, Json> results;
  for (const auto& [name, query] : queries) {
    auto result = ask(prometheus,
                      "/api/v1/query_range?start=" + std::to_string(start) +
                          "&end=" + std::to_string(end) + "&step=" + std::to_string(step),
                      query, options);
    if (!result) {
      return common::Error{result.error()};
    }
    results[name] = std::move(result.value());
  }
  return history_from_samples(results, start, end, step);
}

int step_for(long seconds, int points) {
  return static_cast<int>(std::max<long>(60, seconds / std::max(1, points)));
}

}  // namespace

common::Result<ComplianceHistory> history_from_prometheus(const HostAddress& prometheus,
                                                          const std::string& job,
                                                          const FleetFilter& filter,
                                                          std::chrono::seconds range, int points,
                                                          const ClientOptions& options) {
  const auto queries = compliance_queries(job, filter);
  if (queries.empty()) {
    ComplianceHistory none;
    none.problem =
        "Prometheus holds no pending state (an agent exports no verdict while its first scan "
        "runs): there is no chart of it";
    return none;
  }
  // Ending now: the latest point is the fleet as the view shows it.
  const long end = unix_now();
  int step = step_for(range.count(), points);
  long start = end - range.count() / step * step;
  auto history = history_between(prometheus, queries, start, end, step, options);
  if (!history) {
    return history;
  }
  // A window that fits the data: when it begins later than the range, ask
  // again from where it begins, in finer steps (a fleet watched for a day
  // is not a week of empty bars and a sliver).
  const auto& found = history->points;
  const auto first = std::find_if(found.begin(), found.end(), [](const CompliancePoint& point) {
    return point.compliant + point.drift + point.error + point.down > 0;
  });
  if (first != found.begin() && first != found.end()) {
    const long begins = start + static_cast<long>(first - found.begin() - 1) * step;
    const int finer = step_for(end - begins, points);
    if (finer < step) {
      step = finer;
      start = end - (end - begins) / step * step;
      history = history_between(prometheus, queries, start, end, step, options);
    }
  }
  if (history) {
    // Steps before the data begins say nothing: left out.
    auto& steps = history->points;
    const auto data = std::find_if(steps.begin(), steps.end(), [](const CompliancePoint& point) {
      return point.compliant + point.drift + point.error + point.down > 0;
    });
    if (data != steps.end()) {
      steps.erase(steps.begin(), data);
    }
  }
  if (history && !filter.to_json().empty()) {
    history->scope = "the hosts that matched the filters at each step";
  }
  return history;
}

}  // namespace envcontract::fleet
