// What fleetctl prints of many hosts and of two hosts' reports: the fleet's
// summary line (states counted, causes ranked) and a diff that names what
// differs and nothing else.
#include "cli/fleet_render.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fleet/prometheus_fleet.hpp"
#include "report/report_json.hpp"

namespace envcontract::cli {
namespace {

// A report with one env whose checks are given as (id, status, cause).
Json report_of(const std::string& verdict, const std::string& image,
               const std::vector<std::tuple<std::string, std::string, std::string>>& checks,
               const std::string& env = "xpu") {
  auto listed = Json::array();
  for (const auto& [id, status, cause] : checks) {
    Json check = {{"id", id}, {"status", status}, {"severity", "required"}};
    if (!cause.empty()) {
      check["diagnosis"] = {{"cause", cause}, {"summary", id + " " + cause}};
    }
    listed.push_back(check);
  }
  return {{"verdict", verdict},
          {"contract", {{"name", "kunlunxin"}, {"sha256", "0123456789abcdef"}}},
          {"image", {{"value", image}}},
          {"envs", Json::array({{{"name", env}, {"verdict", verdict}, {"checks", listed}}})}};
}

HostReport host(const std::string& name, std::optional<Json> report) {
  HostReport host;
  host.address.text = name;
  host.address.host = name;
  host.up = report.has_value();
  if (report) {
    host.report = report::report_from_json(*report);  // read as fleetctl reads an answer
  }
  if (!host.report) {
    host.error = "connection refused";
  }
  return host;
}

TEST(FleetRender, TheSummaryCountsStatesAndRanksCauses) {
  // The cause more hosts share comes first, though it sorts last by name.
  const std::vector<HostReport> hosts = {
      host("a", report_of("drift", "img:2.1.2",
                          {{"torch", "fail", "cuda_build"}, {"image", "fail", "image_mismatch"}})),
      host("b", report_of("drift", "img:2.1.2", {{"image", "fail", "image_mismatch"}})),
      host("c", report_of("compliant", "img:2.2.0", {{"torch", "pass", ""}})),
      host("d", std::nullopt),
  };
  EXPECT_EQ(fleet_summary(hosts),
            "2 of 4 hosts drift; 1 unavailable; 1 compliant; top causes: image_mismatch 2, "
            "cuda_build 1");
}

// A host whose report came with a problem (Prometheus' series name a
// verdict this fleetctl does not know): could not be judged, and said so in
// every rendering, not hidden behind its checks.
TEST(FleetRender, AReportReadWithAProblemSaysIt) {
  const std::map<std::string, Json> results = {
      {"up", Json::parse(R"([{"metric": {"instance": "node-2:9714"}, "value": [1, "1"]}])")},
      {"verdict", Json::parse(R"([{"metric": {"instance": "node-2:9714", "verdict": "quarantined"},
                                   "value": [1, "1"]}])")}};
  const auto hosts = fleet::reports_from_samples(results, "http://prometheus:9090");
  ASSERT_EQ(hosts.size(), 1U);
  EXPECT_EQ(fleet::fleet_exit_status(hosts), 2) << "not judged: neither compliant nor drift";
  const std::string why = "its verdict 'quarantined' is none the fleet view knows";
  const std::string table = fleet_table(hosts, {});
  EXPECT_NE(table.find("node-2:9714  error"), std::string::npos) << table;
  EXPECT_NE(table.find(why + "; no failing check named (contract )"), std::string::npos) << table;
  EXPECT_NE(fleet_summary(hosts).find("1 could not be judged"), std::string::npos);
  const std::string junit = fleet_junit(hosts, JunitDetail::every_check);
  EXPECT_NE(junit.find("<error message=\"its verdict &apos;quarantined&apos; is none the fleet "
                       "view knows\" type=\"unavailable\"/>"),
            std::string::npos)
      << junit;
  EXPECT_EQ(fleet_json(hosts)["hosts"][0]["error"], why);
}

// A Prometheus label is another program's text: it cannot drive the terminal.
TEST(FleetRender, AHostsNameIsShownPrintable) {
  auto hosts = std::vector<HostReport>{host("evil\x1b[2J", std::nullopt)};
  const std::string table = fleet_table(hosts, {});
  EXPECT_EQ(table.find('\x1b'), std::string::npos) << table;
  EXPECT_NE(table.find("evil\\x1b[2J"), std::string::npos) << table;
  // Nor can a cause named by a report, in the summary line.
  const std::vector<HostReport> drifting = {
      host("node-1", report_of("drift", "img", {{"c", "fail", "bad\x1b[2Jcause"}}))};
  const std::string summary = fleet_summary(drifting);
  EXPECT_EQ(summary.find('\x1b'), std::string::npos) << summary;
  EXPECT_NE(summary.find("top causes: bad\\x1b[2Jcause 1"), std::string::npos) << summary;
}

TEST(FleetRender, ADiffNamesWhatDiffersAndNothingElse) {
  const Json a =
      report_of("drift", "img:2.1.2", {{"torch", "fail", "cuda_build"}, {"devices", "pass", ""}});
  EXPECT_TRUE(diff_is_empty(diff_reports(a, a)));
  EXPECT_NE(diff_table(diff_reports(a, a), "node-1", "node-2").find("agree"), std::string::npos);

  // Another image, torch mended, a check only B's contract has.
  Json b = report_of("compliant", "img:2.2.0",
                     {{"torch", "pass", ""}, {"devices", "pass", ""}, {"smoke", "pass", ""}});
  const Json diff = diff_reports(a, b);
  EXPECT_FALSE(diff.contains("contract")) << diff;
  EXPECT_EQ(diff["image"], (Json{{"a", "img:2.1.2"}, {"b", "img:2.2.0"}}));
  EXPECT_EQ(diff["verdict"], (Json{{"a", "drift"}, {"b", "compliant"}}));
  ASSERT_EQ(diff["checks"].size(), 1U) << diff;
  EXPECT_EQ(diff["checks"][0]["check"], "torch");
  EXPECT_EQ(diff["checks"][0]["a"]["cause"], "cuda_build");
  EXPECT_EQ(diff["checks"][0]["b"]["status"], "pass");
  EXPECT_EQ(diff["checks_in_one_contract_only"], 1);

  // Another contract, named with the start of its hash.
  Json other_contract = a;
  other_contract["contract"]["sha256"] = "fedcba9876543210";
  EXPECT_EQ(diff_reports(a, other_contract)["contract"],
            (Json{{"a", "kunlunxin 0123456789ab"}, {"b", "kunlunxin fedcba987654"}}));

  // An env only one host has is named, not compared.
  const Json other = report_of("drift", "img:2.1.2", {{"torch", "fail", "cuda_build"}}, "cuda");
  const Json envs = diff_reports(a, other);
  EXPECT_EQ(envs["only_in_a"][0]["env"], "xpu");
  EXPECT_EQ(envs["only_in_b"][0]["env"], "cuda");
  EXPECT_FALSE(envs.contains("checks"));
}

}  // namespace
}  // namespace envcontract::cli
