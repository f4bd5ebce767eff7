// contracts/judges_runtime.cpp: the checks that run an env's code (imports,
// devices, smoke), judged from the stages the dynamic probes report.
#include <gtest/gtest.h>

#include <string>

#include "common/json_text.hpp"
#include "contracts/judgement.hpp"
#include "tests/support/contract_text.hpp"

namespace envcontract {
namespace {

using contracts::CheckStatus;
using facts::StageStatus;

// The result of the one check `rule` (YAML flow) for an env whose dynamic
// probes reported `stage`.
contracts::CheckResult judge_with_stage(const std::string& rule, facts::StageResult stage) {
  auto loaded = testing::load_text("schema_version: 1\nchecks:\n  - " + rule + "\n");
  EXPECT_TRUE(loaded.contract) << testing::joined(loaded);
  if (!loaded.contract) {
    return {};
  }
  facts::EnvFacts env;
  env.env.name = "e";
  env.env.prefix = "/opt/envs/e";
  env.dynamic = facts::DynamicFacts{};
  env.dynamic->stages.push_back(std::move(stage));
  const auto judged = contracts::judge_env(*loaded.contract, env);
  EXPECT_EQ(judged.checks.size(), 1U);
  return judged.checks.empty() ? contracts::CheckResult{} : judged.checks.front();
}

// A stage whose process exited with `code` in the middle of `step`.
facts::StageResult ended_during(const std::string& stage_name, const std::string& step, int code) {
  facts::StageResult stage;
  stage.stage = stage_name;
  stage.status = StageStatus::crashed;
  stage.end.how = facts::ProcessEnd::How::exited;
  stage.end.exit_code = code;
  stage.process = "exit " + std::to_string(code);
  stage.interrupted_step = step;
  // The summary is for people: the judge must not read the step out of it.
  stage.summary = "the probe lost its stage";
  return stage;
}

TEST(RuntimeJudges, AnExitDuringAnImportNamesTheImportFromTheTypedStep) {
  const auto result = judge_with_stage("{id: imp, kind: imports, modules: [torch, vendor_plugin]}",
                                       ended_during("imports", "import vendor_plugin", 0));
  EXPECT_EQ(result.status, CheckStatus::fail);
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->cause, "ended_process");
  EXPECT_EQ(result.diagnosis->evidence["step"], "import vendor_plugin");
  EXPECT_EQ(result.diagnosis->evidence["process"], "exit 0");
  EXPECT_NE(result.diagnosis->remedy.find("python -X importtime -c 'import vendor_plugin'"),
            std::string::npos)
      << result.diagnosis->remedy;
}

TEST(RuntimeJudges, AnExitOutsideAnImportIsNotSentToImportTimings) {
  const auto result =
      judge_with_stage("{id: first-op, kind: smoke, code: 'import torch; torch.ones(1)'}",
                       ended_during("smoke:first-op", "smoke:first-op", 3));
  EXPECT_EQ(result.status, CheckStatus::fail);
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->cause, "ended_process");
  EXPECT_EQ(result.diagnosis->evidence["step"], "smoke:first-op");
  EXPECT_EQ(result.diagnosis->remedy.find("importtime"), std::string::npos)
      << result.diagnosis->remedy;
}

TEST(RuntimeJudges, AStageKilledBySignalIsACrashNotAnEnd) {
  auto stage = ended_during("imports", "import torch", 0);
  stage.end.how = facts::ProcessEnd::How::signaled;
  stage.end.signal = 11;
  stage.process = "killed by SIGSEGV";
  const auto result = judge_with_stage("{id: imp, kind: imports, modules: [torch]}", stage);
  EXPECT_EQ(result.status, CheckStatus::fail);
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->cause, "crash");
}

TEST(RuntimeJudges, AStageNotRunIsAnErrorNeverAPassOrADrift) {
  facts::StageResult stage;
  stage.stage = "imports";
  stage.status = StageStatus::stopped;
  stage.not_run = true;
  stage.summary = "not run: the scan's deadline passed";
  const auto result = judge_with_stage("{id: imp, kind: imports, modules: [torch]}", stage);
  EXPECT_EQ(result.status, CheckStatus::error);
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->cause, "stopped");
}

}  // namespace
}  // namespace envcontract
