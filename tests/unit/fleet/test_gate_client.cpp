// fleet/gate_client.cpp: a CI job's question to an agent (POST
// /api/v1/gate) and its record of the job's own decision. Real servers on
// 127.0.0.1 answer as an agent, a foreign program or a hostile host could:
// an answer is "answered" only when it holds a report and a decision, and
// no answer lets a job through unless the env it judged says "compliant".
#include "fleet/gate_client.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/json_text.hpp"
#include "report/ci_output.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/rogue_server.hpp"

namespace envcontract::fleet {
namespace {

using namespace std::chrono_literals;
using Json = report::Json;
using Kind = GateVerdict::Kind;
using Outcome = report::GateDecision::Outcome;
using testing::RogueServer;

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
  options.timeout = 5s;
  return options;
}

int hex_value(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c - 'a' + 10;
}

std::string percent_decoded(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

struct RequestLine {
  std::string method;
  std::string path;
  std::map<std::string, std::string> parameters;  // decoded
};

// The request line of a head, its query decoded as an agent reads it.
RequestLine request_line(const std::string& head) {
  RequestLine line;
  const std::string first = head.substr(0, head.find("\r\n"));
  line.method = first.substr(0, first.find(' '));
  const std::string target =
      first.substr(first.find(' ') + 1, first.rfind(' ') - first.find(' ') - 1);
  line.path = target.substr(0, target.find('?'));
  if (const auto mark = target.find('?'); mark != std::string::npos) {
    std::string query = target.substr(mark + 1);
    for (std::size_t at = 0; at <= query.size();) {
      const auto end = std::min(query.find('&', at), query.size());
      const std::string pair = query.substr(at, end - at);
      const auto equals = pair.find('=');
      line.parameters[percent_decoded(pair.substr(0, equals))] =
          equals == std::string::npos ? "" : percent_decoded(pair.substr(equals + 1));
      at = end + 1;
    }
  }
  return line;
}

Json env_json(const std::string& name, const Json& verdict) {
  return {{"name", name},
          {"prefix", "/opt/envs/" + name},
          {"verdict", verdict},
          {"checks", Json::array()}};
}

Json report_json(const std::string& verdict, const Json& envs) {
  return {{"schema_version", 1},
          {"verdict", verdict},
          {"scanned_at", "2026-12-01T10:00:00Z"},
          {"contract", {{"name", "kunlunxin"}, {"platform", "kunlunxin"}}},
          {"envs", envs}};
}

// The agent's answer as docs/api.md gives it.
std::string gate_answer(const Json& report, std::int64_t decision_id = 7) {
  return common::json_text({{"decision", {{"id", decision_id}, {"outcome", "go"}}},
                            {"probed", 1},
                            {"reused", 2},
                            {"elapsed_ms", 12.5},
                            {"report", report}});
}

GateQuery full_query() {
  GateQuery query;
  query.contract_digest = std::string(64, 'a');
  query.contract_name = "kunlunxin";
  query.contract_sha256 = std::string(64, 'b');
  query.env = "/opt/envs/torch & co?";
  query.job = {"github", "org/repo run 42 job build", "https://ci.example/org/repo/runs/42"};
  query.bypass = "hotfix=INC-1234&approved";
  return query;
}

TEST(GateClient, AGithubJobIsNamedByItsRunAndLinked) {
  const auto job = gate_job({{"GITHUB_ACTIONS", "true"},
                             {"GITHUB_REPOSITORY", "org/repo"},
                             {"GITHUB_RUN_ID", "42"},
                             {"GITHUB_RUN_ATTEMPT", "2"},
                             {"GITHUB_JOB", "build"},
                             {"GITHUB_SERVER_URL", "https://github.example"},
                             {"CI_JOB_ID", "77"}});
  EXPECT_EQ(job.ci, "github");
  EXPECT_EQ(job.id, "org/repo run 42 attempt 2 job build");
  EXPECT_EQ(job.url, "https://github.example/org/repo/actions/runs/42");

  // Without a run there is nothing to link to.
  const auto unlinked = gate_job({{"GITHUB_ACTIONS", "true"},
                                  {"GITHUB_REPOSITORY", "org/repo"},
                                  {"GITHUB_SERVER_URL", "https://github.example"}});
  EXPECT_EQ(unlinked.ci, "github");
  EXPECT_EQ(unlinked.id, "org/repo");
  EXPECT_EQ(unlinked.url, "");
}

TEST(GateClient, AGitlabJobIsNamedByItsProjectAndJob) {
  const auto job = gate_job({{"GITLAB_CI", "true"},
                             {"CI_PROJECT_PATH", "group/project"},
                             {"CI_JOB_ID", "77"},
                             {"CI_JOB_URL", "https://gitlab.example/group/project/-/jobs/77"}});
  EXPECT_EQ(job.ci, "gitlab");
  EXPECT_EQ(job.id, "group/project job 77");
  EXPECT_EQ(job.url, "https://gitlab.example/group/project/-/jobs/77");
  EXPECT_EQ(gate_job({{"GITLAB_CI", "true"}, {"CI_JOB_ID", "77"}}).id, "job 77");
}

// Only a CI's own "true" names it: anything else is another CI, unnamed.
TEST(GateClient, AJobOfAnotherCiIsUnnamed) {
  for (const auto& variables : std::vector<std::map<std::string, std::string>>{
           {},
           {{"GITHUB_ACTIONS", "false"}, {"GITHUB_REPOSITORY", "org/repo"}},
           {{"GITHUB_ACTIONS", "1"}, {"GITHUB_RUN_ID", "42"}},
           {{"GITLAB_CI", "TRUE"}, {"CI_JOB_ID", "77"}}}) {
    const auto job = gate_job(variables);
    EXPECT_EQ(job.ci, "");
    EXPECT_EQ(job.id, "");
    EXPECT_EQ(job.url, "");
  }
}

TEST(GateClient, TheQuestionIsAPostOfTheQuerysFieldsAndNoEmptyOne) {
  Answering agent(
      200, gate_answer(report_json("compliant", Json::array({env_json("torch", "compliant")}))));
  const auto query = full_query();
  ASSERT_EQ(ask_gate(agent.address(), query, quick()).kind, Kind::answered);
  GateQuery bare;
  bare.env = "/opt/envs/torch";
  ASSERT_EQ(ask_gate(agent.address(), bare, quick()).kind, Kind::answered);

  const auto heads = agent.heads();
  ASSERT_EQ(heads.size(), 2U);
  const auto full = request_line(heads[0]);
  EXPECT_EQ(full.method, "POST");
  EXPECT_EQ(full.path, "/api/v1/gate");
  // Values with '&', '=', '?' and spaces arrive whole.
  EXPECT_EQ(full.parameters,
            (std::map<std::string, std::string>{{"contract", query.contract_digest},
                                                {"env", query.env},
                                                {"ci", query.job.ci},
                                                {"job_id", query.job.id},
                                                {"job_url", query.job.url},
                                                {"bypass", query.bypass}}));
  EXPECT_EQ(request_line(heads[1]).parameters,
            (std::map<std::string, std::string>{{"env", "/opt/envs/torch"}}));
}

TEST(GateClient, AnAgentsAnswerIsTheEnvsReportAndItsRecord) {
  Answering agent(
      200, gate_answer(report_json("compliant", Json::array({env_json("torch", "compliant")})), 7));
  const auto verdict = ask_gate(agent.address(), full_query(), quick());
  ASSERT_EQ(verdict.kind, Kind::answered) << verdict.why;
  EXPECT_EQ(verdict.report.verdict, report::Verdict::compliant);
  ASSERT_EQ(verdict.report.envs.size(), 1U);
  EXPECT_EQ(verdict.report.envs[0].name, "torch");
  EXPECT_EQ(verdict.report.envs[0].verdict, contracts::EnvVerdict::compliant);
  EXPECT_EQ(verdict.decision_id, 7);
  EXPECT_EQ(verdict.probed, 1);
  EXPECT_EQ(verdict.reused, 2);
  EXPECT_DOUBLE_EQ(verdict.elapsed_ms, 12.5);
  EXPECT_EQ(report::gate_decision(verdict.report).outcome, Outcome::go);

  agent.answer(200, gate_answer(report_json("drift", Json::array({env_json("torch", "drift")}))));
  const auto drift = ask_gate(agent.address(), full_query(), quick());
  ASSERT_EQ(drift.kind, Kind::answered) << drift.why;
  EXPECT_EQ(drift.report.verdict, report::Verdict::drift);
  EXPECT_EQ(report::gate_decision(drift.report).outcome, Outcome::drift);
}

// Counts of the wrong type are not guessed at: 0, and the answer stands.
TEST(GateClient, CountsOfTheWrongTypeAreZero) {
  Answering agent(200, common::json_text({{"decision", {{"id", "7"}}},
                                          {"probed", 1.5},
                                          {"reused", true},
                                          {"elapsed_ms", "12"},
                                          {"report", report_json("compliant", Json::array())}}));
  const auto verdict = ask_gate(agent.address(), GateQuery{}, quick());
  ASSERT_EQ(verdict.kind, Kind::answered) << verdict.why;
  EXPECT_EQ(verdict.decision_id, 0);
  EXPECT_EQ(verdict.probed, 0);
  EXPECT_EQ(verdict.reused, 0);
  EXPECT_EQ(verdict.elapsed_ms, 0.0);
}

// The agent cannot judge it (another contract, an env it does not know,
// busy): refused, in its own words, so that the job judges it itself.
TEST(GateClient, AnAgentsRefusalIsRefusedInItsOwnWords) {
  Answering agent(409, R"({"error": "the agent holds another contract"})");
  for (const int status : {404, 409, 503}) {
    agent.answer(status, R"({"error": "the agent holds another contract"})");
    const auto verdict = ask_gate(agent.address(), full_query(), quick());
    EXPECT_EQ(verdict.kind, Kind::refused) << status;
    EXPECT_EQ(verdict.why, "the agent holds another contract") << status;
  }
  // A 404 without words (a web server that is no agent): still no verdict,
  // and its status says why.
  RogueServer page(RogueServer::Behaviour::html_not_found);
  const auto verdict = ask_gate(
      parse_host_address("127.0.0.1:" + std::to_string(page.port())).value(), GateQuery{}, quick());
  EXPECT_EQ(verdict.kind, Kind::refused);
  EXPECT_NE(verdict.why.find("404"), std::string::npos) << verdict.why;
}

// What holds no report and decision is no answer at all: the job's gate
// judges the env itself, as for an agent that is down.
TEST(GateClient, WhatIsNoAgentsAnswerIsUnreachable) {
  const std::string report = common::json_text(report_json("compliant", Json::array()));
  const std::vector<std::pair<int, std::string>> answers = {
      {200, ""},
      {200, "compliant"},
      {200, R"({"report": )" + report},  // cut short
      {200, "null"},
      {200, "[]"},
      {200, R"("compliant")"},
      {200, R"({"verdict": "compliant"})"},
      {200, R"({"report": )" + report + "}"},                          // no decision
      {200, R"({"decision": {"id": 1}})"},                             // no report
      {200, R"({"report": "compliant", "decision": {"id": 1}})"},      // not an object
      {200, R"({"report": )" + report + R"(, "decision": 1})"},        // not an object
      {200, R"({"report": [], "decision": {}})"},                      // not an object
      {200, R"({"report": {}, "decision": {}}  trailing)"},            // not JSON
      {200, std::string(R"({"report": {}, "decision": {}})") + '\0'},  // a NUL is no end
      {200, R"({"report": )" + std::string(100, '[') + std::string(100, ']') +
                R"(, "decision": {}})"},                            // deeper than any report
      {201, gate_answer(report_json("compliant", Json::array()))},  // not the gate's status
      {204, ""},
      {302, ""},
      {401, R"({"error": "a token is needed"})"},
      {500, R"({"error": "internal"})"},
      {503, "<h1>Service Unavailable</h1>"},
      {503, R"({"error": 5})"},
  };
  Answering agent(200, "");
  for (const auto& [status, body] : answers) {
    agent.answer(status, body);
    const auto verdict = ask_gate(agent.address(), full_query(), quick());
    EXPECT_EQ(verdict.kind, Kind::unreachable) << status << " " << body;
    EXPECT_NE(verdict.why, "") << status << " " << body;
    EXPECT_EQ(verdict.decision_id, 0) << status << " " << body;
  }
}

// The rule of the brief: whatever comes back, a job goes only on an
// answer whose every env says exactly "compliant".
TEST(GateClient, NoAnswerLetsAJobThroughUnlessItsEnvsSayCompliant) {
  const Json compliant = env_json("torch", "compliant");
  const std::vector<Json> reports = {
      Json::object(),
      {{"verdict", "compliant"}},
      report_json("compliant", Json::array()),
      report_json("compliant", Json::object()),
      report_json("compliant", "compliant"),
      report_json("compliant", Json::array({Json::object()})),
      report_json("compliant", Json::array({{{"name", "torch"}}})),
      report_json("compliant", Json::array({env_json("torch", nullptr)})),
      report_json("compliant", Json::array({env_json("torch", true)})),
      report_json("compliant", Json::array({env_json("torch", 1)})),
      report_json("compliant", Json::array({env_json("torch", "COMPLIANT")})),
      report_json("compliant", Json::array({env_json("torch", "compliant ")})),
      report_json("compliant", Json::array({env_json("torch", std::string("compliant\0", 10))})),
      report_json("compliant", Json::array({env_json("torch", Json{{"value", "compliant"}})})),
      report_json("compliant", Json::array({env_json("torch", Json::array({"compliant"}))})),
      report_json("compliant", Json::array({env_json("torch", "ok")})),
      report_json("compliant", Json::array({env_json("torch", "pending")})),
      report_json("compliant", Json::array({env_json("torch", "error")})),
      report_json("compliant", Json::array({compliant, env_json("jax", "drift")})),
      report_json("compliant", Json::array({compliant, env_json("jax", "unknown")})),
      report_json("compliant", Json::array({"compliant", compliant, env_json("jax", nullptr)})),
  };
  // The job's image breaks the contract, whatever its envs say.
  Json broken_target = report_json("compliant", Json::array({compliant}));
  broken_target["targets"] = Json::array(
      {{{"name", "ci"},
        {"checks",
         {{{"id", "image"}, {"status", "fail"}, {"severity", "required"}, {"kind", "image"}}}}}});
  Answering agent(200, "");
  for (const auto& report : reports) {
    agent.answer(200, gate_answer(report));
    const auto verdict = ask_gate(agent.address(), full_query(), quick());
    // Read as no answer, or as one whose decision is not go.
    const bool goes =
        verdict.kind == Kind::answered && report::gate_decision(verdict.report).exit_code() == 0;
    EXPECT_FALSE(goes) << common::json_text(report);
  }
  agent.answer(200, gate_answer(broken_target));
  const auto verdict = ask_gate(agent.address(), full_query(), quick());
  ASSERT_EQ(verdict.kind, Kind::answered) << verdict.why;
  EXPECT_EQ(report::gate_decision(verdict.report).outcome, Outcome::drift);
}

TEST(GateClient, AnAgentThatCannotBeReachedIsUnreachable) {
  const auto verdict = ask_gate(nobody_listening(), full_query(), quick());
  EXPECT_EQ(verdict.kind, Kind::unreachable);
  EXPECT_NE(verdict.why, "");
}

TEST(GateClient, AnAgentThatNeverAnswersIsUnreachableAtTheTimeout) {
  RogueServer silent(RogueServer::Behaviour::silent);
  ClientOptions options;
  options.timeout = 600ms;
  const auto began = std::chrono::steady_clock::now();
  const auto verdict =
      ask_gate(parse_host_address("127.0.0.1:" + std::to_string(silent.port())).value(),
               full_query(), options);
  EXPECT_EQ(verdict.kind, Kind::unreachable);
  EXPECT_NE(verdict.why, "");
  EXPECT_LT(std::chrono::steady_clock::now() - began, 10s) << "at its time-out, not never";
}

// Bounded as any answer from outside: read no further than the bound, and
// nested no deeper than a report does.
TEST(GateClient, AnAnswerPastItsBoundsIsUnreachable) {
  RogueServer huge(RogueServer::Behaviour::huge);
  auto options = quick();
  options.max_response_bytes = 1 << 20;
  const auto large =
      ask_gate(parse_host_address("127.0.0.1:" + std::to_string(huge.port())).value(), full_query(),
               options);
  EXPECT_EQ(large.kind, Kind::unreachable);
  EXPECT_NE(large.why, "");

  RogueServer deep(RogueServer::Behaviour::deep);
  const auto nested =
      ask_gate(parse_host_address("127.0.0.1:" + std::to_string(deep.port())).value(), full_query(),
               quick());
  EXPECT_EQ(nested.kind, Kind::unreachable);
  EXPECT_NE(nested.why, "");

  // Within the bound, the same answer is read.
  Answering agent(
      200, gate_answer(report_json("compliant", Json::array({env_json("torch", "compliant")}))));
  options.max_response_bytes = 256;
  EXPECT_EQ(ask_gate(agent.address(), full_query(), options).kind, Kind::unreachable);
  options.max_response_bytes = 1 << 20;
  EXPECT_EQ(ask_gate(agent.address(), full_query(), options).kind, Kind::answered);
}

TEST(GateClient, AJobsOwnDecisionIsRecordedOnlyWhenTheAgentSaysCreated) {
  Answering agent(201, R"({"id": 3})");
  const auto query = full_query();
  EXPECT_EQ(record_gate_decision(agent.address(), query, "drift", "torch breaks kunlunxin"), "");
  EXPECT_EQ(record_gate_decision(agent.address(), query, "go", "torch complies"), "");
  for (const int status : {200, 400, 429, 500}) {
    agent.answer(status, R"({"error": "no"})");
    EXPECT_NE(record_gate_decision(agent.address(), query, "go", "torch complies"), "") << status;
  }
  EXPECT_NE(record_gate_decision(nobody_listening(), query, "go", "torch complies"), "");

  const auto heads = agent.heads();
  ASSERT_GE(heads.size(), 2U);
  const auto drift = request_line(heads[0]);
  EXPECT_EQ(drift.method, "POST");
  EXPECT_EQ(drift.path, "/api/v1/gate/record");
  EXPECT_EQ(drift.parameters,
            (std::map<std::string, std::string>{{"outcome", "drift"},
                                                {"env", query.env},
                                                {"contract_name", query.contract_name},
                                                {"contract_sha256", query.contract_sha256},
                                                {"ci", query.job.ci},
                                                {"job_id", query.job.id},
                                                {"job_url", query.job.url},
                                                {"bypass", query.bypass},
                                                {"why", "torch breaks kunlunxin"}}));
  // A job that goes on its own was bypassing nothing.
  const auto go = request_line(heads[1]);
  EXPECT_EQ(go.parameters.at("outcome"), "go");
  EXPECT_EQ(go.parameters.count("bypass"), 0U);
}

}  // namespace
}  // namespace envcontract::fleet
