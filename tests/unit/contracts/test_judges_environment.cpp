// contracts/judges_environment.cpp: the variables an activated (or bare) env
// gives its processes, and the search paths among them, against the contract.
#include <gtest/gtest.h>

#include <string>

#include "common/json_text.hpp"
#include "contracts/judgement.hpp"
#include "tests/support/contract_text.hpp"

namespace envcontract {
namespace {

using contracts::CheckStatus;
using contracts::EnvVerdict;
using testing::cause_of;
using testing::check_of;
using testing::judge_one;
using testing::shown;

// An env whose activation sets XPU_ROOT on top of a bare PATH.
facts::EnvFacts activated_env() {
  facts::EnvFacts env;
  env.env.name = "e";
  env.env.prefix = "/opt/envs/e";
  env.activation.bare = {{"PATH", "/usr/bin:/bin"}};
  env.activation.activated = {{"PATH", "/opt/envs/e/bin:/usr/bin:/bin"},
                              {"XPU_ROOT", "/usr/local/xpu"}};
  return env;
}

// An env whose activation script failed: probes then record the bare
// environment as the activated one (facts/activation.hpp).
facts::EnvFacts failed_activation_env() {
  auto env = activated_env();
  env.activation.scripts = {"/opt/envs/e/etc/conda/activate.d/xpu.sh"};
  env.activation.problem = "activation exited with status 1";
  env.activation.activated = env.activation.bare;
  return env;
}

// ---- environment -----------------------------------------------------------

TEST(EnvironmentJudge, EqualsIsJudgedOnTheActivatedEnvironmentUnlessBareIsAsked) {
  const auto env = activated_env();
  const auto activated =
      judge_one("- {id: c, kind: environment, equals: {XPU_ROOT: /usr/local/xpu}}", env);
  EXPECT_EQ(activated.status, CheckStatus::pass) << shown(activated);
  EXPECT_EQ(activated.actual["XPU_ROOT"], "/usr/local/xpu");
  const auto bare = judge_one(
      "- {id: c, kind: environment, activation: bare, equals: {XPU_ROOT: /usr/local/xpu}}", env);
  EXPECT_EQ(bare.status, CheckStatus::fail) << shown(bare);
  EXPECT_EQ(cause_of(bare), "environment_mismatch");
  ASSERT_TRUE(bare.diagnosis);
  EXPECT_EQ(bare.diagnosis->summary,
            "XPU_ROOT is unset bare, the contract wants \"/usr/local/xpu\"");
  EXPECT_EQ(bare.diagnosis->evidence["variable"], "XPU_ROOT");
  EXPECT_TRUE(bare.diagnosis->evidence["value"].is_null());
}

TEST(EnvironmentJudge, AnotherValueFailsNamingBothValues) {
  auto env = activated_env();
  env.activation.activated["XPU_ROOT"] = "/opt/xpu-5.0";
  const auto result =
      judge_one("- {id: c, kind: environment, equals: {XPU_ROOT: /usr/local/xpu}}", env);
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  EXPECT_EQ(cause_of(result), "environment_mismatch");
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary,
            "XPU_ROOT is \"/opt/xpu-5.0\" activated, the contract wants \"/usr/local/xpu\"");
  EXPECT_EQ(result.diagnosis->evidence["value"], "/opt/xpu-5.0");
}

// Set to "" is set: `export X=` differs from leaving X out, and programs
// that test whether a variable is defined see the difference.
TEST(EnvironmentJudge, AVariableSetToTheEmptyStringIsSetNotUnset) {
  auto env = activated_env();
  env.activation.activated["XPU_ENABLE_PROFILER_TRACING"] = "";
  const std::string name = "XPU_ENABLE_PROFILER_TRACING";
  const auto set = judge_one("- {id: c, kind: environment, set: [" + name + "]}", env);
  EXPECT_EQ(set.status, CheckStatus::pass) << shown(set);
  const auto empty = judge_one("- {id: c, kind: environment, equals: {" + name + ": ''}}", env);
  EXPECT_EQ(empty.status, CheckStatus::pass) << shown(empty);
  const auto unset = judge_one("- {id: c, kind: environment, unset: [" + name + "]}", env);
  EXPECT_EQ(unset.status, CheckStatus::fail) << shown(unset);
  EXPECT_EQ(cause_of(unset), "environment_mismatch");
  ASSERT_TRUE(unset.diagnosis);
  EXPECT_EQ(unset.diagnosis->evidence["value"], "(set, 0 bytes; value not shown)");
  EXPECT_EQ(unset.diagnosis->summary,
            name +
                " is set (\"(set, 0 bytes; value not shown)\") activated; the contract wants it "
                "unset");
  // And unset is not "": an equals '' wants the variable defined.
  const auto missing =
      judge_one("- {id: c, kind: environment, equals: {XPU_CUPTI_ENABLE_DEVICE: ''}}", env);
  EXPECT_EQ(missing.status, CheckStatus::fail) << shown(missing);
  ASSERT_TRUE(missing.diagnosis);
  EXPECT_EQ(missing.diagnosis->summary,
            "XPU_CUPTI_ENABLE_DEVICE is unset activated, the contract wants \"\"");
}

// Compared as they are, shown as a report may show them: a token that
// differs fails without its value reaching the report, and the masked text
// is never what is compared.
TEST(EnvironmentJudge, ASecretIsComparedByItsValueButNeverShown) {
  auto env = activated_env();
  env.activation.activated["HF_TOKEN"] = "hf_actual_secret_value";
  const auto other =
      judge_one("- {id: c, kind: environment, equals: {HF_TOKEN: hf_wanted_token}}", env);
  EXPECT_EQ(other.status, CheckStatus::fail);
  EXPECT_EQ(shown(other).find("hf_actual_secret_value"), std::string::npos) << shown(other);
  ASSERT_TRUE(other.diagnosis);
  EXPECT_EQ(other.diagnosis->evidence["value"], "(set, 22 bytes; value not shown)");
  EXPECT_EQ(other.actual["HF_TOKEN"], "(set, 22 bytes; value not shown)");
  const auto same =
      judge_one("- {id: c, kind: environment, equals: {HF_TOKEN: hf_actual_secret_value}}", env);
  EXPECT_EQ(same.status, CheckStatus::pass) << shown(same);
  const auto masked = judge_one(
      "- {id: c, kind: environment, equals: {HF_TOKEN: '(set, 22 bytes; value not shown)'}}", env);
  EXPECT_EQ(masked.status, CheckStatus::fail) << shown(masked);
}

// What was compared up to the fault stays in `actual`; the first unmet
// rule is the diagnosis.
TEST(EnvironmentJudge, TheFirstUnmetRuleIsTheDiagnosis) {
  const auto result = judge_one(
      "- {id: c, kind: environment, equals: {XPU_ROOT: /usr/local/xpu}, set: "
      "[XPU_VISIBLE_DEVICES], "
      "unset: [LD_PRELOAD]}",
      activated_env());
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary, "XPU_VISIBLE_DEVICES is not set activated");
  EXPECT_EQ(result.diagnosis->evidence["variable"], "XPU_VISIBLE_DEVICES");
  EXPECT_EQ(result.actual["XPU_ROOT"], "/usr/local/xpu");
  EXPECT_TRUE(result.actual["XPU_VISIBLE_DEVICES"].is_null());
  EXPECT_FALSE(result.actual.contains("LD_PRELOAD"));
}

// What a bare interpreter gets is known whether or not activation worked.
TEST(EnvironmentJudge, ABareRuleIsStillJudgedWhenActivationFailed) {
  const auto env = failed_activation_env();
  const auto unset =
      judge_one("- {id: c, kind: environment, activation: bare, unset: [XPU_ROOT]}", env);
  EXPECT_EQ(unset.status, CheckStatus::pass) << shown(unset);
  const auto set =
      judge_one("- {id: c, kind: environment, activation: bare, set: [XPU_ROOT]}", env);
  EXPECT_EQ(set.status, CheckStatus::fail) << shown(set);
  ASSERT_TRUE(set.diagnosis);
  EXPECT_EQ(set.diagnosis->summary, "XPU_ROOT is not set bare");
}

// When activation failed, the probes record the bare environment as the
// activated one: an `unset` rule would pass on a variable activation may set
// (a pass without evidence) and a `set` rule fail on one it may set (a drift
// the facts do not show). Either is unknown: an error naming the failure.
TEST(EnvironmentJudge, AFailedActivationLeavesTheActivatedVariablesUnknown) {
  const auto judged = testing::judge_checks(
      "- {id: unset, kind: environment, unset: [LD_PRELOAD]}\n"
      "- {id: set, kind: environment, set: [XPU_ROOT]}\n",
      failed_activation_env());
  EXPECT_EQ(check_of(judged, "unset").status, CheckStatus::error)
      << shown(check_of(judged, "unset"));
  EXPECT_EQ(check_of(judged, "set").status, CheckStatus::error) << shown(check_of(judged, "set"));
  EXPECT_EQ(judged.verdict, EnvVerdict::error);
}

// The same when the activation step itself failed (a FactError of stage
// `activation`, the agent's fault): no drift for a variable nobody looked at.
TEST(EnvironmentJudge, AnActivationThatWasNotGatheredIsNoDrift) {
  auto env = activated_env();
  env.activation = {};
  env.errors.push_back({facts::FactError::Stage::activation, "std::bad_alloc", std::nullopt});
  const auto judged = testing::judge_checks("- {id: c, kind: environment, set: [XPU_ROOT]}", env);
  EXPECT_EQ(check_of(judged, "env:facts").status, CheckStatus::error);
  EXPECT_EQ(check_of(judged, "c").status, CheckStatus::error) << shown(check_of(judged, "c"));
  EXPECT_EQ(judged.verdict, EnvVerdict::error);
}

// ---- search_path -----------------------------------------------------------

TEST(SearchPathJudge, StartsWithIsMatchedEntryByEntryInOrder) {
  auto env = activated_env();
  const std::string value = "/usr/local/xpu/lib:/usr/local/xcudart/lib:/usr/lib";
  env.activation.activated["LD_LIBRARY_PATH"] = value;
  const auto in_order = judge_one(
      "- {id: c, kind: search_path, starts_with: [/usr/local/xpu/lib, /usr/local/xcudart/lib]}",
      env);
  EXPECT_EQ(in_order.status, CheckStatus::pass) << shown(in_order);
  EXPECT_EQ(in_order.actual, value);
  const auto reversed = judge_one(
      "- {id: c, kind: search_path, starts_with: [/usr/local/xcudart/lib, /usr/local/xpu/lib]}",
      env);
  EXPECT_EQ(reversed.status, CheckStatus::fail) << shown(reversed);
  EXPECT_EQ(cause_of(reversed), "search_path_mismatch");
  ASSERT_TRUE(reversed.diagnosis);
  EXPECT_EQ(reversed.diagnosis->summary,
            "LD_LIBRARY_PATH does not start with /usr/local/xcudart/lib (entry 1 is "
            "/usr/local/xpu/lib)");
  EXPECT_EQ(reversed.diagnosis->evidence["activation"], "activated");
}

TEST(SearchPathJudge, AnUnsetSearchPathHasNoFirstEntry) {
  const auto result =
      judge_one("- {id: c, kind: search_path, starts_with: [/usr/local/xpu/lib]}", activated_env());
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary,
            "LD_LIBRARY_PATH does not start with /usr/local/xpu/lib (entry 1 is missing)");
  EXPECT_EQ(result.diagnosis->evidence["value"], "");
}

// A directory named from a variable activation leaves unset cannot be on
// the path: the failure names the variable, not an empty directory.
TEST(SearchPathJudge, AVariableActivationLeavesUnsetIsNamed) {
  auto env = activated_env();
  env.activation.activated["LD_LIBRARY_PATH"] = "/usr/local/Ascend/lib64:/usr/lib";
  const std::string rule = "- {id: c, kind: search_path, starts_with: ['${ASCEND_HOME}/lib64']}";
  const auto unset = judge_one(rule, env);
  EXPECT_EQ(unset.status, CheckStatus::fail) << shown(unset);
  ASSERT_TRUE(unset.diagnosis);
  EXPECT_EQ(unset.diagnosis->summary,
            "LD_LIBRARY_PATH cannot start with ${ASCEND_HOME}/lib64: ASCEND_HOME is not set when "
            "the env is activated");
  EXPECT_EQ(unset.diagnosis->remedy, "set ASCEND_HOME in the env's etc/conda/activate.d script");
  env.activation.activated["ASCEND_HOME"] = "/usr/local/Ascend";
  const auto set = judge_one(rule, env);
  EXPECT_EQ(set.status, CheckStatus::pass) << shown(set);
}

TEST(SearchPathJudge, MustNotContainFindsAnEntryUnderTheDirectory) {
  auto env = activated_env();
  env.activation.activated["LD_LIBRARY_PATH"] = "/usr/local/xpu/lib:/opt/conda/lib";
  const auto result =
      judge_one("- {id: c, kind: search_path, must_not_contain: [/opt/conda]}", env);
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  EXPECT_EQ(cause_of(result), "search_path_mismatch");
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary, "LD_LIBRARY_PATH contains /opt/conda/lib, under /opt/conda");
}

// "Under" is a path's: /usr/lib64 does not lie under /usr/lib.
TEST(SearchPathJudge, ASiblingDirectoryIsNotUnderTheForbiddenOne) {
  auto env = activated_env();
  env.activation.activated["LD_LIBRARY_PATH"] = "/usr/local/xpu/lib:/usr/lib64";
  const auto result = judge_one("- {id: c, kind: search_path, must_not_contain: [/usr/lib]}", env);
  EXPECT_EQ(result.status, CheckStatus::pass) << shown(result);
}

}  // namespace
}  // namespace envcontract
