#include "cli/prometheus_fleet.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "contracts/env_facts.hpp"

namespace envcontract::cli {
namespace {

using contracts::object_field;
using contracts::string_field;

// A PromQL string literal: the job name is the operator's, quotes and all.
std::string promql_string(const std::string& text) {
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
    }
    quoted += c;
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

std::string rfc3339(double seconds) {
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
      {"env", "envcontract_env_compliant" + selector},
      {"failing", "envcontract_check_failing" + selector},
      {"last_scan", "envcontract_last_scan_timestamp_seconds" + selector},
  };
}

std::vector<HostReport> reports_from_samples(const std::map<std::string, Json>& results,
                                             const std::string& prometheus) {
  struct Host {
    bool up = false;
    std::string verdict;
    std::string last_verdict;
    Json report = Json::object();
    std::map<std::string, Json> envs;  // name -> {"name", "verdict", "checks"}
  };
  std::map<std::string, Host> hosts;
  for (const auto& sample : result_of(results, "up")) {
    hosts[label(sample, "instance")].up = sample_value(sample) == 1;
  }
  const auto each = [&](const char* query, const auto& use) {
    for (const auto& sample : result_of(results, query)) {
      const auto found = hosts.find(label(sample, "instance"));
      if (found != hosts.end()) {
        use(found->second, sample);
      }
    }
  };
  each("verdict", [](Host& host, const Json& sample) { host.verdict = label(sample, "verdict"); });
  each("last_verdict",
       [](Host& host, const Json& sample) { host.last_verdict = label(sample, "verdict"); });
  each("info", [](Host& host, const Json& sample) {
    host.report["contract"] = {{"name", label(sample, "contract")},
                               {"sha256", label(sample, "contract_sha256")}};
    host.report["agent_version"] = label(sample, "version");
    host.report["image"] = {{"value", label(sample, "image")}};
  });
  each("last_scan", [](Host& host, const Json& sample) {
    host.report["scanned_at"] = rfc3339(sample_value(sample));
  });
  each("env", [](Host& host, const Json& sample) {
    const std::string name = label(sample, "env");
    auto& env = host.envs[name];
    env["name"] = name;
    env["verdict"] = sample_value(sample) == 1 ? "compliant" : "drift";
    if (!env.contains("checks")) {
      env["checks"] = Json::array();
    }
  });
  each("failing", [](Host& host, const Json& sample) {
    const std::string env_name = label(sample, "env");
    if (env_name.empty()) {
      return;  // a target's check: the host's verdict carries it
    }
    auto& env = host.envs[env_name];
    env["name"] = env_name;
    if (!env.contains("checks")) {
      env["checks"] = Json::array();
    }
    const std::string status = label(sample, "status");
    const std::string cause = label(sample, "cause");
    env["checks"].push_back(
        {{"id", label(sample, "check")},
         {"status", status},
         {"severity", label(sample, "severity")},
         {"diagnosis", {{"cause", cause}, {"summary", cause + " (as Prometheus last scraped)"}}}});
  });

  std::vector<HostReport> reports;
  for (auto& [instance, host] : hosts) {
    HostReport entry;
    entry.address = parse_host_address(instance).value_or(HostAddress{instance, instance, 0});
    entry.address.text = instance;
    if (!host.up || host.verdict.empty()) {
      entry.error = host.up ? "Prometheus holds no verdict of it yet (its first scan is running?)"
                            : "down: Prometheus' last scrape of it failed";
      if (!host.last_verdict.empty()) {
        entry.error += " (its last verdict: " + host.last_verdict + ")";
      }
      reports.push_back(std::move(entry));
      continue;
    }
    auto& report = host.report;
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
    report["compliant_envs"] = std::move(compliant);
    report["envs"] = std::move(envs);
    entry.report = std::move(report);
    reports.push_back(std::move(entry));
  }
  return reports;
}

common::Result<std::vector<HostReport>> reports_from_prometheus(const HostAddress& prometheus,
                                                                const std::string& job,
                                                                const ClientOptions& options) {
  std::map<std::string, Json> results;
  for (const auto& [name, query] : fleet_queries(job)) {
    auto answer = get_json(prometheus, "/api/v1/query?query=" + url_encoded(query), options);
    if (!answer) {
      return common::Error{prometheus.text + ": query " + query + ": " + answer.error()};
    }
    const Json& data = object_field(*answer, "data");
    if (string_field(*answer, "status") != "success" || !data.contains("result") ||
        !data["result"].is_array()) {
      return common::Error{prometheus.text + ": query " + query +
                           ": not an answer of Prometheus' query API"};
    }
    results[name] = data["result"];
  }
  return reports_from_samples(results, prometheus.base_url());
}

}  // namespace envcontract::cli
