// The shipped alert rules end to end: a real Prometheus scrapes a real agent
// on the demo host (whose torch-fl-cpu env hangs in its first device op),
// evaluates packaging/prometheus/envcontract-rules.yml and sends the alert
// to a real Alertmanager, which posts it to a webhook receiver of the
// test's own. Then the agent stops answering (SIGSTOP) for a while: the
// alert must neither resolve during the outage nor page again after it.
#include <csignal>
#include <map>

#include "common/json_text.hpp"
#include "tests/e2e/agent_fixture.hpp"
#include "tests/e2e/documented_alertmanager.hpp"
#include "tests/support/background_process.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/prometheus_api.hpp"
#include "tests/support/webhook_receiver.hpp"

namespace envcontract {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers

constexpr const char* k_prometheus = "/usr/bin/prometheus";
constexpr const char* k_alertmanager = "/usr/bin/prometheus-alertmanager";

// The alerts Alertmanager has posted so far, as (alertname, status, labels).
std::vector<Json> posted_alerts(const WebhookReceiver& receiver) {
  std::vector<Json> alerts;
  for (const auto& request : receiver.requests()) {
    const auto body = Json::parse(request.body, nullptr, false);
    if (body.is_object() && body.contains("alerts")) {
      for (const auto& alert : body["alerts"]) {
        alerts.push_back(alert);
      }
    }
  }
  return alerts;
}

TEST(Alerting, AHangingCheckReachesAlertmanagerThroughTheShippedRules) {
  for (const char* program : {k_prometheus, k_alertmanager}) {
    if (!std::filesystem::exists(program)) {
      GTEST_SKIP() << program
                   << " is not installed (prometheus, prometheus-alertmanager; scripts/test "
                      "installs them)";
    }
  }
  TempDir dir;
  AgentProcess agent(dir.path(),
                     {"--contract", quick_demo_contract(dir.path()).string(), "--prefix",
                      (demo_host() / "miniconda3/envs/torch-fl-cpu").string(), "--image-tag-file",
                      (demo_host() / "etc/flagos-image").string(), "--database",
                      (dir.path() / "agent.db").string()});
  wait_for_report(agent);

  WebhookReceiver receiver;
  const int alertmanager_port = free_loopback_port();
  write_text(dir.path() / "alertmanager.yml",
             "route:\n  receiver: test\n  group_by: [alertname]\n  group_wait: 0s\n"
             "  group_interval: 1s\n  repeat_interval: 1h\n"
             "receivers:\n  - name: test\n    webhook_configs:\n      - url: " +
                 receiver.url("/alerts") + "\n");
  BackgroundProcess alertmanager(
      {k_alertmanager, "--config.file=" + (dir.path() / "alertmanager.yml").string(),
       "--storage.path=" + (dir.path() / "alertmanager").string(),
       "--web.listen-address=127.0.0.1:" + std::to_string(alertmanager_port),
       "--cluster.listen-address="},
      dir.path() / "alertmanager.log");

  const auto rules =
      std::filesystem::path(ENVCONTRACT_SOURCE_DIR) / "packaging/prometheus/envcontract-rules.yml";
  const std::string target = "127.0.0.1:" + std::to_string(agent.port());
  write_text(dir.path() / "prometheus.yml",
             "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
             "rule_files:\n  - " +
                 rules.string() +
                 "\nalerting:\n  alertmanagers:\n    - static_configs:\n        - targets: "
                 "['127.0.0.1:" +
                 std::to_string(alertmanager_port) +
                 "']\n"
                 "scrape_configs:\n  - job_name: envcontract\n    static_configs:\n"
                 "      - targets: ['" +
                 target + "']\n");
  const std::string prometheus_url = "http://127.0.0.1:" + std::to_string(free_loopback_port());
  BackgroundProcess prometheus(
      {k_prometheus, "--config.file=" + (dir.path() / "prometheus.yml").string(),
       "--storage.tsdb.path=" + (dir.path() / "prometheus").string(),
       "--web.listen-address=" + prometheus_url.substr(std::string("http://").size())},
      dir.path() / "prometheus.log");

  const auto hanging = [&] {
    for (const auto& alert : posted_alerts(receiver)) {
      if (alert["labels"]["alertname"] == "EnvcontractCheckHanging") {
        return true;
      }
    }
    return false;
  };
  ASSERT_TRUE(wait_until(hanging, std::chrono::seconds(60)))
      << "no alert reached the receiver\nprometheus:\n"
      << prometheus.log() << "\nalertmanager:\n"
      << alertmanager.log();
  for (const auto& alert : posted_alerts(receiver)) {
    const auto& labels = alert["labels"];
    if (labels["alertname"] != "EnvcontractCheckHanging") {
      continue;
    }
    EXPECT_EQ(alert["status"], "firing");
    EXPECT_EQ(labels["check"], "first-device-op");
    EXPECT_EQ(labels["env"], "torch-fl-cpu");
    EXPECT_EQ(labels["cause"], "hang");
    EXPECT_EQ(labels["severity"], "critical");
    EXPECT_EQ(labels["instance"], target);
    EXPECT_EQ(alert["annotations"]["summary"],
              "check first-device-op hangs in env torch-fl-cpu on " + target);
  }

  // The outage: Prometheus' scrapes of the stopped agent time out, `up` is
  // 0 and every series of the agent goes stale.
  const auto hang_notifications = [&](const std::string& status) {
    int count = 0;
    for (const auto& alert : posted_alerts(receiver)) {
      count +=
          alert["labels"]["alertname"] == "EnvcontractCheckHanging" && alert["status"] == status
              ? 1
              : 0;
    }
    return count;
  };
  const int firing_before = hang_notifications("firing");
  const auto up_is = [&](const char* value) {
    const auto answer = http_get(prometheus_url, "/api/v1/query?query=up");
    const auto body = Json::parse(answer.body, nullptr, false);
    return body.is_object() && body.contains("data") && !body["data"]["result"].empty() &&
           body["data"]["result"][0]["value"][1] == value;
  };
  // Alertmanager's own view of the hang: a resolution or a new firing would
  // show there (no longer held; another start) before any notification does.
  const std::string alertmanager_url = "http://127.0.0.1:" + std::to_string(alertmanager_port);
  const auto held_hang = [&] {
    return held_alert(alertmanager_url, "EnvcontractCheckHanging", "instance", target);
  };
  const Json fired = held_hang();
  ASSERT_FALSE(fired.is_null()) << alertmanager.log();
  agent.signal(SIGSTOP);
  const bool went_down = wait_until([&] { return up_is("0"); }, std::chrono::seconds(30));
  // Three evaluations of the rules with the agent down: a rule the outage
  // resolves would have resolved the alert by then.
  const bool evaluated_down =
      went_down && wait_for_rule_evaluations(prometheus_url, 3, std::chrono::seconds(30));
  const Json during_outage = held_hang();
  agent.signal(SIGCONT);
  ASSERT_TRUE(went_down) << "Prometheus never saw the stopped agent down\n" << prometheus.log();
  ASSERT_TRUE(evaluated_down) << "Prometheus did not evaluate its rules\n" << prometheus.log();
  ASSERT_FALSE(during_outage.is_null()) << "the agent's outage resolved the hang it had reported";
  EXPECT_EQ(during_outage["startsAt"], fired["startsAt"]);
  EXPECT_EQ(hang_notifications("resolved"), 0)
      << "the agent's outage resolved the hang it had reported";
  ASSERT_TRUE(wait_until([&] { return up_is("1"); }, std::chrono::seconds(30))) << prometheus.log();
  ASSERT_TRUE(wait_for_rule_evaluations(prometheus_url, 3, std::chrono::seconds(30)))
      << prometheus.log();
  const Json after_outage = held_hang();
  ASSERT_FALSE(after_outage.is_null()) << "the hang resolved when its agent came back";
  EXPECT_EQ(after_outage["startsAt"], fired["startsAt"])
      << "the hang fired anew when its agent came back";
  EXPECT_EQ(hang_notifications("resolved"), 0);
  EXPECT_EQ(hang_notifications("firing"), firing_before)
      << "the hang was told again when its agent came back";
}

// The documented route groups fleet-wide: alerts posted to a real
// Alertmanager as Prometheus posts them (its v2 API), ten hosts drifting
// and three hanging at once, reach the receivers as one mail and one page.
TEST(Alerting, TheDocumentedRouteTellsAFleetWideEventOnce) {
  if (!std::filesystem::exists(k_alertmanager)) {
    GTEST_SKIP() << k_alertmanager
                 << " is not installed (prometheus-alertmanager; scripts/test installs it)";
  }
  TempDir dir;
  WebhookReceiver receiver;
  const std::string config = documented_alertmanager_config(receiver);
  ASSERT_NE(config, "") << "docs/fleet.md has no alertmanager.yml example";
  write_text(dir.path() / "alertmanager.yml", config);
  const std::string url = "http://127.0.0.1:" + std::to_string(free_loopback_port());
  BackgroundProcess alertmanager(
      {k_alertmanager, "--config.file=" + (dir.path() / "alertmanager.yml").string(),
       "--storage.path=" + (dir.path() / "alertmanager").string(),
       "--web.listen-address=" + url.substr(std::string("http://").size()),
       "--cluster.listen-address="},
      dir.path() / "alertmanager.log");

  auto alerts = Json::array();
  for (int i = 0; i < 10; ++i) {
    alerts.push_back({{"labels",
                       {{"alertname", "EnvcontractHostDrifting"},
                        {"instance", "host-" + std::to_string(i) + ":9714"},
                        {"job", "envcontract"},
                        {"severity", "warning"}}}});
  }
  for (int i = 0; i < 3; ++i) {
    alerts.push_back({{"labels",
                       {{"alertname", "EnvcontractCheckHanging"},
                        {"instance", "host-" + std::to_string(i) + ":9714"},
                        {"job", "envcontract"},
                        {"env", "torch-fl-cpu"},
                        {"check", "first-device-op"},
                        {"cause", "hang"},
                        {"severity", "critical"}}}});
  }
  ASSERT_TRUE(wait_until(
      [&] {
        return http_post(url, "/api/v2/alerts", common::json_text(alerts),
                         {{"Content-Type", "application/json"}})
                   .status == 200;
      },
      std::chrono::seconds(30)))
      << alertmanager.log();
  ASSERT_TRUE(receiver.wait_for(2, std::chrono::seconds(30))) << alertmanager.log();
  // What decides how many notifications there are: Alertmanager's groups,
  // one per receiver, each sent once (a later one only if the group changes).
  const auto groups = Json::parse(http_get(url, "/api/v2/alerts/groups").body, nullptr, false);
  ASSERT_TRUE(groups.is_array()) << groups;
  std::map<std::string, std::size_t> alerts_by_receiver;
  for (const auto& group : groups) {
    alerts_by_receiver[group["receiver"]["name"].get<std::string>()] += group["alerts"].size();
  }
  EXPECT_EQ(groups.size(), 2U) << common::json_text(groups, 1);
  EXPECT_EQ(alerts_by_receiver, (std::map<std::string, std::size_t>{
                                    {"accelerator-oncall", 3}, {"accelerator-team-mail", 10}}));

  std::map<std::string, std::vector<std::set<std::string>>> hosts_by_receiver;
  for (const auto& request : receiver.requests()) {
    const auto body = Json::parse(request.body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << request.body;
    std::set<std::string> hosts;
    for (const auto& alert : body["alerts"]) {
      hosts.insert(alert["labels"]["instance"].get<std::string>());
      EXPECT_EQ(alert["labels"]["alertname"],
                request.path == "/page" ? "EnvcontractCheckHanging" : "EnvcontractHostDrifting");
    }
    hosts_by_receiver[request.path].push_back(hosts);
  }
  ASSERT_EQ(hosts_by_receiver["/mail"].size(), 1U) << "ten drifting hosts, one mail";
  EXPECT_EQ(hosts_by_receiver["/mail"][0].size(), 10U);
  ASSERT_EQ(hosts_by_receiver["/page"].size(), 1U) << "three hanging hosts, one page";
  EXPECT_EQ(hosts_by_receiver["/page"][0],
            (std::set<std::string>{"host-0:9714", "host-1:9714", "host-2:9714"}));
}

}  // namespace
}  // namespace envcontract
