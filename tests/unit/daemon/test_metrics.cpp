// The report's Prometheus series, rendered from a snapshot with no socket:
// the host's and each env's verdict, containers up or not, and each failing
// check with its cause and severity.
#include "daemon/metrics.hpp"

#include <gtest/gtest.h>

#include "daemon/agent.hpp"

namespace envcontract::daemon {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

report::Report drifting() {
  report::Report report;
  report.verdict = report::Verdict::drift;
  report.image.value = "harbor.example/flagos:2.1.2";
  report::ContainerReport down;
  down.name = "trainer";
  down.problem = "the container is not running";
  report::ContainerReport up;
  up.name = "server";
  up.image.value = "harbor.example/flagos:2.2.0";
  report.containers = {down, up};
  report::EnvReport env;
  env.name = "torch-fl";
  env.verdict = contracts::EnvVerdict::drift;
  report::CheckReport torch;
  torch.id = "torch-cpu";
  torch.status = contracts::CheckStatus::fail;
  torch.diagnosis = contracts::Diagnosis{"cuda_build", "CUDA build", report::Json::object(), ""};
  report::CheckReport hint = torch;
  hint.id = "hint";
  hint.severity = contracts::Severity::advisory;
  hint.status = contracts::CheckStatus::error;
  hint.diagnosis.reset();
  env.checks = {torch, hint};
  report::EnvReport inside;
  inside.name = "server:app";
  inside.container = "server";
  inside.verdict = contracts::EnvVerdict::compliant;
  report.envs = {env, inside};
  return report;
}

TEST(ReportMetrics, SayTheVerdictsAndEachFailingCheck) {
  AgentSnapshot snapshot;
  snapshot.report = std::make_shared<const report::Report>(drifting());
  const std::string text = render_report_metrics(snapshot, "1.0");
  EXPECT_TRUE(has_line(text, "envcontract_host_verdict{verdict=\"drift\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "envcontract_host_verdict{verdict=\"compliant\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "envcontract_host_compliant 0")) << text;
  EXPECT_TRUE(has_line(text, "envcontract_env_compliant{env=\"torch-fl\"} 0")) << text;
  EXPECT_TRUE(
      has_line(text, "envcontract_env_compliant{container=\"server\",env=\"server:app\"} 1"))
      << text;
  EXPECT_TRUE(has_line(text, "envcontract_container_up{container=\"trainer\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "envcontract_container_up{container=\"server\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "envcontract_envs{verdict=\"drift\"} 1")) << text;
  EXPECT_TRUE(has_line(text,
                       "envcontract_check_failing{cause=\"cuda_build\",check=\"torch-cpu\","
                       "env=\"torch-fl\",severity=\"required\",status=\"fail\"} 1"))
      << text;
  EXPECT_TRUE(has_line(text,
                       "envcontract_check_failing{cause=\"\",check=\"hint\",env=\"torch-fl\","
                       "severity=\"advisory\",status=\"error\"} 1"))
      << "a check not judged has no cause: " << text;
}

TEST(ReportMetrics, WithoutAReportNoVerdictIsOne) {
  const std::string text = render_report_metrics(AgentSnapshot{}, "1.0");
  for (const char* verdict : {"compliant", "drift", "error"}) {
    EXPECT_TRUE(
        has_line(text, std::string("envcontract_host_verdict{verdict=\"") + verdict + "\"} 0"))
        << text;
  }
  EXPECT_EQ(text.find("envcontract_check_failing{"), std::string::npos) << text;
  EXPECT_EQ(text.find("envcontract_container_up"), std::string::npos) << text;
}

}  // namespace
}  // namespace envcontract::daemon
