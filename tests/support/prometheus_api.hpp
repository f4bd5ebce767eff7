#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace envcontract::testing {

// What a real Prometheus and Alertmanager say through their HTTP APIs, for
// tests that must wait for them to act (an evaluation, a notification)
// instead of sleeping for as long as that should take.

// Waits until every rule group of the Prometheus at `url` (http://HOST:PORT)
// has been evaluated `count` more times, each evaluation seen as a new
// `lastEvaluation` of its group in /api/v1/rules. False after `timeout`, or
// when Prometheus has no rule group.
bool wait_for_rule_evaluations(const std::string& url, int count,
                               std::chrono::milliseconds timeout);

// The alerts the Alertmanager at `url` holds (GET /api/v2/alerts: active,
// silenced and inhibited; a resolved alert is no longer listed); nullopt
// when it does not answer.
std::optional<nlohmann::ordered_json> alertmanager_alerts(const std::string& url);

// The one alert Alertmanager holds named `alertname` whose labels include
// `label` = `value`; null when there is none, and a test failure as well
// when Alertmanager does not answer.
nlohmann::ordered_json held_alert(const std::string& alertmanager_url, const std::string& alertname,
                                  const std::string& label, const std::string& value);

}  // namespace envcontract::testing
