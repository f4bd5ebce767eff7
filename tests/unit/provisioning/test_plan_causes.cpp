// The planner and the table docs/provisioning.md lists (cause_planning) say
// the same of every env cause: a check failing with a cause the table calls
// "manual" is planned as a step a person takes, with what to ask of whom;
// "rescan" as a new scan; "not planned" as a check left unplanned with why.
#include <gtest/gtest.h>

#include <string>

#include "contracts/contract.hpp"
#include "provisioning/plan.hpp"
#include "report/report_json.hpp"

namespace envcontract::provisioning {
namespace {

// A report of one drifting env with one check failing with `cause`.
Json report_failing_with(const std::string& cause) {
  return {{"host", "h"},
          {"envs",
           {{{"name", "e"},
             {"prefix", "/opt/e"},
             {"kind", "venv"},
             {"verdict", "drift"},
             {"checks",
              {{{"id", "c"},
                {"kind", "command"},
                {"status", "fail"},
                {"diagnosis", {{"cause", cause}, {"summary", "it failed: " + cause}}}}}}}}}};
}

TEST(PlanCauses, EachCauseIsPlannedAsTheTableSays) {
  const contracts::Contract contract;
  std::size_t checked = 0;
  for (const auto& row : cause_planning()) {
    // Image causes are the host's (its targets), planned apart; waived is a status.
    if (row.cause.starts_with("image_") || row.cause == "waived" ||
        row.cause == "activation_required" || row.cause == "waiver_expired") {
      continue;
    }
    SCOPED_TRACE(row.cause);
    const auto plan =
        build_plan(report::report_from_json(report_failing_with(row.cause)), contract);
    ASSERT_EQ(plan.envs.size(), 1U);
    const auto& env = plan.envs[0];
    if (row.planned_as == "manual") {
      ASSERT_EQ(env.steps.size(), 1U) << to_json(env);
      EXPECT_EQ(env.steps[0].action, StepAction::manual);
      EXPECT_FALSE(env.steps[0].ask.empty());
      EXPECT_EQ(env.steps[0].why, "it failed: " + row.cause);
      EXPECT_TRUE(env.unplanned.empty()) << to_json(env);
      ++checked;
    } else if (row.planned_as == "rescan") {
      ASSERT_EQ(env.steps.size(), 1U) << to_json(env);
      EXPECT_EQ(env.steps[0].action, StepAction::rescan);
      ++checked;
    } else if (row.planned_as == "not planned") {
      EXPECT_TRUE(env.steps.empty()) << to_json(env);
      ASSERT_EQ(env.unplanned.size(), 1U) << to_json(env);
      EXPECT_EQ(env.unplanned[0].cause, row.cause);
      ++checked;
    }
  }
  EXPECT_GE(checked, 25U);
}

TEST(PlanCauses, WhatEachManualStepAsksIsSaidOfWhomAndWhat) {
  const contracts::Contract contract;
  const auto ask_for = [&](const std::string& cause) {
    const auto plan = build_plan(report::report_from_json(report_failing_with(cause)), contract);
    return plan.envs.at(0).steps.at(0).ask;
  };
  EXPECT_EQ(ask_for("hang"),
            "the platform team: the vendor runtime and driver versions this build of the plugin "
            "needs (the evidence shows where it waits)");
  EXPECT_EQ(ask_for("crash"),
            "the platform team: the vendor runtime and driver versions this build of the plugin "
            "needs (the evidence shows where it crashed)");
  EXPECT_EQ(ask_for("too_few_devices"), ask_for("missing_device_nodes"));
  EXPECT_EQ(ask_for("unsafe_permissions"),
            "the env's owner: make it writable by its owner only (chmod go-w)");
  EXPECT_EQ(ask_for("stalled_read"),
            "whoever runs the filesystem that does not answer (findmnt -T PATH): mend or unmount "
            "it");
  EXPECT_EQ(ask_for("forbidden_library"),
            "the vendor runtime as the contract wants it on the loader's path");

  const auto unknown =
      build_plan(report::report_from_json(report_failing_with("something_new")), contract);
  ASSERT_EQ(unknown.envs.at(0).unplanned.size(), 1U);
  EXPECT_EQ(unknown.envs[0].unplanned[0].why,
            "no plan for this cause (docs/provisioning.md): it failed: something_new");
}

// PyPI's torch has no HIP: without a recipe that names the ROCm build, a
// missing HIP build is a step a person takes, never an install that would
// fail the same check again.
TEST(PlanCauses, AMissingHipBuildIsNotInstalledFromPyPI) {
  const contracts::Contract contract;
  Json report = report_failing_with("hip_missing");
  report["envs"][0]["checks"][0]["kind"] = "torch";
  report["envs"][0]["checks"][0]["expected"] = {{"base", "2.5.1"}, {"hip", {{"mode", "required"}}}};
  const auto plan = build_plan(report::report_from_json(report), contract);
  ASSERT_EQ(plan.envs.size(), 1U);
  const auto& env = plan.envs[0];
  for (const auto& step : env.steps) {
    EXPECT_NE(step.action, StepAction::install_distribution) << to_json(env);
  }
  ASSERT_FALSE(env.steps.empty()) << to_json(env);
  EXPECT_EQ(env.steps[0].action, StepAction::manual);
  EXPECT_NE(env.steps[0].ask.find("download.pytorch.org/whl/rocm"), std::string::npos)
      << env.steps[0].ask;
}

}  // namespace
}  // namespace envcontract::provisioning
