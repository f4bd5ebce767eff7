#include "tests/support/prometheus_api.hpp"

#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "tests/support/http_client.hpp"

namespace envcontract::testing {

using Json = nlohmann::ordered_json;

namespace {

// Each rule group's last evaluation as Prometheus reports it, by group name
// (the timestamps are compared for change only, never parsed).
std::map<std::string, std::string> last_evaluations(const std::string& url) {
  std::map<std::string, std::string> evaluations;
  const auto answer = http_get(url, "/api/v1/rules?type=alert");
  const auto body = Json::parse(answer.body, nullptr, false);
  if (answer.status != 200 || !body.is_object() || !body.contains("data")) {
    return evaluations;
  }
  for (const auto& group : body["data"].value("groups", Json::array())) {
    evaluations[group.value("file", "") + "/" + group.value("name", "")] =
        group.value("lastEvaluation", "");
  }
  return evaluations;
}

}  // namespace

bool wait_for_rule_evaluations(const std::string& url, int count,
                               std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // The groups as first seen (a request that failed is asked again).
  auto previous = last_evaluations(url);
  while (previous.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    previous = last_evaluations(url);
  }
  std::map<std::string, int> seen;  // new evaluations of each group since the call
  while (!previous.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto now = last_evaluations(url);
    if (now.empty()) {
      continue;  // no answer this time
    }
    bool all_done = true;
    for (const auto& [group, evaluated] : now) {
      // A group first seen now starts counting from here.
      const auto before = previous.find(group);
      if (before != previous.end() && before->second != evaluated) {
        ++seen[group];
      }
      all_done = all_done && seen[group] >= count;
    }
    previous = now;
    if (all_done) {
      return true;
    }
  }
  return false;
}

std::optional<Json> alertmanager_alerts(const std::string& url) {
  const auto answer = http_get(url, "/api/v2/alerts");
  auto alerts = Json::parse(answer.body, nullptr, false);
  if (answer.status != 200 || !alerts.is_array()) {
    return std::nullopt;
  }
  return alerts;
}

Json held_alert(const std::string& alertmanager_url, const std::string& alertname,
                const std::string& label, const std::string& value) {
  const auto alerts = alertmanager_alerts(alertmanager_url);
  if (!alerts) {
    ADD_FAILURE() << "Alertmanager at " << alertmanager_url << " does not answer /api/v2/alerts";
    return Json();
  }
  for (const auto& alert : *alerts) {
    const auto& labels = alert.value("labels", Json::object());
    if (labels.value("alertname", "") == alertname && labels.value(label, "") == value) {
      return alert;
    }
  }
  return Json();
}

}  // namespace envcontract::testing
