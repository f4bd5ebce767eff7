// What the agent tells webhooks: compliance changes of the host and each
// env, envs that appear or go, and checks that start hanging; nothing for a
// scan that changes none of these.
#include "daemon/transitions.hpp"

#include <gtest/gtest.h>

#include "common/json_text.hpp"

namespace envcontract::daemon {
namespace {

using report::Json;

Json check(const std::string& id, const std::string& status, const std::string& cause = "") {
  Json result = {{"id", id}, {"status", status}};
  if (!cause.empty()) {
    result["diagnosis"] = {{"cause", cause}, {"summary", id + " fails: " + cause}};
  }
  return result;
}

Json env(const std::string& name, const std::string& verdict, Json checks) {
  return {{"name", name}, {"verdict", verdict}, {"checks", std::move(checks)}};
}

Json host(const std::string& verdict, Json envs) {
  return {{"host", "node7"}, {"verdict", verdict}, {"envs", std::move(envs)}};
}

TEST(Transitions, TheFirstReportTellsTheHostAndEveryEnv) {
  const auto first = host("drift", {env("a", "compliant", {check("python", "pass")}),
                                    env("b", "drift", {check("torch", "fail", "wrong_build")})});
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
  const auto before = host(
      "drift", {env("a", "compliant", {check("python", "pass")}),
                env("b", "drift", {check("torch", "fail", "wrong_build")}),
                env("c", "drift", {check("smoke", "fail", "hang")}), env("gone", "compliant", {})});
  // b stays drifting for another cause, c keeps hanging: nothing to tell.
  const auto same = host(
      "drift", {env("a", "compliant", {check("python", "pass")}),
                env("b", "error", {check("torch", "error", "probe_error")}),
                env("c", "drift", {check("smoke", "fail", "hang")}), env("gone", "compliant", {})});
  EXPECT_EQ(transitions(&before, same), Json::array());

  const auto after =
      host("drift", {env("a", "drift", {check("devices", "fail", "hang")}),
                     env("b", "compliant", {check("torch", "pass")}),
                     env("c", "drift", {check("smoke", "fail", "hang")}), env("new", "drift", {})});
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

  const auto fixed = host("compliant", {env("a", "compliant", {})});
  const auto host_event = transitions(&after, fixed)[0];
  EXPECT_EQ(host_event, Json({{"kind", "host"}, {"from", "drift"}, {"to", "compliant"}}));
}

}  // namespace
}  // namespace envcontract::daemon
