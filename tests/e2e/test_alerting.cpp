// The shipped alert rules end to end: a real Prometheus scrapes a real agent
// on the demo host (whose torch-fl-cpu env hangs in its first device op),
// evaluates packaging/prometheus/envcontract-rules.yml and sends the alert
// to a real Alertmanager, which posts it to a webhook receiver of the
// test's own.
#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/background_process.hpp"
#include "tests/support/demo_host.hpp"
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
  BackgroundProcess prometheus(
      {k_prometheus, "--config.file=" + (dir.path() / "prometheus.yml").string(),
       "--storage.tsdb.path=" + (dir.path() / "prometheus").string(),
       "--web.listen-address=127.0.0.1:" + std::to_string(free_loopback_port())},
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
}

}  // namespace
}  // namespace envcontract
