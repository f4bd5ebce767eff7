// The table people read: a summary line, the host's reasons, a row per
// failing check with its cause and summary, evidence and remedy with -v.
#include "report/report_table.hpp"

#include <gtest/gtest.h>

namespace envcontract::report {
namespace {

Report drifting() {
  Report report;
  report.host = "xpu-07";
  report.verdict = Verdict::drift;
  report.contract.name = "kunlunxin";
  report.scanned_at = "2026-12-06T07:00:00Z";
  report.reasons = {"no env complies"};
  report.compliant_envs = {};
  ContainerReport container;
  container.name = "trainer";
  container.image = {"", "", "no image reference"};
  container.envs = {"trainer:app"};
  report.containers = {container};
  EnvReport env;
  env.name = "torch-fl";
  env.verdict = contracts::EnvVerdict::drift;
  CheckReport torch;
  torch.id = "torch-cpu";
  torch.status = contracts::CheckStatus::fail;
  torch.diagnosis = contracts::Diagnosis{
      "cuda_build", "CUDA build of torch", {{"version", "2.10.0+cu129"}}, "install the CPU build"};
  torch.since = "2026-12-01T00:00:00Z";
  torch.flapping = true;
  CheckReport hint = torch;
  hint.id = "hint";
  hint.severity = contracts::Severity::advisory;
  CheckReport fine;
  fine.id = "python";
  fine.status = contracts::CheckStatus::pass;
  env.checks = {torch, hint, fine};
  EnvReport ok;
  ok.name = "base\x1b[31m";
  ok.verdict = contracts::EnvVerdict::compliant;
  report.envs = {env, ok};
  report.problems = {{"/home/bob", "permission denied"}};
  return report;
}

TEST(ReportTable, ShowsEachFailingCheckWithItsCause) {
  const std::string table = render_table(drifting(), {false, false});
  EXPECT_EQ(table.rfind("xpu-07: drift; compliant envs: none; contract kunlunxin (scanned "
                        "2026-12-06T07:00:00Z)\n  no env complies\n",
                        0),
            0U)
      << table;
  EXPECT_NE(table.find("  container trainer: image unknown (no image reference); envs: "
                       "trainer:app\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find(
                "torch-fl      drift      torch-cpu  cuda_build             CUDA build of torch\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find(
                "                         hint       cuda_build (advisory)  CUDA build of torch\n"),
            std::string::npos)
      << table;
  EXPECT_EQ(table.find("python"), std::string::npos) << "a passing check has no row";
  EXPECT_NE(table.find("base\\x1b[31m"), std::string::npos)
      << "an env's name cannot colour the terminal";
  EXPECT_EQ(table.find('\x1b'), std::string::npos) << table;
  EXPECT_NE(table.find("complies"), std::string::npos) << table;
  EXPECT_NE(table.find("warning: /home/bob: permission denied\n"), std::string::npos) << table;
  EXPECT_EQ(table.find("remedy"), std::string::npos) << "only with -v";
}

TEST(ReportTable, VerboseAddsEvidenceRemedyAndSince) {
  const std::string table = render_table(drifting(), {true, false});
  EXPECT_NE(table.find("evidence:\n"), std::string::npos) << table;
  EXPECT_NE(table.find("version: 2.10.0+cu129"), std::string::npos) << table;
  EXPECT_NE(table.find("remedy:   install the CPU build\n"), std::string::npos) << table;
  EXPECT_NE(table.find("since:    2026-12-01T00:00:00Z (flapping)\n"), std::string::npos) << table;
}

TEST(ReportTable, ColoursTheVerdictOnlyWhenAsked) {
  EXPECT_NE(render_table(drifting(), {false, true}).find("\x1b[31mdrift\x1b[0m"),
            std::string::npos);
}

}  // namespace
}  // namespace envcontract::report
