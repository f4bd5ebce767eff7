// What the agent tells webhooks: compliance changes of the host and each
// env, envs that appear or go, and checks that start hanging; nothing for a
// scan that changes none of these.
#include "daemon/transitions.hpp"

#include <gtest/gtest.h>

#include "common/json_text.hpp"

namespace envcontract::daemon {
namespace {

using report::Json;
using Status = contracts::CheckStatus;
using Verdict = contracts::EnvVerdict;

report::CheckReport check(const std::string& id, Status status, const std::string& cause = "") {
  report::CheckReport result;
  result.id = id;
  result.status = status;
  if (!cause.empty()) {
    result.diagnosis = contracts::Diagnosis{cause, id + " fails: " + cause, Json::object(), ""};
  }
  return result;
}

report::EnvReport env(const std::string& name, Verdict verdict,
                      std::vector<report::CheckReport> checks) {
  report::EnvReport env;
  env.name = name;
  env.verdict = verdict;
  env.checks = std::move(checks);
  return env;
}

report::Report host(report::Verdict verdict, std::vector<report::EnvReport> envs) {
  report::Report report;
  report.host = "node7";
  report.verdict = verdict;
  report.envs = std::move(envs);
  return report;
}

TEST(Transitions, TheFirstReportTellsTheHostAndEveryEnv) {
  const auto first =
      host(report::Verdict::drift,
           {env("a", Verdict::compliant, {check("python", Status::pass)}),
            env("b", Verdict::drift, {check("torch", Status::fail, "wrong_build")})});
  const auto events = transitions(nullptr, first);
  ASSERT_EQ(events.size(), 3U) << common::json_text(events, 2);
  EXPECT_EQ(events[0], Json({{"kind", "host"}, {"from", nullptr}, {"to", "drift"}}));
  EXPECT_EQ(events[1],
            Json({{"kind", "env"}, {"env", "a"}, {"from", nullptr}, {"to", "compliant"}}));
  EXPECT_EQ(events[2]["failing"], Json::array({{{"check", "torch"},
                                                {"status", "fail"},
                                                {"cause", "wrong_build"},
                                                {"summary", "torch fails: wrong_build"}}}));
}

TEST(Transitions, OnlyChangesOfComplianceAndNewHangsAreTold) {
  const auto before = host(report::Verdict::drift,
                           {env("a", Verdict::compliant, {check("python", Status::pass)}),
                            env("b", Verdict::drift, {check("torch", Status::fail, "wrong_build")}),
                            env("c", Verdict::drift, {check("smoke", Status::fail, "hang")}),
                            env("gone", Verdict::compliant, {})});
  // b stays drifting for another cause, c keeps hanging: nothing to tell.
  const auto same = host(report::Verdict::drift,
                         {env("a", Verdict::compliant, {check("python", Status::pass)}),
                          env("b", Verdict::error, {check("torch", Status::error, "probe_error")}),
                          env("c", Verdict::drift, {check("smoke", Status::fail, "hang")}),
                          env("gone", Verdict::compliant, {})});
  EXPECT_EQ(transitions(&before, same), Json::array());

  const auto after = host(report::Verdict::drift,
                          {env("a", Verdict::drift, {check("devices", Status::fail, "hang")}),
                           env("b", Verdict::compliant, {check("torch", Status::pass)}),
                           env("c", Verdict::drift, {check("smoke", Status::fail, "hang")}),
                           env("new", Verdict::drift, {})});
  const auto events = transitions(&before, after);
  ASSERT_EQ(events.size(), 5U) << common::json_text(events, 2);
  EXPECT_EQ(events[0]["kind"], "env");
  EXPECT_EQ(events[0]["env"], "a");
  EXPECT_EQ(events[0]["to"], "drift");
  EXPECT_EQ(events[0]["failing"][0]["cause"], "hang");
  EXPECT_EQ(events[1], Json({{"kind", "hang"},
                             {"env", "a"},
                             {"check", "devices"},
                             {"summary", "devices fails: hang"}}));
  EXPECT_EQ(events[2],
            Json({{"kind", "env"}, {"env", "b"}, {"from", "drift"}, {"to", "compliant"}}));
  EXPECT_EQ(events[3]["env"], "new");
  EXPECT_EQ(events[3]["from"], nullptr);
  EXPECT_EQ(events[4],
            Json({{"kind", "env"}, {"env", "gone"}, {"from", "compliant"}, {"to", nullptr}}));

  const auto fixed = host(report::Verdict::compliant, {env("a", Verdict::compliant, {})});
  const auto host_event = transitions(&after, fixed)[0];
  EXPECT_EQ(host_event, Json({{"kind", "host"}, {"from", "drift"}, {"to", "compliant"}}));
}

}  // namespace
}  // namespace envcontract::daemon
