// The fleet view's rows, counts and filters, made of reports shaped as
// agents serve them, and the compliance history made of Prometheus' range
// answers as Prometheus writes them.
#include <gtest/gtest.h>

#include "common/json_text.hpp"
#include "fleet/fleet_view.hpp"
#include "fleet/prometheus_fleet.hpp"
#include "report/report_json.hpp"

namespace envcontract::fleet {
namespace {

Json check(const std::string& id, const std::string& status, const std::string& cause,
           const std::string& severity = "required") {
  return {{"id", id},
          {"status", status},
          {"severity", severity},
          {"diagnosis", {{"cause", cause}, {"summary", cause + " in " + id}}}};
}

HostReport host(const std::string& name, const std::string& verdict, const std::string& platform,
                const Json& envs, const Json& targets = Json::array()) {
  HostReport report;
  report.address = parse_host_address(name).value();
  report.up = true;
  report.report = report::report_from_json(
      Json{{"schema_version", 1},
           {"verdict", verdict},
           {"scanned_at", "2026-12-01T10:00:00Z"},
           {"contract", {{"name", platform + "-contract"}, {"platform", platform}}},
           {"image", {{"value", "registry.example/" + platform + ":1"}}},
           {"targets", targets},
           {"envs", envs}});
  return report;
}

std::vector<HostReport> three_hosts() {
  // Two envs share a cause through two checks each: each env counts once.
  const Json drifting_envs = Json::array(
      {{{"name", "torch-a"},
        {"verdict", "drift"},
        {"checks",
         {check("torch-cpu-build", "fail", "cuda_build"),
          check("no-libtorch-cuda", "fail", "cuda_build"),
          check("import-order", "fail", "missing_library", "advisory")}}},
       {{"name", "torch-b"},
        {"verdict", "drift"},
        {"checks", {check("torch-cpu-build", "fail", "cuda_build"), check("smoke", "pass", "")}}},
       {{"name", "ok"}, {"verdict", "compliant"}, {"checks", {check("smoke", "pass", "")}}}});
  const Json image_target =
      Json::array({{{"name", "ci"}, {"checks", {check("image", "fail", "image_mismatch")}}}});
  HostReport down;
  down.address = parse_host_address("node-3:9714").value();
  down.error = "cannot connect to node-3 port 9714";
  down.last_seen = "2026-12-01T09:00:00Z";
  down.last_verdict = "compliant";
  return {
      host("node-1", "drift", "kunlunxin", drifting_envs, image_target),
      host("node-2", "compliant", "ascend",
           Json::array({{{"name", "cann"}, {"verdict", "compliant"}, {"checks", Json::array()}}})),
      down};
}

const Json& row_of(const Json& view, const std::string& name) {
  for (const auto& row : view["hosts"]) {
    if (row["host"] == name) {
      return row;
    }
  }
  static const Json none;
  return none;
}

TEST(FleetView, RowsCountEachEnvOnceAndListTheWorstHostsFirst) {
  const auto view = fleet_view(three_hosts(), {}, "inventory test", {});
  ASSERT_EQ(view["hosts"].size(), 3U) << common::json_text(view, 1);
  // Unavailable and drifting hosts before complying ones.
  EXPECT_EQ(view["hosts"][0]["host"], "node-3:9714");
  EXPECT_EQ(view["hosts"][1]["host"], "node-1");
  EXPECT_EQ(view["hosts"][2]["host"], "node-2");
  EXPECT_EQ(view["counts"], (Json{{"hosts", 3},
                                  {"compliant", 1},
                                  {"drift", 1},
                                  {"error", 0},
                                  {"pending", 0},
                                  {"unavailable", 1}}));

  const Json& drifting = row_of(view, "node-1");
  EXPECT_EQ(drifting["state"], "drift");
  EXPECT_EQ(drifting["agent_url"], "http://node-1:9714/");
  EXPECT_EQ(drifting["platform"], "kunlunxin");
  EXPECT_EQ(drifting["image"], "registry.example/kunlunxin:1");
  EXPECT_EQ(drifting["envs"], 3);
  EXPECT_EQ(drifting["drifting_envs"], 2);
  // cuda_build fails in two envs (through three checks); the advisory
  // check's cause is not a cause of drift.
  EXPECT_EQ(drifting["top_causes"], (Json::array({{{"cause", "cuda_build"}, {"count", 2}},
                                                  {{"cause", "image_mismatch"}, {"count", 1}}})));
  EXPECT_EQ(drifting["failing_checks"][0], (Json{{"check", "torch-cpu-build"}, {"count", 2}}));

  const Json& down = row_of(view, "node-3:9714");
  EXPECT_EQ(down["state"], "unavailable");
  EXPECT_EQ(down["up"], false);
  EXPECT_EQ(down["last_seen"], "2026-12-01T09:00:00Z");
  EXPECT_EQ(down["last_verdict"], "compliant");
  // When it last answered is not when it last scanned: nothing is known of that.
  EXPECT_EQ(down["last_scan"], "");
  EXPECT_EQ(down["last_known"], false);
  EXPECT_NE(down["error"].get<std::string>().find("cannot connect"), std::string::npos);

  EXPECT_EQ(view["checks"][0], (Json{{"check", "torch-cpu-build"}, {"hosts", 1}, {"envs", 2}}));
  EXPECT_EQ(view["causes"][0], (Json{{"cause", "cuda_build"}, {"hosts", 1}, {"envs", 2}}));
  EXPECT_EQ(view["platforms"], (Json::array({"ascend", "kunlunxin"})));
  EXPECT_EQ(view["causes_known"], (Json::array({"cuda_build", "image_mismatch"})));
}

TEST(FleetView, FiltersKeepTheFleetsChoicesAndCountOnlyWhatIsShown) {
  const auto hosts = three_hosts();
  const auto by = [&](std::multimap<std::string, std::string> params) {
    const auto filter = parse_fleet_filter(params);
    EXPECT_TRUE(filter) << filter.error();
    return fleet_view(hosts, *filter, "inventory test", {});
  };
  const auto drifting = by({{"verdict", "drift"}});
  ASSERT_EQ(drifting["hosts"].size(), 1U);
  EXPECT_EQ(drifting["hosts"][0]["host"], "node-1");
  EXPECT_EQ(drifting["filter"], (Json{{"verdict", "drift"}}));
  EXPECT_EQ(drifting["total_hosts"], 3);
  EXPECT_EQ(drifting["platforms"].size(), 2U) << "the filters' choices are the whole fleet's";

  EXPECT_EQ(by({{"platform", "ascend"}})["hosts"][0]["host"], "node-2");
  EXPECT_EQ(by({{"cause", "image_mismatch"}})["hosts"].size(), 1U);
  EXPECT_EQ(by({{"check", "torch-cpu-build"}, {"cause", "cuda_build"}})["hosts"].size(), 1U);
  // A check and a cause that never fail together in one check match nothing.
  const auto none = by({{"check", "image"}, {"cause", "cuda_build"}});
  EXPECT_EQ(none["hosts"], Json::array());
  EXPECT_EQ(none["counts"]["hosts"], 0);
  EXPECT_EQ(none["checks"], Json::array());
  // An advisory finding is no reason to list a host.
  EXPECT_EQ(by({{"cause", "missing_library"}})["hosts"], Json::array());
  EXPECT_EQ(by({{"verdict", "unavailable"}})["hosts"][0]["host"], "node-3:9714");
}

// A host whose agent went down keeps what was last known of it: contract,
// platform, causes and last scan, marked as last known; it stays
// unavailable, and every filter it matched (but a verdict's) still finds it.
TEST(FleetView, ADownHostKeepsWhatWasLastKnownUnderEveryFilter) {
  auto hosts = three_hosts();
  HostReport went_down =
      host("node-4", "drift", "kunlunxin",
           Json::array({{{"name", "torch-fl-cpu"},
                         {"verdict", "drift"},
                         {"checks",
                          {check("import-order", "fail", "missing_library"),
                           check("first-device-op", "fail", "hang")}}},
                        {{"name", "torch-fl-xpu"},
                         {"verdict", "drift"},
                         {"checks", {check("import-order", "fail", "missing_library")}}}}));
  went_down.last_known = report_summary(*went_down.report);
  went_down.last_known_from = "its answer at 2026-12-01T10:00:05Z";
  went_down.report.reset();
  went_down.up = false;
  went_down.error = "cannot connect to node-4 port 9714";
  went_down.last_seen = "2026-12-01T10:00:05Z";
  went_down.last_verdict = "drift";
  hosts.push_back(went_down);

  const auto by = [&](std::multimap<std::string, std::string> params) {
    const auto filter = parse_fleet_filter(params);
    EXPECT_TRUE(filter) << filter.error();
    return fleet_view(hosts, *filter, "inventory test", {});
  };
  const auto all = by({});
  const Json& row = row_of(all, "node-4");
  EXPECT_EQ(row["state"], "unavailable");
  EXPECT_EQ(row["up"], false);
  EXPECT_EQ(row["last_known"], true);
  EXPECT_EQ(row["last_known_from"], "its answer at 2026-12-01T10:00:05Z");
  EXPECT_EQ(row["contract"], "kunlunxin-contract");
  EXPECT_EQ(row["platform"], "kunlunxin");
  EXPECT_EQ(row["last_scan"], "2026-12-01T10:00:00Z");
  EXPECT_EQ(row["drifting_envs"], 2);
  // The hang first, though fewer envs have it than the missing library.
  EXPECT_EQ(row["top_causes"], (Json::array({{{"cause", "hang"}, {"count", 1}},
                                             {{"cause", "missing_library"}, {"count", 2}}})));
  EXPECT_EQ(all["counts"]["unavailable"], 2);

  const auto kunlunxin = by({{"platform", "kunlunxin"}});
  EXPECT_EQ(kunlunxin["counts"]["hosts"], 2);
  EXPECT_EQ(kunlunxin["counts"]["unavailable"], 1) << "the down host, under its platform";
  const auto hanging = by({{"cause", "hang"}});
  ASSERT_EQ(hanging["hosts"].size(), 1U);
  EXPECT_EQ(hanging["hosts"][0]["host"], "node-4");
  EXPECT_EQ(hanging["causes"][0], (Json{{"cause", "hang"}, {"hosts", 1}, {"envs", 1}}));
  EXPECT_EQ(by({{"verdict", "unavailable"}, {"check", "import-order"}})["counts"]["hosts"], 1);
  EXPECT_EQ(by({{"verdict", "drift"}, {"cause", "hang"}})["hosts"], Json::array())
      << "its verdict now is unknown, not drift";
  EXPECT_NE(std::find(all["causes_known"].begin(), all["causes_known"].end(), "hang"),
            all["causes_known"].end());
}

// Filter values are matched whatever their case: "ASCEND" is the ascend
// platform, not an empty fleet.
TEST(FleetView, FilterValuesIgnoreCase) {
  const auto hosts = three_hosts();
  const auto by = [&](std::multimap<std::string, std::string> params) {
    const auto filter = parse_fleet_filter(params);
    EXPECT_TRUE(filter) << filter.error();
    return fleet_view(hosts, *filter, "inventory test", {});
  };
  EXPECT_EQ(by({{"platform", "ASCEND"}})["hosts"][0]["host"], "node-2");
  EXPECT_EQ(by({{"cause", "Cuda_Build"}})["hosts"][0]["host"], "node-1");
  EXPECT_EQ(by({{"check", "TORCH-CPU-BUILD"}})["hosts"][0]["host"], "node-1");
  const auto drifting = by({{"verdict", "DRIFT"}});
  EXPECT_EQ(drifting["filter"], (Json{{"verdict", "drift"}}));
  EXPECT_EQ(drifting["hosts"][0]["host"], "node-1");
}

TEST(FleetView, BadFiltersAreErrorsThatNameTheAllowedOnes) {
  const auto verdict = parse_fleet_filter({{"verdict", "bad"}});
  ASSERT_FALSE(verdict);
  EXPECT_EQ(verdict.error(),
            "verdict must be one of compliant, drift, error, pending, unavailable; got 'bad'");
  const auto unknown = parse_fleet_filter({{"host", "x"}});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(
      unknown.error(),
      "unknown parameter 'host'; the fleet is filtered by verdict, cause, check and platform");
  const auto twice = parse_fleet_filter({{"check", "a"}, {"check", "b"}});
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error(), "give 'check' once");
}

TEST(FleetView, ComplianceHistoryFromPrometheusRangeAnswers) {
  // As Prometheus answers /api/v1/query_range: a matrix per query, values
  // as [unix seconds, "text"], steps without samples left out.
  const std::map<std::string, Json> results = {
      {"verdicts", Json::parse(R"([
        {"metric": {"verdict": "compliant"}, "values": [[1000, "2"], [1060, "1"], [1120, "1"]]},
        {"metric": {"verdict": "drift"}, "values": [[1000, "0"], [1060, "1"], [1120, "1"]]},
        {"metric": {"verdict": "error"}, "values": [[1060, "0"]]}
      ])")},
      {"down", Json::parse(R"([{"metric": {}, "values": [[1120, "1"]]}])")}};
  const auto history = history_from_samples(results, 1000, 1180, 60);
  EXPECT_EQ(history.step_seconds, 60);
  ASSERT_EQ(history.points.size(), 4U);
  EXPECT_EQ(history.points[0].time, "1970-01-01T00:16:40Z");
  EXPECT_EQ(history.points[0].compliant, 2);
  EXPECT_EQ(history.points[1].drift, 1);
  EXPECT_EQ(history.points[2].down, 1);
  // A step no series covers: nothing known, all zero.
  EXPECT_EQ(history.points[3].compliant + history.points[3].drift + history.points[3].down, 0);

  const auto view = fleet_view({}, {}, "prometheus", history);
  EXPECT_EQ(view["history"]["points"].size(), 4U);
  EXPECT_EQ(view["history"]["points"][2], (Json{{"time", "1970-01-01T00:18:40Z"},
                                                {"compliant", 1},
                                                {"drift", 1},
                                                {"error", 0},
                                                {"down", 1}}));
  // What is not a matrix is skipped, not a crash.
  const auto odd = history_from_samples(
      {{"verdicts", Json::parse(R"([{"values": 3}, {"values": [[1, 2, 3], ["x", "1"]]}, 7])")}}, 0,
      60, 60);
  EXPECT_EQ(odd.points.size(), 2U);
}

// A pair of Prometheus servers for high availability, federated: every
// series of the agent twice, told apart by a `replica` label, and one
// replica that missed the last scrape. The agent is up, each failing check
// listed once.
TEST(FleetView, SeriesOfAPrometheusPairCountOnce) {
  const auto twice = [](const char* text) {
    auto one = Json::parse(text);
    auto other = one;
    one["metric"]["replica"] = "a";
    other["metric"]["replica"] = "b";
    return Json::array({one, other});
  };
  auto up = twice(R"({"metric": {"instance": "node-1:9714"}, "value": [1, "1"]})");
  up[1]["value"][1] = "0";
  const std::map<std::string, Json> results = {
      {"up", up},
      {"verdict", twice(R"({"metric": {"instance": "node-1:9714", "verdict": "drift"},
                             "value": [1, "1"]})")},
      {"info", twice(R"({"metric": {"instance": "node-1:9714", "contract": "c", "platform": "p"},
                          "value": [1, "1"]})")},
      {"env",
       twice(R"({"metric": {"instance": "node-1:9714", "env": "torch"}, "value": [1, "0"]})")},
      {"failing", twice(R"({"metric": {"instance": "node-1:9714", "env": "torch",
                             "check": "torch-cpu-build", "cause": "cuda_build",
                             "severity": "required", "status": "fail"}, "value": [1, "1"]})")}};
  const auto reports = reports_from_samples(results, "http://prometheus:9090");
  ASSERT_EQ(reports.size(), 1U);
  EXPECT_TRUE(reports[0].up);
  ASSERT_TRUE(reports[0].report) << reports[0].error;
  EXPECT_EQ(reports[0].state(), "drift");
  ASSERT_EQ(reports[0].report->envs.size(), 1U);
  EXPECT_EQ(reports[0].report->envs[0].checks.size(), 1U);
  EXPECT_EQ(reports[0].report->source,
            std::optional<std::string>("prometheus http://prometheus:9090"));
  const auto view = fleet_view(reports, {}, "prometheus", {});
  EXPECT_EQ(view["hosts"][0]["platform"], "p");
  EXPECT_EQ(view["checks"][0], (Json{{"check", "torch-cpu-build"}, {"hosts", 1}, {"envs", 1}}));
}

// An agent Prometheus cannot scrape keeps what Prometheus' history holds of
// it: its last verdict and scan time, and its contract and platform when
// one info series of the last day names them (two: the contract changed
// that day, and which came last is not in the answer: left unsaid).
TEST(FleetView, ADownAgentKeepsWhatPrometheusHistoryHolds) {
  const auto results = [](const Json& last_info) {
    return std::map<std::string, Json>{
        {"up", Json::parse(R"([{"metric": {"instance": "node-1:9714"}, "value": [1, "0"]}])")},
        {"last_verdict", Json::parse(R"([{"metric": {"instance": "node-1:9714", "verdict": "drift"},
                          "value": [1, "1"]}])")},
        {"last_scan", Json::parse(R"([{"metric": {"instance": "node-1:9714"},
                                       "value": [1, "1796025833"]}])")},
        {"last_info", last_info}};
  };
  const Json one_contract = Json::parse(R"([{"metric": {"instance": "node-1:9714",
      "contract": "kunlunxin", "platform": "kunlunxin", "image": "r.example/k:2.1.2"},
      "value": [1, "1"]}])");
  const auto reports = reports_from_samples(results(one_contract), "http://prometheus:9090");
  ASSERT_EQ(reports.size(), 1U);
  EXPECT_EQ(reports[0].state(), "unavailable");
  ASSERT_TRUE(reports[0].last_known);
  EXPECT_NE(reports[0].last_known_from.find("contract"), std::string::npos);
  const auto row = host_row(reports[0]);
  EXPECT_EQ(row["platform"], "kunlunxin");
  EXPECT_EQ(row["contract"], "kunlunxin");
  EXPECT_EQ(row["image"], "r.example/k:2.1.2");
  EXPECT_EQ(row["last_scan"], "2026-11-30T08:03:53Z");
  EXPECT_EQ(row["last_known"], true);

  auto two_contracts = one_contract;
  two_contracts.push_back(one_contract[0]);
  two_contracts[1]["metric"]["contract"] = "kunlunxin-old";
  const auto unsure = reports_from_samples(results(two_contracts), "http://prometheus:9090");
  ASSERT_TRUE(unsure[0].last_known);
  EXPECT_EQ(unsure[0].last_known_from.find("contract"), std::string::npos);
  EXPECT_EQ(host_row(unsure[0])["contract"], "");
  EXPECT_EQ(host_row(unsure[0])["last_scan"], "2026-11-30T08:03:53Z");
}

// A verdict the view does not know (a newer agent's, through Prometheus'
// labels) is an error of that host, not a failure of the whole view.
TEST(FleetView, AnUnknownVerdictIsThatHostsError) {
  auto hosts = three_hosts();
  const std::map<std::string, Json> results = {
      {"up", Json::parse(R"([{"metric": {"instance": "node-2:9714"}, "value": [1, "1"]}])")},
      {"verdict", Json::parse(R"([{"metric": {"instance": "node-2:9714", "verdict": "quarantined"},
                                   "value": [1, "1"]}])")}};
  const auto sampled = reports_from_samples(results, "http://prometheus:9090");
  ASSERT_EQ(sampled.size(), 1U);
  ASSERT_TRUE(sampled[0].report);
  EXPECT_EQ(sampled[0].report->verdict, report::Verdict::error) << "never a new state";
  hosts[1] = sampled[0];
  hosts[1].address = three_hosts()[1].address;
  const auto view = fleet_view(hosts, {}, "prometheus", {});
  EXPECT_EQ(view["counts"]["error"], 1) << common::json_text(view["counts"]);
  EXPECT_FALSE(view["counts"].contains("quarantined"));
  const Json& odd = row_of(view, "node-2");
  EXPECT_EQ(odd["state"], "error");
  EXPECT_EQ(odd["error"], "its verdict 'quarantined' is none the fleet view knows");
  const auto filter = parse_fleet_filter({{"verdict", "error"}});
  EXPECT_EQ(fleet_view(hosts, *filter, "prometheus", {})["hosts"].size(), 1U);
}

// The history's queries count an agent once however many servers scrape it.
TEST(FleetView, HistoryQueriesCountEachInstanceOnce) {
  const auto queries = compliance_queries("envcontract", {});
  ASSERT_EQ(queries.size(), 2U);
  EXPECT_EQ(queries[0].second,
            "count by (verdict) ((max by (instance, verdict) "
            "(envcontract_host_verdict{job=\"envcontract\"}) == 1))");
  EXPECT_EQ(queries[1].second, "count((max by (instance) (up{job=\"envcontract\"}) == 0))");
}

// The history follows the filters: hosts that match them at each step,
// values matched whatever their case and taken literally.
TEST(FleetView, HistoryQueriesFollowTheFilters) {
  FleetFilter filter;
  filter.platform = "Kunlun.xin";
  filter.cause = "hang";
  const auto queries = compliance_queries("envcontract", filter);
  ASSERT_EQ(queries.size(), 2U);
  const std::string matching =
      " and on (instance) (envcontract_info{job=\"envcontract\",platform=~\"(?i)Kunlun\\\\.xin\"})"
      " and on (instance) (envcontract_check_failing{job=\"envcontract\",severity!=\"advisory\","
      "cause=~\"(?i)hang\"})";
  EXPECT_EQ(queries[0].second,
            "count by (verdict) ((max by (instance, verdict) "
            "(envcontract_host_verdict{job=\"envcontract\"}) == 1)" +
                matching + ")");
  EXPECT_EQ(queries[1].second,
            "count((max by (instance) (up{job=\"envcontract\"}) == 0)" + matching + ")");

  filter = {};
  filter.verdict = "drift";
  const auto drifting = compliance_queries("envcontract", filter);
  ASSERT_EQ(drifting.size(), 1U) << "hosts down are not drifting hosts";
  EXPECT_NE(drifting[0].second.find("verdict=\"drift\""), std::string::npos);
  filter.verdict = "unavailable";
  const auto down = compliance_queries("envcontract", filter);
  ASSERT_EQ(down.size(), 1U);
  EXPECT_EQ(down[0].first, "down");
  filter.verdict = "pending";
  EXPECT_TRUE(compliance_queries("envcontract", filter).empty()) << "no series says pending";
}

// What an inventory-fed view keeps of a report: enough for every row,
// count and filter, without the evidence.
TEST(FleetView, ReportSummariesKeepWhatTheViewShows) {
  const auto hosts = three_hosts();
  report::Report full = *hosts[0].report;
  full.envs[0].checks[0].diagnosis->evidence = {{"threads", Json::array({1, 2, 3})}};
  full.envs[0].activation = report::ActivationReport{};
  const report::Report summary = report_summary(full);
  EXPECT_EQ(summary.verdict, report::Verdict::drift);
  EXPECT_EQ(summary.contract.platform, "kunlunxin");
  EXPECT_FALSE(summary.envs[0].activation.has_value());
  EXPECT_EQ(summary.envs[0].checks[0].diagnosis->evidence, Json::object());
  EXPECT_EQ(summary.envs[0].checks[0].diagnosis->cause, full.envs[0].checks[0].diagnosis->cause);
  // Only failing checks stay; the passing smoke check of torch-b goes.
  EXPECT_EQ(summary.envs[1].checks.size(), 1U);
  HostReport summarised = hosts[0];
  summarised.report = summary;
  EXPECT_EQ(host_row(summarised), host_row(hosts[0]));
}

TEST(FleetView, CountVerdictsCountsEveryHostWithoutAVerdictAsDown) {
  const auto point = count_verdicts(three_hosts(), "2026-12-01T10:00:00Z");
  EXPECT_EQ(point.compliant, 1);
  EXPECT_EQ(point.drift, 1);
  EXPECT_EQ(point.down, 1);
}

}  // namespace
}  // namespace envcontract::fleet
