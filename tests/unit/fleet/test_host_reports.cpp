// fleet/host_reports.cpp: agents' answers read as fleetctl and the fleet
// view read them, from real HTTP servers on 127.0.0.1 that answer what an
// agent, a foreign program or a hostile host could; an answer that is not
// a report with a known verdict is that host's error, never "compliant".
#include "fleet/host_reports.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "common/json_text.hpp"
#include "report/report_json.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::fleet {
namespace {

// The shared loopback server (tests/support/loopback_http.hpp), its address
// as the fleet's clients take it.
class Answering : public testing::AnsweringServer {
 public:
  using AnsweringServer::AnsweringServer;
  HostAddress address() const { return parse_host_address(AnsweringServer::address()).value(); }
};

// A port on 127.0.0.1 that nothing listens on (bound, then closed).
HostAddress nobody_listening() {
  return parse_host_address(testing::address_nobody_listens_on()).value();
}

ClientOptions quick() {
  ClientOptions options;
  options.timeout = std::chrono::seconds(5);
  return options;
}

Json report_json(const std::string& verdict, const Json& envs = Json::array()) {
  return {{"schema_version", 1},
          {"verdict", verdict},
          {"scanned_at", "2026-12-01T10:00:00Z"},
          {"contract", {{"name", "kunlunxin"}, {"platform", "kunlunxin"}}},
          {"envs", envs}};
}

HostReport fetch_one(const Answering& server, const ClientOptions& options = quick(),
                     bool summaries = false) {
  const auto results = fetch_reports({server.address()}, options, 1, nullptr, summaries);
  EXPECT_EQ(results.size(), 1U);
  return results.empty() ? HostReport{} : results[0];
}

bool has_control_character(const std::string& text) {
  return std::any_of(text.begin(), text.end(),
                     [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

TEST(HostReports, AnAgentsReportIsReadWithItsVerdict) {
  const Json envs =
      Json::array({{{"name", "torch"}, {"verdict", "drift"}, {"checks", Json::array()}}});
  Answering agent(200, common::json_text(report_json("drift", envs)));
  const auto host = fetch_one(agent);
  ASSERT_TRUE(host.report) << host.error;
  EXPECT_EQ(host.error, "");
  EXPECT_TRUE(host.up);
  EXPECT_EQ(host.report->verdict, report::Verdict::drift);
  EXPECT_EQ(host.state(), "drift");
  EXPECT_EQ(host.last_verdict, "drift");
  EXPECT_FALSE(host.last_seen.empty()) << "when it answered";
  ASSERT_EQ(host.report->envs.size(), 1U);
  EXPECT_EQ(host.report->envs[0].name, "torch");
  EXPECT_EQ(agent.request_lines(), std::vector<std::string>{"GET /api/v1/report HTTP/1.1"});
}

// What lacks the fields fleetctl relies on, or names a verdict it does not
// know, is the host's error: it is up, but has no report, no verdict, and
// fails the fleet's exit status.
TEST(HostReports, AnAnswerWithoutAKnownVerdictIsAnErrorNeverCompliant) {
  const std::vector<std::string> answers = {
      R"({})",
      R"([])",
      R"("compliant")",
      R"(null)",
      R"({"schema_version": 1, "envs": []})",
      R"({"schema_version": 1, "verdict": null, "envs": []})",
      R"({"schema_version": 1, "verdict": true, "envs": []})",
      R"({"schema_version": 1, "verdict": 0, "envs": []})",
      R"({"schema_version": 1, "verdict": ["compliant"], "envs": []})",
      R"({"schema_version": 1, "verdict": {"value": "compliant"}, "envs": []})",
      R"({"schema_version": 1, "verdict": "", "envs": []})",
      R"({"schema_version": 1, "verdict": "COMPLIANT", "envs": []})",
      R"({"schema_version": 1, "verdict": "compliant ", "envs": []})",
      R"({"schema_version": 1, "verdict": "compliant\u0000", "envs": []})",
      R"({"schema_version": 1, "verdict": "ok", "envs": []})",
      R"({"verdict": "compliant", "envs": []})",
      R"({"schema_version": 2, "verdict": "compliant", "envs": []})",
      R"({"schema_version": "1", "verdict": "compliant", "envs": []})",
      R"({"schema_version": true, "verdict": "compliant", "envs": []})",
      R"({"schema_version": 1, "verdict": "compliant"})",
      R"({"schema_version": 1, "verdict": "compliant", "envs": null})",
      R"({"schema_version": 1, "verdict": "compliant", "envs": {}})",
      R"({"schema_version": 1, "verdict": "compliant", "envs": "[]"})",
      R"({"schema_version": 1, "verdict": "compliant", "envs": [)",
      "compliant",
      ""};
  Answering agent(200, "");
  for (const auto& answer : answers) {
    agent.answer(200, answer);
    const auto host = fetch_one(agent);
    EXPECT_FALSE(host.report) << answer;
    EXPECT_EQ(host.state(), "unavailable") << answer;
    EXPECT_NE(host.error, "") << answer;
    EXPECT_TRUE(host.up) << "it answered: " << answer;
    EXPECT_EQ(host.last_verdict, "") << answer;
    EXPECT_EQ(host.last_seen, "") << "not a report: " << answer;
    EXPECT_EQ(fleet_exit_status({host}), 2) << answer;
  }
}

// A verdict that is a terminal's escape sequence is named in the error
// without its control characters.
TEST(HostReports, AnUnknownVerdictIsNamedPrintably) {
  Answering agent(200, common::json_text(report_json("\x1b]0;owned\x07\x1b[2Jcompliant")));
  const auto host = fetch_one(agent);
  EXPECT_FALSE(host.report);
  EXPECT_NE(host.error.find("compliant"), std::string::npos) << host.error;
  EXPECT_FALSE(has_control_character(host.error)) << host.error;
}

// Fields other than those fleetctl relies on may be missing or of the
// wrong type: the report is read, and what cannot be read is left out.
TEST(HostReports, WrongTypesBesideTheVerdictAreTolerated) {
  Answering agent(200, R"({"schema_version": 1, "verdict": "drift", "scanned_at": 12,
    "contract": [1, 2], "image": "not an object", "targets": "nope", "scan_id": -5,
    "envs": [7, "x", null, [], {"name": "torch", "checks": [5, {"id": "c", "status": "fail",
      "severity": "required", "diagnosis": {"cause": "cuda_build"}}]}, {"name": {"x": 1}}]})");
  const auto host = fetch_one(agent);
  ASSERT_TRUE(host.report) << host.error;
  EXPECT_EQ(host.state(), "drift");
  EXPECT_EQ(host.report->scanned_at, "");
  EXPECT_EQ(host.report->contract.name, "");
  EXPECT_TRUE(host.report->targets.empty());
  EXPECT_FALSE(host.report->scan_id);
  ASSERT_EQ(host.report->envs.size(), 2U) << "only objects are envs";
  const auto& torch = host.report->envs[0];
  // An env that names no verdict is no compliant env.
  EXPECT_EQ(torch.verdict, contracts::EnvVerdict::error);
  ASSERT_EQ(torch.checks.size(), 1U);
  EXPECT_EQ(torch.checks[0].status, contracts::CheckStatus::fail);
  EXPECT_EQ(host.report->envs[1].name, "");
}

TEST(HostReports, AnAgentsRefusalIsItsStatusAndItsWordsPrintable) {
  Answering agent(401, R"({"error": "bad token\u001b[31m; ask the \u0007operator"})");
  int status = 0;
  const auto json = get_json(agent.address(), "/api/v1/report", quick(), &status);
  EXPECT_EQ(status, 401);
  ASSERT_FALSE(json);
  EXPECT_TRUE(json.error().starts_with("HTTP 401")) << json.error();
  EXPECT_NE(json.error().find("bad token"), std::string::npos) << json.error();
  EXPECT_FALSE(has_control_character(json.error())) << json.error();

  const auto host = fetch_one(agent);
  EXPECT_FALSE(host.report);
  EXPECT_TRUE(host.up);
  EXPECT_EQ(host.state(), "unavailable");
  EXPECT_TRUE(host.error.starts_with("HTTP 401")) << host.error;

  // Not JSON with an error status: the status, and nothing that says the
  // server may be no agent at all (it said no, it did not misanswer).
  agent.answer(404, "<h1>404 Not Found</h1>");
  const auto page = get_json(agent.address(), "/api/v1/report", quick(), &status);
  EXPECT_EQ(status, 404);
  ASSERT_FALSE(page);
  EXPECT_TRUE(page.error().starts_with("HTTP 404")) << page.error();
  EXPECT_EQ(page.error().find("agent?"), std::string::npos) << page.error();
}

TEST(HostReports, AnAnswerPastItsBoundsIsRefused) {
  // Larger than the client allows: refused whole, never half-read as a report.
  Json big = report_json("compliant");
  big["padding"] = std::string(4096, 'x');
  Answering agent(200, common::json_text(big));
  auto options = quick();
  options.max_response_bytes = 1024;
  const auto host = fetch_one(agent, options);
  EXPECT_FALSE(host.report);
  EXPECT_NE(host.error, "");
  EXPECT_TRUE(fetch_one(agent).report) << "the same answer within the bounds is a report";

  // Nested deeper than common::k_outside_json_depth: refused before a value is built.
  const std::string deep = R"({"schema_version": 1, "verdict": "compliant", "envs": [)" +
                           std::string(200, '[') + std::string(200, ']') + "]}";
  agent.answer(200, deep);
  const auto nested = fetch_one(agent);
  EXPECT_FALSE(nested.report);
  EXPECT_NE(nested.error.find("64"), std::string::npos) << nested.error;
}

TEST(HostReports, ParseAnswerBoundsSizeAndDepth) {
  const ClientOptions options = quick();
  const auto fine = parse_answer(R"({"a": [1, 2, {"b": null}]})", options);
  ASSERT_TRUE(fine) << fine.error();
  EXPECT_EQ((*fine)["a"][2]["b"], nullptr);
  // At most common::k_outside_json_depth levels.
  EXPECT_TRUE(parse_answer(std::string(64, '[') + std::string(64, ']'), options));
  EXPECT_FALSE(parse_answer(std::string(65, '[') + std::string(65, ']'), options));
  EXPECT_FALSE(parse_answer(std::string("{\"a\": 1}\0{\"b\": 2}", 17), options))
      << "a NUL byte ends no answer early";
  EXPECT_FALSE(parse_answer("{\"a\": 1", options));
  EXPECT_FALSE(parse_answer("", options));
  ClientOptions small = options;
  small.max_response_bytes = 8;
  EXPECT_FALSE(parse_answer(R"({"a": "123456789"})", small));
  EXPECT_TRUE(parse_answer("[1,2]", small));
}

TEST(HostReports, AHostThatCannotBeReachedIsDownAndUnavailable) {
  const auto results = fetch_reports({nobody_listening()}, quick(), 4);
  ASSERT_EQ(results.size(), 1U);
  EXPECT_FALSE(results[0].up);
  EXPECT_FALSE(results[0].report);
  EXPECT_EQ(results[0].state(), "unavailable");
  EXPECT_NE(results[0].error, "");
  EXPECT_EQ(results[0].last_seen, "");
  EXPECT_EQ(fleet_exit_status(results), 2);
}

// A shutdown asks no host it has not asked yet.
TEST(HostReports, WhenStoppedNoHostIsAsked) {
  Answering agent(200, common::json_text(report_json("compliant")));
  const std::atomic<bool> stop{true};
  const auto results =
      fetch_reports({agent.address(), agent.address(), agent.address()}, quick(), 2, &stop);
  ASSERT_EQ(results.size(), 3U);
  for (const auto& host : results) {
    EXPECT_FALSE(host.report);
    EXPECT_FALSE(host.up);
    EXPECT_EQ(host.error, "not asked: stopping");
    EXPECT_EQ(host.address.text, agent.address().text);
  }
  EXPECT_TRUE(agent.request_lines().empty());
  EXPECT_EQ(fleet_exit_status(results), 2);
}

TEST(HostReports, ResultsKeepTheInventorysOrderWhateverTheConcurrency) {
  const std::vector<std::string> verdicts = {"compliant", "drift", "error", "pending", "compliant"};
  std::vector<std::unique_ptr<Answering>> agents;
  std::vector<HostAddress> hosts;
  for (const auto& verdict : verdicts) {
    agents.push_back(std::make_unique<Answering>(200, common::json_text(report_json(verdict))));
    hosts.push_back(agents.back()->address());
  }
  hosts.push_back(nobody_listening());
  for (const unsigned concurrency : {0U, 1U, 3U, 64U}) {
    const auto results = fetch_reports(hosts, quick(), concurrency);
    ASSERT_EQ(results.size(), hosts.size());
    for (std::size_t i = 0; i < verdicts.size(); ++i) {
      EXPECT_EQ(results[i].address.text, hosts[i].text);
      EXPECT_EQ(results[i].state(), verdicts[i]) << "concurrency " << concurrency;
    }
    EXPECT_EQ(results.back().state(), "unavailable");
  }
  EXPECT_TRUE(fetch_reports({}, quick(), 8).empty());
}

Json failing_report() {
  const Json evidence = {{"torch_version", "2.10.0+cu129"}, {"big", std::string(1000, 'e')}};
  const auto check = [&](const std::string& id, const std::string& status) {
    return Json{{"id", id},
                {"kind", "torch"},
                {"status", status},
                {"severity", "required"},
                {"expected", "cpu"},
                {"actual", "cu129"},
                {"diagnosis",
                 {{"cause", id + "_cause"},
                  {"summary", "why " + id},
                  {"evidence", evidence},
                  {"remedy", "fix " + id}}}};
  };
  Json report = report_json(
      "drift",
      Json::array({{{"name", "torch"},
                    {"prefix", "/opt/envs/torch"},
                    {"verdict", "drift"},
                    {"summary", "torch-cpu-build fails"},
                    {"checks",
                     {check("passes", "pass"), check("fails", "fail"), check("errs", "error"),
                      check("skipped", "skip"), check("waived", "waived")}}}}));
  report["contract"]["sha256"] = "abc";
  report["contract"]["path"] = "/etc/envcontract/contract.yaml";
  report["image"] = {{"value", "registry.example/x:1"}, {"source", "file"}};
  report["targets"] = Json::array(
      {{{"name", "ci"}, {"image", "registry.example/x:2"}, {"checks", {check("image", "fail")}}}});
  report["problems"] = Json::array({{{"path", "/opt/x"}, {"problem", "unreadable"}}});
  report["reasons"] = Json::array({"a reason"});
  return report;
}

// The fleet keeps of a report what its view shows: verdicts, and the
// failing checks with their cause; the evidence is left at the agent.
TEST(HostReports, ASummaryKeepsVerdictsAndFailingChecksOnly) {
  const auto full = report::report_from_json(failing_report());
  const auto summary = report_summary(full);
  EXPECT_EQ(summary.verdict, report::Verdict::drift);
  EXPECT_EQ(summary.scanned_at, "2026-12-01T10:00:00Z");
  EXPECT_EQ(summary.contract.name, "kunlunxin");
  EXPECT_EQ(summary.contract.platform, "kunlunxin");
  EXPECT_EQ(summary.contract.sha256, "abc");
  EXPECT_EQ(summary.contract.path, "");
  EXPECT_EQ(summary.image.value, "registry.example/x:1");
  EXPECT_TRUE(summary.problems.empty());
  EXPECT_TRUE(summary.reasons.empty());
  ASSERT_EQ(summary.envs.size(), 1U);
  const auto& env = summary.envs[0];
  EXPECT_EQ(env.name, "torch");
  EXPECT_EQ(env.verdict, contracts::EnvVerdict::drift);
  EXPECT_EQ(env.summary, "torch-cpu-build fails");
  EXPECT_EQ(env.prefix, "");
  ASSERT_EQ(env.checks.size(), 2U) << "fail and error only";
  EXPECT_EQ(env.checks[0].id, "fails");
  EXPECT_EQ(env.checks[0].status, contracts::CheckStatus::fail);
  EXPECT_EQ(env.checks[1].id, "errs");
  EXPECT_EQ(env.checks[1].status, contracts::CheckStatus::error);
  for (const auto& check : env.checks) {
    ASSERT_TRUE(check.diagnosis);
    EXPECT_EQ(check.diagnosis->cause, check.id + "_cause");
    EXPECT_EQ(check.diagnosis->summary, "");
    EXPECT_EQ(check.diagnosis->evidence, Json::object());
    EXPECT_EQ(check.diagnosis->remedy, "");
    EXPECT_EQ(check.expected, nullptr);
    EXPECT_EQ(check.actual, nullptr);
  }
  ASSERT_EQ(summary.targets.size(), 1U);
  EXPECT_EQ(summary.targets[0].name, "ci");
  ASSERT_EQ(summary.targets[0].checks.size(), 1U);
  EXPECT_EQ(summary.targets[0].checks[0].diagnosis->cause, "image_cause");
}

TEST(HostReports, FetchedSummariesHoldNoEvidence) {
  Answering agent(200, common::json_text(failing_report()));
  const auto host = fetch_one(agent, quick(), true);
  ASSERT_TRUE(host.report) << host.error;
  EXPECT_EQ(host.state(), "drift");
  ASSERT_EQ(host.report->envs.size(), 1U);
  ASSERT_EQ(host.report->envs[0].checks.size(), 2U);
  EXPECT_EQ(host.report->envs[0].checks[0].diagnosis->evidence, Json::object());
  EXPECT_EQ(host.report->envs[0].checks[0].diagnosis->cause, "fails_cause");
}

HostReport with_verdict(const std::string& verdict) {
  HostReport host;
  host.report = report::report_from_json(report_json(verdict));
  return host;
}

TEST(HostReports, TheFleetExitsZeroOnlyWhenEveryHostComplies) {
  const auto compliant = with_verdict("compliant");
  const auto drift = with_verdict("drift");
  EXPECT_EQ(fleet_exit_status({compliant, compliant}), 0);
  EXPECT_EQ(fleet_exit_status({compliant, drift}), 1);
  EXPECT_EQ(fleet_exit_status({drift, drift}), 1);
  // Not judged (yet), whichever comes first: never 0, and not hidden by drift.
  for (const auto& unjudged : {with_verdict("error"), with_verdict("pending"), HostReport{}}) {
    EXPECT_EQ(fleet_exit_status({compliant, unjudged}), 2);
    EXPECT_EQ(fleet_exit_status({drift, unjudged}), 2);
    EXPECT_EQ(fleet_exit_status({unjudged, drift}), 2);
  }
  // What was last known of a down host is not a verdict now.
  HostReport down;
  down.last_known = report_summary(*compliant.report);
  down.last_verdict = "compliant";
  EXPECT_EQ(down.state(), "unavailable");
  EXPECT_EQ(fleet_exit_status({compliant, down}), 2);
}

TEST(HostReports, AnInventoryListsHostsAndEveryBadLine) {
  testing::TempDir dir;
  const auto good = dir.write("hosts",
                              "# the fleet\n\nnode-1\n  node-2:9800  # rack 2\r\n"
                              "http://10.0.0.5:9714/\n[fe80::1]:9714\n\t\n");
  const auto hosts = read_inventory(good.string());
  ASSERT_TRUE(hosts) << hosts.error();
  ASSERT_EQ(hosts->size(), 4U);
  EXPECT_EQ((*hosts)[0].base_url(), "http://node-1:9714");
  EXPECT_EQ((*hosts)[1].base_url(), "http://node-2:9800");
  EXPECT_EQ((*hosts)[2].base_url(), "http://10.0.0.5:9714");
  EXPECT_EQ((*hosts)[3].base_url(), "http://[fe80::1]:9714");

  const auto bad = dir.write("bad", "node-1\nnode 2\nhttps://node-3/\nnode-4:70000\n-x\n");
  const auto refused = read_inventory(bad.string());
  ASSERT_FALSE(refused);
  // Every bad line, each as FILE:LINE, and no good one.
  const std::string& error = refused.error();
  EXPECT_EQ(std::count(error.begin(), error.end(), '\n'), 3) << error;
  for (const int line : {2, 3, 4, 5}) {
    EXPECT_NE(error.find(bad.string() + ":" + std::to_string(line) + ": "), std::string::npos)
        << error;
  }
  EXPECT_EQ(error.find(bad.string() + ":1:"), std::string::npos) << error;

  EXPECT_FALSE(read_inventory((dir.path() / "missing").string()));
  const auto empty = read_inventory(dir.write("empty", "# nothing yet\n").string());
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

// One agent written several ways is asked once; each repeat is said.
TEST(HostReports, RepeatsOfOneAgentAreAskedOnce) {
  std::vector<HostAddress> hosts;
  for (const char* text : {"node-1", "NODE-1:9714", "http://node-1:9714/", "node-1:9800", "node-2",
                           "[FE80::1]", "[fe80::1]:9714"}) {
    hosts.push_back(parse_host_address(text).value());
  }
  std::vector<std::string> repeated;
  const auto distinct = distinct_hosts(hosts, repeated);
  std::vector<std::string> kept;
  for (const auto& host : distinct) {
    kept.push_back(host.text);
  }
  EXPECT_EQ(kept, (std::vector<std::string>{"node-1", "node-1:9800", "node-2", "[FE80::1]"}));
  ASSERT_EQ(repeated.size(), 3U);
  EXPECT_EQ(repeated[0], "NODE-1:9714 (the same agent as node-1)");
  EXPECT_EQ(repeated[2], "[fe80::1]:9714 (the same agent as [FE80::1])");
}

}  // namespace
}  // namespace envcontract::fleet
