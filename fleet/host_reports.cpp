#include "fleet/host_reports.hpp"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/json_fields.hpp"
#include "common/json_from_outside.hpp"
#include "common/shown_path.hpp"
#include "common/time_text.hpp"
#include "report/printable.hpp"
#include "report/report_json.hpp"

namespace envcontract::fleet {
namespace {

using common::string_field;

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) {
    return "";
  }
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// The fields fleetctl relies on, so a foreign or broken answer is an error
// and not a crash or a silent "compliant".
std::string report_shape_problem(const Json& report) {
  if (!report.is_object()) {
    return "the answer is not a JSON object";
  }
  if (!report.contains("schema_version") || report["schema_version"] != 1) {
    return "not an envcontract report of schema version 1";
  }
  if (!report.contains("verdict") || !report["verdict"].is_string()) {
    return "the report has no verdict";
  }
  if (const auto& verdict = report["verdict"].get_ref<const std::string&>();
      verdict != "compliant" && verdict != "drift" && verdict != "error" && verdict != "pending") {
    return "the report's verdict '" + report::printable(verdict) +
           "' is none of compliant, drift, error and pending: a newer agent?";
  }
  if (!report.contains("envs") || !report["envs"].is_array()) {
    return "the report has no envs list";
  }
  return "";
}

}  // namespace

std::string HostReport::state() const {
  return report ? to_string(report->verdict) : "unavailable";
}

common::Result<Json> parse_answer(const std::string& body, const ClientOptions& options) {
  return common::parse_outside_json(body, "the answer", {.max_bytes = options.max_response_bytes});
}

common::Result<Json> get_json(const HostAddress& host, const std::string& path,
                              const ClientOptions& options, int* status) {
  const auto response = request(host, "GET", path, options);
  if (status != nullptr) {
    *status = response.status;
  }
  if (response.status == 0) {
    return common::Error{response.error};
  }
  auto json = parse_answer(response.body, options);
  if (!json) {
    return common::Error{"HTTP " + std::to_string(response.status) + ": " + json.error() +
                         (response.status == 200 ? "; is this an envcontract agent?" : "")};
  }
  if (response.status != 200) {
    const std::string message = report::printable(string_field(*json, "error"));
    return common::Error{"HTTP " + std::to_string(response.status) +
                         (message.empty() ? std::string() : ": " + message)};
  }
  return json;
}

std::vector<HostReport> fetch_reports(const std::vector<HostAddress>& hosts,
                                      const ClientOptions& options, unsigned concurrency,
                                      const std::atomic<bool>* stop, bool summaries) {
  std::vector<HostReport> results(hosts.size());
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < hosts.size();) {
      auto& result = results[i];
      result.address = hosts[i];
      if (stop != nullptr && stop->load()) {
        result.error = "not asked: stopping";
        continue;
      }
      int status = 0;
      auto report = get_json(hosts[i], "/api/v1/report", options, &status);
      const std::string error = report ? report_shape_problem(*report) : report.error();
      result.up = status != 0;
      if (error.empty()) {
        result.last_seen = common::now_rfc3339();
        auto read = report::report_from_json(*report);
        result.last_verdict = to_string(read.verdict);
        result.report = summaries ? report_summary(read) : std::move(read);
      } else {
        result.error = error;
      }
    }
  };
  std::vector<std::thread> workers;
  const auto count = std::min<std::size_t>(std::max(1U, concurrency), hosts.size());
  for (std::size_t i = 0; i < count; ++i) {
    workers.emplace_back(work);
  }
  for (auto& worker : workers) {
    worker.join();
  }
  return results;
}

common::Result<std::vector<HostAddress>> read_inventory(const std::string& path) {
  const std::string shown = common::shown_path(path);
  std::ifstream in(path);
  if (!in) {
    return common::Error{shown + ": cannot read the inventory"};
  }
  std::vector<HostAddress> hosts;
  std::string problems;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto text = trimmed(line.substr(0, line.find('#')));
    if (text.empty()) {
      continue;
    }
    auto address = parse_host_address(text);
    if (!address) {
      problems += (problems.empty() ? "" : "\n") + shown + ":" + std::to_string(number) + ": '" +
                  text + "' is not a host, host:port or http:// URL";
      continue;
    }
    hosts.push_back(std::move(*address));
  }
  if (!problems.empty()) {
    return common::Error{problems};
  }
  return hosts;
}

std::vector<HostAddress> distinct_hosts(const std::vector<HostAddress>& hosts,
                                        std::vector<std::string>& repeated) {
  std::vector<HostAddress> distinct;
  for (const auto& host : hosts) {
    // Host names are case-insensitive: NODE-1 and node-1 are one agent.
    const auto key = [](const HostAddress& address) {
      std::string url = address.base_url();
      std::transform(url.begin(), url.end(), url.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      return url;
    };
    const auto same = std::find_if(distinct.begin(), distinct.end(),
                                   [&](const auto& seen) { return key(seen) == key(host); });
    if (same == distinct.end()) {
      distinct.push_back(host);
    } else {
      repeated.push_back(host.text + " (the same agent as " + same->text + ")");
    }
  }
  return distinct;
}

report::Report report_summary(const report::Report& report) {
  // The failing checks, with their id, status, severity and cause alone.
  const auto failing_checks = [](const std::vector<report::CheckReport>& checks) {
    std::vector<report::CheckReport> failing;
    for (const auto& check : checks) {
      if (check.status == contracts::CheckStatus::fail ||
          check.status == contracts::CheckStatus::error) {
        report::CheckReport kept;
        kept.id = check.id;
        kept.status = check.status;
        kept.severity = check.severity;
        kept.diagnosis =
            contracts::Diagnosis{report::diagnosis_of(check).cause, "", Json::object(), ""};
        failing.push_back(std::move(kept));
      }
    }
    return failing;
  };
  report::Report summary;
  summary.schema_version = report.schema_version;
  summary.verdict = report.verdict;
  summary.scanned_at = report.scanned_at;
  summary.contract = {report.contract.name, "", report.contract.sha256, report.contract.platform};
  summary.image.value = report.image.value;
  summary.source = report.source;
  for (const auto& target : report.targets) {
    summary.targets.push_back({target.name, "", failing_checks(target.checks)});
  }
  for (const auto& env : report.envs) {
    report::EnvReport kept;
    kept.name = env.name;
    kept.verdict = env.verdict;
    kept.summary = env.summary;
    kept.checks = failing_checks(env.checks);
    summary.envs.push_back(std::move(kept));
  }
  return summary;
}

int fleet_exit_status(const std::vector<HostReport>& hosts) {
  bool drift = false;
  for (const auto& host : hosts) {
    const auto state = host.state();
    // A partial report (the agent's first scan is running) judges nothing yet.
    if (state == "unavailable" || state == "error" || state == "pending") {
      return 2;
    }
    drift = drift || state != "compliant";
  }
  return drift ? 1 : 0;
}

}  // namespace envcontract::fleet
