// The endpoints answered from the agent's snapshot, as plain functions: the
// answer to each request is data, tested without a socket or an agent.
#include "daemon/snapshot_routes.hpp"

#include <gtest/gtest.h>

namespace envcontract::daemon {
namespace {

using report::Json;

Json body_of(const PlainResponse& answer) {
  return Json::parse(answer.body);
}

AgentSnapshot judged() {
  report::Report report;
  report.host = "xpu-07";
  report.scanned_at = "2026-12-06T07:00:00Z";
  report.scan_id = 12;
  report.verdict = report::Verdict::drift;
  report.reasons = {"no env complies"};
  report::EnvReport drifting;
  drifting.name = "torch-fl";
  drifting.verdict = contracts::EnvVerdict::drift;
  report::EnvReport fine;
  fine.name = "base";
  fine.verdict = contracts::EnvVerdict::compliant;
  report.envs = {drifting, fine};
  AgentSnapshot snapshot;
  snapshot.report = std::make_shared<const report::Report>(report);
  snapshot.plan = std::make_shared<const Json>(
      Json{{"host", "xpu-07"}, {"envs", Json::array({{{"env", "torch-fl"}, {"steps", 2}}})}});
  return snapshot;
}

TEST(SnapshotRoutes, BeforeTheFirstScanTheyAnswer503) {
  AgentSnapshot first;
  first.scanning = true;
  for (const auto& answer : {env_answer(first, "x"), compliance_answer(first),
                             plan_answer(first, {"GET", "/api/v1/plan", {}}, {})}) {
    EXPECT_EQ(answer.status, 503);
    EXPECT_EQ(body_of(answer)["scanning"], true) << answer.body;
  }
  EXPECT_EQ(contract_answer(first).status, 503);
  EXPECT_EQ(body_of(contract_answer(first))["error"], "no contract is loaded");
}

TEST(SnapshotRoutes, AnEnvIsItsReportEntryWithTheScanItCameFrom) {
  const auto snapshot = judged();
  const auto answer = env_answer(snapshot, "torch-fl");
  ASSERT_EQ(answer.status, 200);
  const Json body = body_of(answer);
  EXPECT_EQ(body["verdict"], "drift");
  EXPECT_EQ(body["host"], "xpu-07");
  EXPECT_EQ(body["scan_id"], 12);
  const auto missing = env_answer(snapshot, "torch-fI");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(body_of(missing)["envs"], Json({"torch-fl", "base"}));
}

TEST(SnapshotRoutes, ComplianceIs200OnlyForACompliantHost) {
  auto snapshot = judged();
  auto answer = compliance_answer(snapshot);
  EXPECT_EQ(answer.status, 503);
  EXPECT_EQ(body_of(answer)["reasons"], Json({"no env complies"}));
  auto report = *snapshot.report;
  report.verdict = report::Verdict::compliant;
  snapshot.report = std::make_shared<const report::Report>(report);
  answer = compliance_answer(snapshot);
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(body_of(answer)["verdict"], "compliant");
}

TEST(SnapshotRoutes, APlanIsTheHostsOrOneEnvs) {
  const auto snapshot = judged();
  const auto whole = plan_answer(snapshot, {"GET", "/api/v1/plan", {}}, {true, false});
  ASSERT_EQ(whole.status, 200);
  EXPECT_EQ(body_of(whole)["provisioning"], Json({{"enabled", true}, {"token_required", false}}));
  EXPECT_EQ(body_of(whole)["envs"].size(), 1U);

  const auto one = plan_answer(snapshot, {"GET", "/api/v1/plan", {{"env", "torch-fl"}}}, {});
  EXPECT_EQ(body_of(one)["envs"][0]["steps"], 2);
  const auto complies = plan_answer(snapshot, {"GET", "/api/v1/plan", {{"env", "base"}}}, {});
  EXPECT_EQ(complies.status, 200);
  EXPECT_EQ(body_of(complies)["envs"], Json::array()) << "known and compliant: nothing to do";
  EXPECT_EQ(plan_answer(snapshot, {"GET", "/api/v1/plan", {{"env", "gone"}}}, {}).status, 404);
  const auto odd = plan_answer(snapshot, {"GET", "/api/v1/plan", {{"envs", "base"}}}, {});
  EXPECT_EQ(odd.status, 400);
  EXPECT_EQ(body_of(odd)["error"], "unknown parameter 'envs'; plan takes env");

  auto unplanned = snapshot;
  unplanned.plan.reset();
  EXPECT_EQ(plan_answer(unplanned, {"GET", "/api/v1/plan", {}}, {}).status, 503);
}

}  // namespace
}  // namespace envcontract::daemon
