// The endpoints that ask the agent itself, as plain functions of a real
// agent (an empty host, a real SQLite store, its token file) and a request:
// each answer tested as data, without a socket.
#include "daemon/agent_routes.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "tests/support/empty_host.hpp"

namespace envcontract::daemon {
namespace {

using namespace std::chrono_literals;
using report::Json;

Json body_of(const PlainResponse& answer) {
  return Json::parse(answer.text());
}

std::string header_of(const PlainResponse& answer, const std::string& name) {
  for (const auto& [key, value] : answer.headers) {
    if (key == name) {
      return value;
    }
  }
  return {};
}

PlainRequest request(std::multimap<std::string, std::string> params = {},
                     std::vector<std::pair<std::string, std::string>> headers = {}) {
  return {"GET", "/", std::move(params), std::move(headers), "127.0.0.1"};
}

// A started agent of an empty host, its first scan finished; with a token
// when `token` is not empty.
class AgentRoutes : public ::testing::Test {
 protected:
  void start(const std::string& token = "") {
    auto config = testing::empty_host_agent_config(m_dir, 1h);
    if (!token.empty()) {
      std::ofstream(m_dir.path() / "token") << token << "\n";
      std::filesystem::permissions(m_dir.path() / "token", std::filesystem::perms::owner_read);
      config.token_file = m_dir.path() / "token";
    }
    m_agent = std::make_unique<Agent>(config);
    ASSERT_EQ(m_agent->start(), "");
    // The startup scan of an empty host takes milliseconds: wait for it, not for a time.
    for (int i = 0; i < 1000 && !m_agent->snapshot()->report; ++i) {
      std::this_thread::sleep_for(10ms);
    }
    ASSERT_TRUE(m_agent->snapshot()->report) << "the first scan did not finish in 10 s";
  }

  void TearDown() override {
    if (m_agent) {
      m_agent->stop();
    }
  }

  testing::TempDir m_dir;
  std::unique_ptr<Agent> m_agent;
};

TEST(PlainRequest, HeadersAreFoundInAnyCaseAndParamsByName) {
  const auto asked = request({{"limit", "5"}}, {{"authorization", "Bearer t"}});
  EXPECT_EQ(asked.header("Authorization"), "Bearer t");
  EXPECT_EQ(asked.header("X-Requested-By"), "");
  EXPECT_EQ(asked.param("limit"), "5");
  EXPECT_EQ(asked.param("env"), "");
}

TEST_F(AgentRoutes, AScanNeedsAHeaderNoFormCanSetWhenTheAgentHasNoToken) {
  start();
  const auto refused = scan_answer(*m_agent, request());
  EXPECT_EQ(refused.status, 403);
  EXPECT_NE(body_of(refused)["error"].get<std::string>().find("X-Requested-By"), std::string::npos);

  const auto queued = scan_answer(*m_agent, request({}, {{"x-requested-by", "fleetctl"}}));
  ASSERT_EQ(queued.status, 202);
  const auto id = body_of(queued)["id"].get<std::int64_t>();
  EXPECT_EQ(header_of(queued, "Location"), "/api/v1/scans/" + std::to_string(id));
  const auto ticket = scan_ticket_answer(*m_agent, std::to_string(id));
  EXPECT_EQ(ticket.status, 200);
  EXPECT_EQ(body_of(ticket)["id"], id);
  EXPECT_EQ(body_of(ticket)["reason"], "api");
  EXPECT_EQ(scan_ticket_answer(*m_agent, "999999").status, 404);
}

TEST_F(AgentRoutes, WithATokenAScanNeedsItRight) {
  start("s3cret-token");
  const auto missing = scan_answer(*m_agent, request({}, {{"X-Requested-By", "fleetctl"}}));
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(header_of(missing, "WWW-Authenticate"), "Bearer realm=\"envcontract\"");
  const auto wrong = scan_answer(*m_agent, request({}, {{"Authorization", "Bearer nope"}}));
  EXPECT_EQ(wrong.status, 401);
  EXPECT_NE(body_of(wrong)["error"].get<std::string>().find("does not match"), std::string::npos);
  EXPECT_EQ(scan_answer(*m_agent, request({}, {{"authorization", "Bearer s3cret-token"}})).status,
            202);
}

TEST_F(AgentRoutes, ProvisioningNeedsATokenAndProvisioningEnabled) {
  start();
  const auto no_token = provision_answer(*m_agent, request({{"name", "new"}}), false);
  EXPECT_EQ(no_token.status, 403);
  EXPECT_NE(body_of(no_token)["error"].get<std::string>().find("token_file"), std::string::npos);
  m_agent->stop();
  m_agent.reset();

  start("s3cret-token");
  const auto disabled = provision_answer(
      *m_agent, request({{"env", "a"}, {"as", "b"}}, {{"Authorization", "Bearer s3cret-token"}}),
      true);
  EXPECT_EQ(disabled.status, 403);
  EXPECT_NE(body_of(disabled)["error"].get<std::string>().find("provisioning.enabled"),
            std::string::npos);
  // The token is asked for before anything else is said of provisioning.
  const auto missing = provision_answer(*m_agent, request({{"name", "new"}}), false);
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(header_of(missing, "WWW-Authenticate"), "Bearer realm=\"envcontract\"");
  EXPECT_NE(body_of(missing)["error"].get<std::string>().find("provisioning needs"),
            std::string::npos);
  const auto wrong = provision_answer(
      *m_agent, request({{"name", "new"}}, {{"Authorization", "Bearer x"}}), false);
  EXPECT_EQ(wrong.status, 401);
  EXPECT_NE(body_of(wrong)["error"].get<std::string>().find("does not match"), std::string::npos);
  EXPECT_EQ(provision_job_answer(*m_agent, "1").status, 404);
}

TEST_F(AgentRoutes, HistoryRefusesWhatItCannotAnswerAndNamesWhatItKnows) {
  start();
  EXPECT_EQ(history_answer(*m_agent, request({{"envs", "x"}})).status, 400);
  EXPECT_EQ(history_answer(*m_agent, request({{"env", "a"}, {"target", "b"}})).status, 400);
  const auto since = history_answer(*m_agent, request({{"since", "yesterday"}}));
  EXPECT_EQ(since.status, 400);
  EXPECT_NE(body_of(since)["error"].get<std::string>().find("RFC 3339"), std::string::npos);
  EXPECT_EQ(history_answer(*m_agent, request({{"limit", "0"}})).status, 400);
  EXPECT_EQ(history_answer(*m_agent, request({{"limit", "10001"}})).status, 400);

  const auto unknown = history_answer(*m_agent, request({{"env", "torch-fl"}}));
  EXPECT_EQ(unknown.status, 404);
  EXPECT_TRUE(body_of(unknown)["envs"].is_array());
  const auto all = history_answer(*m_agent, request({{"since", "2026-01-01"}, {"limit", "5"}}));
  EXPECT_EQ(all.status, 200);
  EXPECT_TRUE(body_of(all)["transitions"].is_array());
}

TEST_F(AgentRoutes, ProvisionsAreListedWithinTheirLimit) {
  start();
  EXPECT_EQ(provisions_answer(*m_agent, request({{"limit", "abc"}})).status, 400);
  EXPECT_EQ(provisions_answer(*m_agent, request({{"name", "x"}})).status, 400);
  const auto listed = provisions_answer(*m_agent, request({{"limit", "3"}}));
  EXPECT_EQ(listed.status, 200);
  EXPECT_EQ(body_of(listed)["provisions"], Json::array());
}

TEST_F(AgentRoutes, TheReportIsTheSnapshotsOwnTextShared) {
  AgentSnapshot first;
  first.scanning = true;
  EXPECT_EQ(report_answer(first).status, 503);
  first.partial_text = std::make_shared<const std::string>(R"({"verdict": "pending"})");
  EXPECT_EQ(report_answer(first).text(), *first.partial_text);

  start();
  const auto snapshot = m_agent->snapshot();
  const auto answer = report_answer(*snapshot);
  EXPECT_EQ(answer.status, 200);
  ASSERT_EQ(answer.shared.size(), 1U);
  EXPECT_EQ(answer.shared[0], snapshot->report_text) << "served without a copy per request";
  EXPECT_EQ(body_of(answer)["scan_id"], snapshot->report->scan_id.value_or(0));
}

TEST_F(AgentRoutes, MetricsAreRenderedOnceUntilTheirInputsChange) {
  start();
  MetricsAnswer metrics("1.2.3");
  const auto first = metrics.answer(*m_agent);
  const auto second = metrics.answer(*m_agent);
  ASSERT_EQ(first.shared.size(), 2U);
  EXPECT_EQ(first.shared[0], second.shared[0]) << "the report's series are rendered once";
  EXPECT_NE(first.shared[0]->find("envcontract_host_compliant"), std::string::npos);
  EXPECT_NE(first.shared[1]->find("envcontract_scans_total"), std::string::npos);
  EXPECT_EQ(first.content_type, "text/plain; version=0.0.4; charset=utf-8");

  // A new report: its series are rendered anew, and the agent's counters too.
  const auto before = m_agent->snapshot()->report;
  const auto ticket = m_agent->request_scan("test");
  const auto finished = [&] {
    const auto now = m_agent->ticket(ticket);
    return now && (now->state == "done" || now->state == "failed");
  };
  for (int i = 0; i < 1000 && !finished(); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(m_agent->ticket(ticket).value().state, "done");
  ASSERT_NE(m_agent->snapshot()->report, before);
  const auto third = metrics.answer(*m_agent);
  EXPECT_NE(third.shared[0], first.shared[0]);
  EXPECT_NE(first.shared[1]->find("envcontract_scans_total 1\n"), std::string::npos);
  EXPECT_NE(third.shared[1]->find("envcontract_scans_total 2\n"), std::string::npos);
}

TEST(AgentRoutesWithoutAgent, TheDashboardsFilesAndHealth) {
  const auto page = asset_answer("/");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.content_type.find("text/html"), std::string::npos);
  bool csp = false;
  for (const auto& [name, value] : page.headers) {
    csp = csp || (name == "Content-Security-Policy" && value.find("default-src 'self'") == 0);
  }
  EXPECT_TRUE(csp);
  EXPECT_EQ(asset_answer("/nope.js").status, 404);

  const auto health = healthz_answer("1.2.3", 42s);
  EXPECT_EQ(body_of(health),
            (Json{{"status", "ok"}, {"version", "1.2.3"}, {"uptime_seconds", 42}}));
}

}  // namespace
}  // namespace envcontract::daemon
