// fleet/prometheus_fleet.cpp: the agents' series, as Prometheus' query API
// answers them, turned into one report per agent; series that are hostile,
// inconsistent, incomplete or stale never read as a compliant host.
#include "fleet/prometheus_fleet.hpp"

#include <gtest/gtest.h>

#include "common/json_text.hpp"
#include "tests/support/rogue_server.hpp"

namespace envcontract::fleet {
namespace {

// One series of an instant vector, as Prometheus writes it.
Json sample(Json metric, const std::string& value = "1") {
  return {{"metric", std::move(metric)}, {"value", Json::array({1796025833.5, value})}};
}

Json node(Json labels = Json::object()) {
  labels["instance"] = "node-1:9714";
  labels["job"] = "envcontract";
  return labels;
}

// An agent that is up, with `verdict` and its info series.
std::map<std::string, Json> up_with(const std::string& verdict) {
  return {{"up", Json::array({sample(node())})},
          {"verdict", Json::array({sample(node({{"verdict", verdict}}))})},
          {"info", Json::array({sample(node({{"contract", "kunlunxin"},
                                             {"contract_sha256", "ab12"},
                                             {"platform", "kunlunxin"},
                                             {"version", "1.4.0"},
                                             {"image", "r.example/k:2"}}))})}};
}

// The one host of `reports` (a copy: `reports` is often a temporary).
HostReport only(const std::vector<HostReport>& reports) {
  EXPECT_EQ(reports.size(), 1U);
  return reports.empty() ? HostReport{} : reports.front();
}

TEST(PrometheusFleet, TheQueriesAreNamedAndAskedInOrderForTheJob) {
  const auto queries = fleet_queries("envcontract");
  std::vector<std::string> names;
  for (const auto& [name, query] : queries) {
    names.push_back(name);
    EXPECT_NE(query.find("{job=\"envcontract\"}"), std::string::npos) << query;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"up", "verdict", "last_verdict", "info", "last_info",
                                             "env", "failing", "last_scan"}));
  EXPECT_EQ(queries[0].second, "up{job=\"envcontract\"}");
  EXPECT_EQ(queries[1].second, "envcontract_host_verdict{job=\"envcontract\"} == 1");
}

// The job is the operator's text: it stays one PromQL string literal.
TEST(PrometheusFleet, AJobNameIsQuotedWhateverItHolds) {
  const auto queries = fleet_queries("a\"b\\c\nd");
  EXPECT_EQ(queries[0].second, "up{job=\"a\\\"b\\\\c\\x0ad\"}");
  const auto history = compliance_queries("x\"y", {});
  ASSERT_FALSE(history.empty());
  EXPECT_NE(history[0].second.find("{job=\"x\\\"y\"}"), std::string::npos) << history[0].second;
}

TEST(PrometheusFleet, AnAgentThatIsUpIsReportedFromItsSeries) {
  auto results = up_with("drift");
  results["env"] =
      Json::array({sample(node({{"env", "torch"}}), "0"), sample(node({{"env", "cann"}}), "1")});
  results["failing"] = Json::array({sample(node({{"env", "torch"},
                                                 {"check", "torch-cpu-build"},
                                                 {"cause", "cuda_build"},
                                                 {"severity", "required"},
                                                 {"status", "fail"}})),
                                    sample(node({{"target", "ci"},
                                                 {"check", "image"},
                                                 {"cause", "image_mismatch"},
                                                 {"severity", "required"},
                                                 {"status", "fail"}}))});
  results["last_scan"] = Json::array({sample(node(), "1796025833")});
  const auto& host = only(reports_from_samples(results, "http://prom:9090"));
  EXPECT_TRUE(host.up);
  EXPECT_EQ(host.error, "");
  ASSERT_TRUE(host.report);
  EXPECT_EQ(host.state(), "drift");
  EXPECT_EQ(host.address.text, "node-1:9714");
  EXPECT_EQ(host.address.port, 9714);
  EXPECT_EQ(host.last_verdict, "drift");
  EXPECT_EQ(host.last_seen, "2026-11-30T08:03:53Z");
  const auto& report = *host.report;
  EXPECT_EQ(report.contract.name, "kunlunxin");
  EXPECT_EQ(report.contract.sha256, "ab12");
  EXPECT_EQ(report.contract.platform, "kunlunxin");
  EXPECT_EQ(report.agent_version, std::optional<std::string>("1.4.0"));
  EXPECT_EQ(report.source, std::optional<std::string>("prometheus http://prom:9090"));
  EXPECT_EQ(report.compliant_envs, std::vector<std::string>{"cann"});
  ASSERT_EQ(report.envs.size(), 2U);
  EXPECT_EQ(report.envs[1].name, "torch");
  EXPECT_EQ(report.envs[1].verdict, contracts::EnvVerdict::drift);
  ASSERT_EQ(report.envs[1].checks.size(), 1U);
  EXPECT_EQ(report.envs[1].checks[0].id, "torch-cpu-build");
  ASSERT_EQ(report.targets.size(), 1U) << "a failing check without env is its target's";
  EXPECT_EQ(report.targets[0].name, "ci");
  ASSERT_EQ(report.targets[0].checks.size(), 1U);
  EXPECT_EQ(report.targets[0].checks[0].id, "image");
}

TEST(PrometheusFleet, AnEnvWhoseFailingChecksAreAllErrorsIsAnErrorEnv) {
  auto results = up_with("error");
  const auto failing = [](const char* env, const char* check, const char* status) {
    return sample(node({{"env", env}, {"check", check}, {"cause", "hang"}, {"status", status}}));
  };
  results["env"] =
      Json::array({sample(node({{"env", "a"}}), "0"), sample(node({{"env", "b"}}), "0")});
  results["failing"] = Json::array({failing("a", "import", "error"),
                                    failing("b", "import", "error"), failing("b", "x", "fail")});
  const auto& host = only(reports_from_samples(results, "http://prom:9090"));
  ASSERT_TRUE(host.report);
  ASSERT_EQ(host.report->envs.size(), 2U);
  EXPECT_EQ(host.report->envs[0].verdict, contracts::EnvVerdict::error);
  EXPECT_EQ(host.report->envs[1].verdict, contracts::EnvVerdict::drift);
}

// A scrape config's own `env`/`check` label makes Prometheus keep the
// agent's as exported_env/exported_check.
TEST(PrometheusFleet, TheAgentsExportedLabelsWinOverTheScrapeConfigs) {
  auto results = up_with("drift");
  results["env"] = Json::array({sample(node({{"env", "prod"}, {"exported_env", "torch"}}), "0")});
  results["failing"] = Json::array({sample(node({{"env", "prod"},
                                                 {"exported_env", "torch"},
                                                 {"check", "prod-check"},
                                                 {"exported_check", "torch-cpu-build"},
                                                 {"status", "fail"}}))});
  const auto& host = only(reports_from_samples(results, "http://prom:9090"));
  ASSERT_TRUE(host.report);
  ASSERT_EQ(host.report->envs.size(), 1U);
  EXPECT_EQ(host.report->envs[0].name, "torch");
  ASSERT_EQ(host.report->envs[0].checks.size(), 1U);
  EXPECT_EQ(host.report->envs[0].checks[0].id, "torch-cpu-build");
}

TEST(PrometheusFleet, AHostWithoutAVerdictIsUnavailableAndSaysWhy) {
  // Up, serving envcontract metrics, no verdict yet (first scan).
  auto first_scan = up_with("compliant");
  first_scan.erase("verdict");
  const auto& scanning = only(reports_from_samples(first_scan, "http://prom:9090"));
  EXPECT_TRUE(scanning.up);
  EXPECT_FALSE(scanning.report);
  EXPECT_EQ(scanning.state(), "unavailable");
  EXPECT_NE(scanning.error.find("holds no verdict of it yet"), std::string::npos) << scanning.error;

  // Up, but none of its series are an agent's.
  const auto& stranger = only(reports_from_samples({{"up", Json::array({sample(node())})}}, "p"));
  EXPECT_EQ(stranger.state(), "unavailable");
  EXPECT_EQ(stranger.error, "it serves no envcontract metrics: is it an agent?");

  // A verdict series without its `verdict` label is no verdict.
  auto unlabelled = up_with("compliant");
  unlabelled["verdict"] = Json::array({sample(node())});
  const auto& nameless = only(reports_from_samples(unlabelled, "p"));
  EXPECT_EQ(nameless.state(), "unavailable");
  EXPECT_FALSE(nameless.report);
}

// The series of a target that is down may linger: the host is judged by
// its `up`, never by them.
TEST(PrometheusFleet, AHostThatIsDownIsUnavailableWhateverVerdictSeriesLinger) {
  auto results = up_with("compliant");
  results["up"] = Json::array({sample(node(), "0")});
  results["last_verdict"] = Json::array({sample(node({{"verdict", "compliant"}}))});
  const auto& host = only(reports_from_samples(results, "http://prom:9090"));
  EXPECT_FALSE(host.up);
  EXPECT_FALSE(host.report);
  EXPECT_EQ(host.state(), "unavailable");
  EXPECT_EQ(host.error, "down: Prometheus' last scrape of it failed (its last verdict: compliant)");
  ASSERT_TRUE(host.last_known);
  EXPECT_EQ(host.last_known->verdict, report::Verdict::compliant);
}

TEST(PrometheusFleet, AStaleLastVerdictGivesWayToTheCurrentOne) {
  auto results = up_with("drift");
  results["last_verdict"] = Json::array({sample(node({{"verdict", "compliant"}}))});
  const auto& host = only(reports_from_samples(results, "http://prom:9090"));
  EXPECT_EQ(host.state(), "drift");
  EXPECT_EQ(host.last_verdict, "drift");
  EXPECT_FALSE(host.last_known) << "a host with a report now needs no last known one";
}

// A server that federates the agents' series has no `up` of them: an
// agent whose info series it holds is up.
TEST(PrometheusFleet, AFederatedAgentWithoutAnUpSeriesIsUp) {
  auto results = up_with("compliant");
  results.erase("up");
  const auto& host = only(reports_from_samples(results, "http://prom:9090"));
  EXPECT_TRUE(host.up);
  EXPECT_EQ(host.state(), "compliant");
}

TEST(PrometheusFleet, SeriesOfHostsPrometheusDoesNotListAreIgnored) {
  auto results = up_with("compliant");
  results["verdict"].push_back(
      sample({{"instance", "ghost:9714"}, {"job", "envcontract"}, {"verdict", "drift"}}));
  const auto reports = reports_from_samples(results, "http://prom:9090");
  ASSERT_EQ(reports.size(), 1U);
  EXPECT_EQ(reports[0].address.text, "node-1:9714");
}

// Answers of the wrong shape are skipped, never a crash nor a verdict.
TEST(PrometheusFleet, AnswersOfTheWrongShapeAreSkipped) {
  const std::map<std::string, Json> results = {
      {"up",
       Json::array({sample(node()), 7, "x", Json::object(), Json{{"metric", 3}, {"value", "1"}}})},
      {"verdict", Json{{"not", "a vector"}}},
      {"info", Json::array({Json{{"metric", node({{"contract", 5}})}, {"value", 1}}})},
      {"env", Json::array({Json{{"metric", node({{"env", "torch"}})}, {"value", {1, 1}}}})}};
  const auto reports = reports_from_samples(results, "http://prom:9090");
  ASSERT_FALSE(reports.empty()) << "the well-formed `up` sample's host at least";
  for (const auto& host : reports) {
    EXPECT_NE(host.state(), "compliant") << host.address.text;
    EXPECT_FALSE(host.report) << "no verdict series could be read";
  }
}

// "NaN" and "+Inf" are values Prometheus writes: never an `up` of 1 nor a
// compliant env.
TEST(PrometheusFleet, NaNAndInfinityAreNeitherUpNorCompliant) {
  for (const char* value : {"NaN", "+Inf", "-Inf", "1e999", "one"}) {
    auto results = up_with("drift");
    results["up"] = Json::array({sample(node(), value)});
    EXPECT_FALSE(only(reports_from_samples(results, "p")).up) << value;

    auto env = up_with("drift");
    env["env"] = Json::array({sample(node({{"env", "torch"}}), value)});
    const auto& host = only(reports_from_samples(env, "p"));
    ASSERT_TRUE(host.report) << value;
    ASSERT_EQ(host.report->envs.size(), 1U) << value;
    EXPECT_NE(host.report->envs[0].verdict, contracts::EnvVerdict::compliant) << value;
    EXPECT_TRUE(host.report->compliant_envs.empty()) << value;
  }
}

// A last scan of NaN, an infinity or a time past any calendar is no time:
// unknown (""), never a date made of an undefined cast.
TEST(PrometheusFleet, AScanTimeThatIsNoTimeIsUnknown) {
  for (const char* value : {"NaN", "+Inf", "-Inf", "1e300", "-5"}) {
    auto results = up_with("drift");
    results["last_scan"] = Json::array({sample(node(), value)});
    const auto& host = only(reports_from_samples(results, "p"));
    EXPECT_EQ(host.last_seen, "") << value;
  }
  // A time that is one is read.
  auto results = up_with("drift");
  results["last_scan"] = Json::array({sample(node(), "1796023653")});
  EXPECT_EQ(only(reports_from_samples(results, "p")).last_seen, "2026-11-30T07:27:33Z");
}

// Series of one host that disagree on its verdict decide nothing: never the
// verdict of whichever series came last.
TEST(PrometheusFleet, AHostWithTwoVerdictsAtOnceIsNeverCompliant) {
  for (const bool compliant_last : {false, true}) {
    auto results = up_with("drift");
    auto both = Json::array({sample(node({{"verdict", "drift"}, {"replica", "a"}})),
                             sample(node({{"verdict", "compliant"}, {"replica", "b"}}))});
    if (!compliant_last) {
      std::swap(both[0], both[1]);
    }
    results["verdict"] = both;
    const auto& host = only(reports_from_samples(results, "p"));
    EXPECT_NE(host.state(), "compliant") << "compliant series listed last: " << compliant_last;
    EXPECT_EQ(host.last_verdict, "error") << "disagreeing series decide nothing";
  }
}

TEST(PrometheusFleet, ComplianceHistoryHasNoPointsForAnEmptyOrBackwardWindow) {
  const std::map<std::string, Json> results = {
      {"verdicts", Json::parse(R"([{"metric": {"verdict": "drift"}, "values": [[60, "3"]]}])")}};
  EXPECT_TRUE(history_from_samples(results, 0, 120, 0).points.empty());
  EXPECT_TRUE(history_from_samples(results, 0, 120, -60).points.empty());
  EXPECT_TRUE(history_from_samples(results, 120, 60, 60).points.empty());
  const auto one = history_from_samples(results, 60, 60, 60);
  ASSERT_EQ(one.points.size(), 1U);
  EXPECT_EQ(one.points[0].drift, 3);
  EXPECT_EQ(one.points[0].time, "1970-01-01T00:01:00Z");
}

TEST(PrometheusFleet, SamplesOffTheStepsAndUnknownVerdictsAreNotCounted) {
  const std::map<std::string, Json> results = {{"verdicts", Json::parse(R"([
        {"metric": {"verdict": "drift"}, "values": [[90, "4"], [120.2, "2"]]},
        {"metric": {"verdict": "quarantined"}, "values": [[60, "9"]]},
        {"metric": {}, "values": [[60, "9"]]}
      ])")}};
  const auto history = history_from_samples(results, 60, 120, 60);
  ASSERT_EQ(history.points.size(), 2U);
  EXPECT_EQ(history.points[0].compliant + history.points[0].drift + history.points[0].error +
                history.points[0].down,
            0);
  EXPECT_EQ(history.points[1].drift, 2) << "120.2 s is the step at 120 s";
}

TEST(PrometheusFleet, ComplianceQueriesFollowACheckFilterAndAVerdictFilter) {
  FleetFilter filter;
  filter.check = "torch.cpu";
  const auto queries = compliance_queries("envcontract", filter);
  ASSERT_EQ(queries.size(), 2U);
  EXPECT_NE(queries[0].second.find("envcontract_check_failing{job=\"envcontract\",severity!="
                                   "\"advisory\",check=~\"(?i)torch\\\\.cpu\"}"),
            std::string::npos)
      << queries[0].second;
  filter = {};
  filter.verdict = "compliant";
  const auto compliant = compliance_queries("envcontract", filter);
  ASSERT_EQ(compliant.size(), 1U);
  EXPECT_EQ(compliant[0].first, "verdicts");
  EXPECT_NE(compliant[0].second.find("verdict=\"compliant\""), std::string::npos);
}

// An answer that is not Prometheus' is an error naming the query, never
// an empty (and so quiet) fleet.
TEST(PrometheusFleet, AnAnswerThatIsNotPrometheusIsAnErrorNamingTheQuery) {
  ClientOptions options;
  options.timeout = std::chrono::seconds(5);
  for (const auto behaviour : {testing::RogueServer::Behaviour::not_a_report,
                               testing::RogueServer::Behaviour::invalid_json,
                               testing::RogueServer::Behaviour::html_not_found}) {
    testing::RogueServer server(behaviour);
    const auto address = parse_host_address("127.0.0.1:" + std::to_string(server.port()));
    ASSERT_TRUE(address);
    const auto hosts = reports_from_prometheus(*address, "envcontract", options);
    ASSERT_FALSE(hosts) << static_cast<int>(behaviour);
    EXPECT_NE(hosts.error().find("query up{job=\"envcontract\"}"), std::string::npos)
        << hosts.error();
    const auto history =
        history_from_prometheus(*address, "envcontract", {}, std::chrono::hours(1), 60, options);
    ASSERT_FALSE(history);
    EXPECT_NE(history.error().find("query count by (verdict)"), std::string::npos)
        << history.error();
  }
}

TEST(PrometheusFleet, AHistoryOfNoVerdictPrometheusHoldsIsAProblemNotAQuery) {
  FleetFilter filter;
  filter.verdict = "pending";
  // Nothing listens on port 1: had it asked, it would fail.
  const auto history = history_from_prometheus(*parse_host_address("127.0.0.1:1"), "envcontract",
                                               filter, std::chrono::hours(1), 60, {});
  ASSERT_TRUE(history) << history.error();
  EXPECT_TRUE(history->points.empty());
  EXPECT_NE(history->problem, "");
}

}  // namespace
}  // namespace envcontract::fleet
