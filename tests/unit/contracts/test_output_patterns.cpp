// `expect_output` patterns: searched in what env code printed in time
// linear in the output, whatever the pattern; the patterns a linear-time
// matcher cannot run are refused when the contract loads.
#include <gtest/gtest.h>

#include "contracts/judgement.hpp"
#include "facts/stage_names.hpp"
#include "tests/support/contract_text.hpp"

namespace envcontract::contracts {
namespace {

using testing::joined;
using testing::load_checks;
using testing::messages;

// The facts of an env whose check `check_id` ran and printed `output`.
facts::EnvFacts printed(const std::string& stage, const std::string& type,
                        const std::string& output) {
  facts::ProbeRecord record;
  record.type = type;
  record.ok = true;
  record.exit_code = 0;
  record.output = output;
  facts::StageResult result;
  result.stage = stage;
  result.status = facts::StageStatus::ok;
  result.records.push_back(record);
  facts::EnvFacts env;
  env.dynamic = facts::DynamicFacts{};
  env.dynamic->stages.push_back(result);
  return env;
}

const CheckResult& only_check(const EnvJudgement& judgement) {
  EXPECT_EQ(judgement.checks.size(), 1U);
  return judgement.checks.front();
}

// std::regex backtracked through every way of splitting the a's into a and
// aa: minutes of one scan for output the env's own code chose.
TEST(OutputPatterns, ABacktrackingPatternIsJudgedOnLongOutput) {
  const auto loaded = load_checks(
      "- {id: spin, kind: smoke, code: \"print('a'*5000)\", expect_output: '(a|aa)*c'}");
  ASSERT_TRUE(loaded.contract) << joined(loaded);
  const auto judgement = judge_env(*loaded.contract, printed(facts::stage_names::smoke("spin"),
                                                             "smoke", std::string(5000, 'a')));
  const auto& check = only_check(judgement);
  EXPECT_EQ(check.status, CheckStatus::fail);
  ASSERT_TRUE(check.diagnosis);
  EXPECT_EQ(check.diagnosis->cause, "smoke_failed");
  EXPECT_EQ(judgement.verdict, EnvVerdict::drift);
}

TEST(OutputPatterns, ACommandsOutputIsSearchedNotMatchedWhole) {
  const auto loaded =
      load_checks("- {id: cards, kind: command, run: xpu-smi -L, expect_output: 'XPU [0-9]+$'}");
  ASSERT_TRUE(loaded.contract) << joined(loaded);
  const auto judged = [&](const std::string& output) {
    return only_check(judge_env(*loaded.contract,
                                printed(facts::stage_names::command("cards"), "command", output)))
        .status;
  };
  EXPECT_EQ(judged("found XPU 0, XPU 1"), CheckStatus::pass);
  // `$` is the end of the output, not of a line, unless the pattern says (?m).
  EXPECT_EQ(judged("found XPU 0\nand nothing else"), CheckStatus::fail);
}

TEST(OutputPatterns, ABackreferenceIsRefusedWhenTheContractLoads) {
  const auto loaded =
      load_checks("- kind: smoke\n  code: print('ab ab')\n  expect_output: '(\\w+) \\1'\n");
  EXPECT_FALSE(loaded.contract);
  EXPECT_EQ(messages(loaded),
            (std::vector<std::string>{
                "contract.yaml:5:20: error: 'expect_output' of 'smoke' check is not a pattern "
                "envcontract can match: RE2 refuses it (invalid escape sequence: \\1); "
                "backreferences (\\1) have no linear-time match: write the repeated text out, "
                "or match any text there (.*)"}));
}

TEST(OutputPatterns, LookaroundIsRefusedWithWhatToWriteInstead) {
  const auto loaded =
      load_checks("- kind: command\n  run: nproc\n  expect_output: '^(?!0)[0-9]+'\n");
  EXPECT_FALSE(loaded.contract);
  ASSERT_EQ(messages(loaded).size(), 1U) << joined(loaded);
  EXPECT_NE(messages(loaded)[0].find("contract.yaml:5:20: error: 'expect_output' of 'command' "
                                     "check is not a pattern envcontract can match: RE2 refuses "
                                     "it (invalid perl operator: (?!)"),
            std::string::npos)
      << joined(loaded);
  EXPECT_NE(messages(loaded)[0].find("match the surrounding text itself"), std::string::npos);
}

}  // namespace
}  // namespace envcontract::contracts
