// fleet/fleet_source.cpp: where the fleet view's hosts come from: a
// Prometheus asked on demand (here a real HTTP server on 127.0.0.1 that
// answers as its query API would, or as no Prometheus would), or an
// inventory's agents polled; how old the hosts served are, and why.
#include "fleet/fleet_source.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

#include "common/json_text.hpp"
#include "tests/support/loopback_http.hpp"

namespace envcontract::fleet {
namespace {

using namespace std::chrono_literals;

std::string url_decoded(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// An HTTP server on 127.0.0.1 answering as Prometheus' query API: each
// request gets the `data.result` of the first rule whose text its decoded
// request line holds, else an empty result; or, when set, one status and
// body for every request. Keeps the decoded request lines.
class FakePrometheus {
 public:
  HostAddress address() const { return parse_host_address(m_listener.address()).value(); }
  void results(std::vector<std::pair<std::string, Json>> rules) {
    std::lock_guard lock(m_mutex);
    m_rules = std::move(rules);
    m_status = 0;
  }
  void answer_all(int status, std::string body) {
    std::lock_guard lock(m_mutex);
    m_status = status;
    m_body = std::move(body);
  }
  std::vector<std::string> requests() const {
    std::lock_guard lock(m_mutex);
    return m_requests;
  }

 private:
  void respond(int client) {
    const auto head = testing::read_request_head(client);
    if (!head) {
      return;
    }
    std::string response;
    {
      std::lock_guard lock(m_mutex);
      const std::string line = url_decoded(head->substr(0, head->find("\r\n")));
      m_requests.push_back(line);
      int status = m_status;
      std::string body = m_body;
      if (status == 0) {
        Json result = Json::array();
        for (const auto& [text, answer] : m_rules) {
          if (line.find(text) != std::string::npos) {
            result = answer;
            break;
          }
        }
        status = 200;
        body = common::json_text(
            Json{{"status", "success"}, {"data", {{"resultType", "vector"}, {"result", result}}}});
      }
      response = testing::http_answer(status, body);
    }
    testing::send_all(client, response);
  }

  mutable std::mutex m_mutex;
  std::vector<std::pair<std::string, Json>> m_rules;
  int m_status = 0;  // 0: answer by the rules
  std::string m_body;
  std::vector<std::string> m_requests;
  // Last: its thread serves until it is destroyed, before what it uses.
  testing::LoopbackListener m_listener{[this](int client) { respond(client); }};
};

// A port on 127.0.0.1 that nothing listens on (bound, then closed).
HostAddress nobody_listening() {
  return parse_host_address(testing::address_nobody_listens_on()).value();
}

Json series(Json metric, const std::string& value = "1") {
  metric["instance"] = "node-1:9714";
  metric["job"] = "envcontract";
  return Json::array({{{"metric", std::move(metric)}, {"value", Json::array({1, value})}}});
}

// The rules of one agent that is up with `verdict`.
std::vector<std::pair<std::string, Json>> agent_up(const std::string& verdict) {
  return {
      {"query=up{", series(Json::object())},
      {"query=envcontract_host_verdict{", series({{"verdict", verdict}})},
      {"query=envcontract_info{", series({{"contract", "kunlunxin"}, {"platform", "kunlunxin"}})}};
}

// The rules of that agent once Prometheus can no longer scrape it.
std::vector<std::pair<std::string, Json>> agent_down() {
  return {{"query=up{", series(Json::object(), "0")}};
}

PrometheusSource::Options options_for(const HostAddress& prometheus,
                                      std::chrono::milliseconds fresh_for) {
  PrometheusSource::Options options;
  options.prometheus = prometheus;
  options.client.timeout = 5s;
  options.history_range = 1h;
  options.history_points = 60;
  options.fresh_for = fresh_for;
  // Long enough that every wait ends with the read it waits for.
  options.first_wait = 30s;
  options.read_wait = 30s;
  return options;
}

std::size_t asked(const std::vector<std::string>& requests, const std::string& text) {
  return static_cast<std::size_t>(
      std::count_if(requests.begin(), requests.end(),
                    [&](const std::string& line) { return line.find(text) != std::string::npos; }));
}

TEST(FleetSource, ASnapshotWithoutHostsIsNeverOld) {
  FleetSnapshot snapshot;
  snapshot.why_old = "the reads fail";
  snapshot.refresh_seconds = 0;
  snapshot.read_at = std::chrono::steady_clock::now() - 1h;
  EXPECT_EQ(snapshot.age_seconds(), 0);
  EXPECT_EQ(snapshot.stale(), "") << "no hosts: nothing is served as current";
}

TEST(FleetSource, HostsOlderThanTheRefreshSayWhy) {
  FleetSnapshot snapshot;
  snapshot.hosts = std::make_shared<const std::vector<HostReport>>();
  snapshot.why_old = "the reads fail";
  snapshot.refresh_seconds = 60;
  snapshot.read_at = std::chrono::steady_clock::now() - 120s;
  EXPECT_GE(snapshot.age_seconds(), 120);
  EXPECT_EQ(snapshot.stale(), "the reads fail");
  snapshot.read_at = std::chrono::steady_clock::now();
  EXPECT_LT(snapshot.age_seconds(), 60);
  EXPECT_EQ(snapshot.stale(), "");
}

TEST(FleetSource, TheFirstSnapshotWaitsForPrometheusHosts) {
  FakePrometheus prometheus;
  prometheus.results(agent_up("drift"));
  PrometheusSource source(options_for(prometheus.address(), 60s));
  const auto snapshot = source.snapshot();
  ASSERT_TRUE(snapshot.hosts) << snapshot.problem;
  ASSERT_EQ(snapshot.hosts->size(), 1U);
  EXPECT_EQ(snapshot.hosts->front().state(), "drift");
  EXPECT_EQ(snapshot.source, "prometheus " + prometheus.address().base_url() + " job envcontract");
  EXPECT_EQ(snapshot.problem, "");
  EXPECT_EQ(snapshot.refresh_seconds, 60);
  EXPECT_FALSE(snapshot.as_of.empty());
  EXPECT_EQ(snapshot.stale(), "") << "just read";
  EXPECT_EQ(snapshot.history.problem, "");
  EXPECT_FALSE(snapshot.history.points.empty());
}

// A page open on many screens does not multiply the queries.
TEST(FleetSource, SnapshotsWithinFreshForAskPrometheusOnce) {
  FakePrometheus prometheus;
  prometheus.results(agent_up("compliant"));
  PrometheusSource source(options_for(prometheus.address(), 10min));
  ASSERT_TRUE(source.snapshot().hosts);
  const auto after_first = prometheus.requests();
  EXPECT_EQ(asked(after_first, "query=up{"), 1U);
  for (int i = 0; i < 5; ++i) {
    const auto again = source.snapshot();
    ASSERT_TRUE(again.hosts);
    EXPECT_EQ(again.hosts->front().state(), "compliant");
  }
  EXPECT_EQ(prometheus.requests().size(), after_first.size());
}

TEST(FleetSource, APrometheusThatCannotBeReachedGivesNoHostsAndSaysWhy) {
  PrometheusSource source(options_for(nobody_listening(), 60s));
  const auto snapshot = source.snapshot();
  EXPECT_FALSE(snapshot.hosts) << "never an empty, and so quiet, fleet";
  EXPECT_NE(snapshot.problem.find("query up{job=\"envcontract\"}"), std::string::npos)
      << snapshot.problem;
  EXPECT_EQ(snapshot.why_old, "the latest read of Prometheus failed: " + snapshot.problem);
}

// After a read fails, the hosts served are the last ones, said to be old
// and why.
TEST(FleetSource, AFailedReadKeepsTheLastHostsAndSaysTheyAreOld) {
  FakePrometheus prometheus;
  prometheus.results(agent_up("compliant"));
  PrometheusSource source(options_for(prometheus.address(), 0ms));
  const auto first = source.snapshot();
  ASSERT_TRUE(first.hosts) << first.problem;
  prometheus.answer_all(200, R"({"status": "ok"})");
  const auto second = source.snapshot();
  ASSERT_TRUE(second.hosts);
  EXPECT_EQ(second.hosts->size(), 1U);
  EXPECT_NE(second.problem.find("not an answer of Prometheus' query API"), std::string::npos)
      << second.problem;
  EXPECT_EQ(second.as_of, first.as_of) << "the hosts are those of the last read that gave them";
  EXPECT_EQ(second.stale(), "the latest read of Prometheus failed: " + second.problem);

  prometheus.results(agent_up("drift"));
  const auto third = source.snapshot();
  ASSERT_TRUE(third.hosts);
  EXPECT_EQ(third.problem, "");
  EXPECT_EQ(third.hosts->front().state(), "drift");
}

// A host that goes down keeps what the view last read of it while it was
// up; one that Prometheus stopped listing in between is forgotten.
TEST(FleetSource, AHostThatGoesDownKeepsTheViewsLastReadOfIt) {
  FakePrometheus prometheus;
  prometheus.results(agent_up("drift"));
  PrometheusSource source(options_for(prometheus.address(), 0ms));
  ASSERT_TRUE(source.snapshot().hosts);
  prometheus.results(agent_down());
  const auto down = source.snapshot();
  ASSERT_TRUE(down.hosts) << down.problem;
  ASSERT_EQ(down.hosts->size(), 1U);
  const auto& host = down.hosts->front();
  EXPECT_EQ(host.state(), "unavailable") << "never judged again";
  ASSERT_TRUE(host.last_known);
  EXPECT_EQ(host.last_known->verdict, report::Verdict::drift);
  EXPECT_EQ(host.last_known->contract.platform, "kunlunxin");
  EXPECT_EQ(host.last_known_from.rfind("the view's read of Prometheus at ", 0), 0U)
      << host.last_known_from;

  prometheus.results({});
  const auto gone = source.snapshot();
  ASSERT_TRUE(gone.hosts);
  EXPECT_TRUE(gone.hosts->empty());
  prometheus.results(agent_down());
  const auto back = source.snapshot();
  ASSERT_TRUE(back.hosts);
  ASSERT_EQ(back.hosts->size(), 1U);
  EXPECT_FALSE(back.hosts->front().last_known) << "forgotten while Prometheus did not list it";
}

TEST(FleetSource, AFiltersHistoryIsReadFromPrometheusWithTheFilter) {
  FakePrometheus prometheus;
  prometheus.results(agent_up("drift"));
  PrometheusSource source(options_for(prometheus.address(), 60s));
  FleetFilter filter;
  filter.verdict = "drift";
  const auto history = source.history(filter);
  EXPECT_EQ(history.problem, "");
  EXPECT_EQ(history.scope, "the hosts that matched the filters at each step");
  EXPECT_GT(history.step_seconds, 0);
  const auto requests = prometheus.requests();
  EXPECT_GE(asked(requests, "/api/v1/query_range?"), 1U);
  EXPECT_EQ(asked(requests, "verdict=\"drift\""), asked(requests, "/api/v1/query_range?"))
      << "only the drifting hosts' count is asked";
  EXPECT_EQ(asked(requests, "query=up{"), 0U) << "a chart asks for no hosts";
}

TEST(FleetSource, AFiltersHistoryThatPrometheusRefusesSaysWhy) {
  FakePrometheus prometheus;
  prometheus.answer_all(503, R"({"status": "error", "error": "overloaded"})");
  PrometheusSource source(options_for(prometheus.address(), 60s));
  FleetFilter filter;
  filter.cause = "hang";
  const auto history = source.history(filter);
  EXPECT_TRUE(history.points.empty());
  EXPECT_NE(history.problem.find("HTTP 503"), std::string::npos) << history.problem;
}

TEST(FleetSource, AnInventorysHostsAreServedAsOldAsItsLastPoll) {
  InventoryPoller::Options options;
  options.hosts = {nobody_listening()};
  options.client.timeout = 5s;
  options.interval = 60s;
  InventorySource source("/etc/envcontract/inventory", options);
  const std::string first_poll = "the first poll of the inventory's agents has not finished";
  auto snapshot = source.snapshot();
  // Polled on a thread of its own: wait (bounded) for the first poll.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (snapshot.why_old == first_poll && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
    snapshot = source.snapshot();
  }
  EXPECT_EQ(snapshot.source, "inventory /etc/envcontract/inventory");
  EXPECT_EQ(snapshot.refresh_seconds, 65) << "the interval and one round's time-out";
  ASSERT_NE(snapshot.why_old, first_poll);
  ASSERT_TRUE(snapshot.hosts);
  ASSERT_EQ(snapshot.hosts->size(), 1U);
  EXPECT_EQ(snapshot.hosts->front().state(), "unavailable");
  EXPECT_FALSE(snapshot.as_of.empty());
  EXPECT_EQ(snapshot.stale(), "") << "just polled";
  EXPECT_TRUE(snapshot.why_old == "the inventory's agents have not been polled since" ||
              snapshot.why_old.rfind("the poll of the inventory's agents has run for ", 0) == 0)
      << snapshot.why_old;
  const auto history = source.history({});
  ASSERT_FALSE(history.points.empty());
  EXPECT_EQ(history.points.back().down, 1);
}

TEST(FleetSource, AnInventorysRefreshCountsEachRoundOfConcurrentHosts) {
  InventoryPoller::Options options;
  options.hosts = {nobody_listening(), nobody_listening(), nobody_listening()};
  options.client.timeout = 2s;
  options.concurrency = 2;
  options.interval = 10s;
  InventorySource source("inventory.txt", options);
  EXPECT_EQ(source.snapshot().refresh_seconds, 14) << "3 hosts, 2 at a time: 2 rounds";
}

}  // namespace
}  // namespace envcontract::fleet
