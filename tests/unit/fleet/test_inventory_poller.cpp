// fleet/inventory_poller.cpp: the fleet of an inventory file, polled from
// real agents on 127.0.0.1 that answer, go down, come back or hold a
// request: each host's latest answer in inventory order, what was last
// known of a host that went down, the history of the polls, at most
// `concurrency` requests at once, and a stop that does not wait for a poll.
#include "fleet/inventory_poller.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/json_text.hpp"
#include "tests/support/loopback_http.hpp"

namespace envcontract::fleet {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// An agent on 127.0.0.1, each connection served on a thread of its own:
// it answers with a report, or goes down (closes every connection
// unanswered), and may be slow: it holds each request for a while, or
// until release(). It counts the requests it read and the most it held at
// once (from a request's head read to its answer begun, so never more
// than the client had in flight).
class FakeAgent {
 public:
  explicit FakeAgent(std::string body) : m_body(std::move(body)) {}
  FakeAgent(const FakeAgent&) = delete;
  FakeAgent& operator=(const FakeAgent&) = delete;

  HostAddress address() const { return parse_host_address(m_listener.address()).value(); }
  void answer(std::string body) {
    std::lock_guard lock(m_mutex);
    m_down = false;
    m_body = std::move(body);
  }
  void go_down() {
    std::lock_guard lock(m_mutex);
    m_down = true;
  }
  void slow(std::chrono::milliseconds hold) {
    std::lock_guard lock(m_mutex);
    m_hold = hold;
  }
  void release() {
    {
      std::lock_guard lock(m_mutex);
      m_released = true;
    }
    m_changed.notify_all();
  }
  // Waits until `count` requests were read, or `within` passed.
  bool wait_for_requests(std::size_t count, std::chrono::milliseconds within) {
    std::unique_lock lock(m_mutex);
    return m_changed.wait_for(lock, within, [&] { return m_requests >= count; });
  }
  std::size_t requests() const {
    std::lock_guard lock(m_mutex);
    return m_requests;
  }
  std::size_t most_in_flight() const {
    std::lock_guard lock(m_mutex);
    return m_most_in_flight;
  }

 private:
  void respond(int client) {
    if (!testing::read_request_head(client)) {
      return;
    }
    std::string response;
    {
      std::unique_lock lock(m_mutex);
      ++m_requests;
      ++m_in_flight;
      m_most_in_flight = std::max(m_most_in_flight, m_in_flight);
      m_changed.notify_all();
      if (m_down) {
        --m_in_flight;
        return;
      }
      m_changed.wait_for(lock, m_hold, [this] { return m_stopping || m_released; });
      --m_in_flight;
      response = testing::http_answer(200, m_body);
    }
    testing::send_all(client, response);
  }

  mutable std::mutex m_mutex;
  std::condition_variable m_changed;
  bool m_stopping = false;
  std::string m_body;
  bool m_down = false;
  std::chrono::milliseconds m_hold{0};
  bool m_released = false;
  std::size_t m_requests = 0;
  std::size_t m_in_flight = 0;
  std::size_t m_most_in_flight = 0;
  // Last: its connections end (stopping wakes their holds) before the rest goes.
  testing::ThreadedLoopbackListener m_listener{[this](int client) { respond(client); },
                                               [this] {
                                                 {
                                                   std::lock_guard lock(m_mutex);
                                                   m_stopping = true;
                                                 }
                                                 m_changed.notify_all();
                                               }};
};

// A port on 127.0.0.1 that nothing listens on (bound, then closed).
HostAddress nobody_listening() {
  return parse_host_address(testing::address_nobody_listens_on()).value();
}

std::string report_text(const std::string& verdict, const std::string& platform = "kunlunxin") {
  const Json failing = {{"id", "torch-cpu-build"},
                        {"kind", "torch"},
                        {"status", "fail"},
                        {"severity", "required"},
                        {"diagnosis",
                         {{"cause", "cuda_build"},
                          {"summary", "a CUDA build of torch"},
                          {"evidence", {{"torch_version", "2.10.0+cu129"}}},
                          {"remedy", "install the CPU build"}}}};
  const Json passing = {
      {"id", "python"}, {"kind", "python"}, {"status", "pass"}, {"severity", "required"}};
  Json checks = Json::array({passing});
  if (verdict != "compliant") {
    checks.push_back(failing);
  }
  return common::json_text(
      {{"schema_version", 1},
       {"verdict", verdict},
       {"scanned_at", "2026-12-01T10:00:00Z"},
       {"contract", {{"name", platform}, {"platform", platform}}},
       {"envs",
        Json::array({{{"name", "torch"},
                      {"verdict", verdict == "compliant" || verdict == "drift" ? verdict : "error"},
                      {"checks", checks}}})}});
}

InventoryPoller::Options options_for(std::vector<HostAddress> hosts) {
  InventoryPoller::Options options;
  options.hosts = std::move(hosts);
  options.client.timeout = 5s;
  options.interval = 60s;
  return options;
}

// Waits for what the poller shows, checking it as it changes; false when
// `within` passed first.
bool eventually(const std::function<bool()>& shown, std::chrono::milliseconds within) {
  const auto deadline = Clock::now() + within;
  while (!shown()) {
    if (Clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

std::vector<std::string> states_of(const InventoryPoller::Polled& polled) {
  std::vector<std::string> states;
  for (const auto& host : *polled.hosts) {
    states.push_back(host.state());
  }
  return states;
}

struct Counts {
  int compliant, drift, error, down;
  bool operator==(const Counts&) const = default;
};
Counts counts(const CompliancePoint& point) {
  return {point.compliant, point.drift, point.error, point.down};
}
std::vector<Counts> counts(const ComplianceHistory& history) {
  std::vector<Counts> all;
  for (const auto& point : history.points) {
    all.push_back(counts(point));
  }
  return all;
}
std::ostream& operator<<(std::ostream& out, const Counts& c) {
  return out << "{compliant " << c.compliant << ", drift " << c.drift << ", error " << c.error
             << ", down " << c.down << "}";
}

TEST(InventoryPoller, BeforeItsFirstPollEveryHostIsNotAskedYet) {
  FakeAgent agent(report_text("compliant"));
  const auto down = nobody_listening();
  InventoryPoller poller(options_for({agent.address(), down}));
  const auto polled = poller.latest();
  ASSERT_EQ(polled.hosts->size(), 2U);
  EXPECT_EQ((*polled.hosts)[0].address.text, agent.address().text);
  EXPECT_EQ((*polled.hosts)[1].address.text, down.text);
  for (const auto& host : *polled.hosts) {
    EXPECT_FALSE(host.report);
    EXPECT_FALSE(host.up);
    EXPECT_EQ(host.state(), "unavailable");
    EXPECT_NE(host.error, "");
  }
  EXPECT_EQ(polled.polls, 0U);
  EXPECT_EQ(polled.at, "");
  EXPECT_FALSE(polled.polling);
  EXPECT_TRUE(polled.history.points.empty());
  EXPECT_EQ(polled.history.step_seconds, 60);
  EXPECT_EQ(agent.requests(), 0U) << "nothing is asked before a poll";
}

TEST(InventoryPoller, APollKeepsEachHostsAnswerInInventoryOrder) {
  FakeAgent compliant(report_text("compliant"));
  FakeAgent drift(report_text("drift"));
  FakeAgent error(report_text("error"));
  InventoryPoller poller(
      options_for({compliant.address(), nobody_listening(), drift.address(), error.address()}));
  poller.poll_once();
  const auto polled = poller.latest();
  EXPECT_EQ(states_of(polled),
            (std::vector<std::string>{"compliant", "unavailable", "drift", "error"}));
  EXPECT_EQ((*polled.hosts)[0].address.text, compliant.address().text);
  EXPECT_TRUE((*polled.hosts)[0].up);
  EXPECT_FALSE((*polled.hosts)[1].up);
  EXPECT_NE((*polled.hosts)[1].error, "");
  EXPECT_EQ(polled.polls, 1U);
  EXPECT_NE(polled.at, "");
  EXPECT_FALSE(polled.polling);
  ASSERT_EQ(polled.history.points.size(), 1U);
  EXPECT_EQ(counts(polled.history.points[0]), (Counts{1, 1, 1, 1}));
  EXPECT_EQ(polled.history.points[0].time, polled.at);
}

// Down, a host stays under the filters it matched with what was last
// known of it; it is never judged on it again.
TEST(InventoryPoller, AHostThatGoesDownKeepsWhatWasLastKnownUntilItComesBack) {
  FakeAgent agent(report_text("compliant", "ascend"));
  InventoryPoller poller(options_for({agent.address()}));
  poller.poll_once();
  const HostReport seen = poller.latest().hosts->at(0);
  ASSERT_TRUE(seen.report) << seen.error;
  ASSERT_NE(seen.last_seen, "");

  agent.go_down();
  for (int poll = 0; poll < 2; ++poll) {
    poller.poll_once();
    const HostReport down = poller.latest().hosts->at(0);
    EXPECT_FALSE(down.report);
    EXPECT_EQ(down.state(), "unavailable");
    EXPECT_EQ(down.last_seen, seen.last_seen) << "poll " << poll;
    EXPECT_EQ(down.last_verdict, "compliant");
    ASSERT_TRUE(down.last_known);
    EXPECT_EQ(down.last_known->verdict, report::Verdict::compliant);
    EXPECT_EQ(down.last_known->contract.platform, "ascend");
    EXPECT_EQ(down.last_known_from, "its answer at " + seen.last_seen) << "poll " << poll;
  }
  FleetFilter ascend;
  ascend.platform = "ascend";
  EXPECT_EQ(counts(poller.history_matching(ascend)),
            (std::vector<Counts>{{1, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 0, 1}}));

  agent.answer(report_text("drift", "ascend"));
  poller.poll_once();
  const HostReport back = poller.latest().hosts->at(0);
  ASSERT_TRUE(back.report) << back.error;
  EXPECT_EQ(back.state(), "drift");
  EXPECT_FALSE(back.last_known) << "what it says now, not what it said";
  EXPECT_EQ(counts(poller.latest().history),
            (std::vector<Counts>{{1, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 0, 1}, {0, 1, 0, 0}}));
  EXPECT_EQ(poller.latest().polls, 4U);
}

// The view asks an agent for the whole report on demand: a poll keeps
// verdicts and failing checks with their causes, no evidence.
TEST(InventoryPoller, APollKeepsSummariesWithoutEvidence) {
  FakeAgent agent(report_text("drift"));
  InventoryPoller poller(options_for({agent.address()}));
  poller.poll_once();
  const HostReport host = poller.latest().hosts->at(0);
  ASSERT_TRUE(host.report) << host.error;
  ASSERT_EQ(host.report->envs.size(), 1U);
  const auto& checks = host.report->envs[0].checks;
  ASSERT_EQ(checks.size(), 1U) << "the failing check alone";
  EXPECT_EQ(checks[0].id, "torch-cpu-build");
  ASSERT_TRUE(checks[0].diagnosis);
  EXPECT_EQ(checks[0].diagnosis->cause, "cuda_build");
  EXPECT_EQ(checks[0].diagnosis->evidence, Json::object());
  EXPECT_EQ(checks[0].diagnosis->remedy, "");
}

TEST(InventoryPoller, TheHistoryKeepsItsLatestPointsOnly) {
  FakeAgent agent(report_text("compliant"));
  auto options = options_for({agent.address()});
  options.history_points = 2;
  InventoryPoller poller(options);
  poller.poll_once();
  agent.answer(report_text("drift"));
  poller.poll_once();
  agent.go_down();
  poller.poll_once();
  const auto polled = poller.latest();
  EXPECT_EQ(polled.polls, 3U);
  EXPECT_EQ(counts(polled.history), (std::vector<Counts>{{0, 1, 0, 0}, {0, 0, 0, 1}}));
  EXPECT_EQ(counts(poller.history_matching(FleetFilter{})), counts(polled.history));
}

// Which hosts count is decided by what they match now; each counts with
// the state it had at each poll.
TEST(InventoryPoller, AFiltersHistoryCountsItsHostsAsTheyWereAtEachPoll) {
  FakeAgent kunlunxin(report_text("compliant", "kunlunxin"));
  FakeAgent ascend(report_text("compliant", "ascend"));
  InventoryPoller poller(options_for({kunlunxin.address(), ascend.address()}));
  poller.poll_once();
  kunlunxin.answer(report_text("drift", "kunlunxin"));
  ascend.go_down();
  poller.poll_once();

  EXPECT_EQ(counts(poller.history_matching(FleetFilter{})),
            (std::vector<Counts>{{2, 0, 0, 0}, {0, 1, 0, 1}}));
  EXPECT_EQ(counts(poller.history_matching(FleetFilter{})), counts(poller.latest().history));
  FleetFilter platform;
  platform.platform = "KUNLUNXIN";
  EXPECT_EQ(counts(poller.history_matching(platform)),
            (std::vector<Counts>{{1, 0, 0, 0}, {0, 1, 0, 0}}));
  platform.platform = "ascend";
  EXPECT_EQ(counts(poller.history_matching(platform)),
            (std::vector<Counts>{{1, 0, 0, 0}, {0, 0, 0, 1}}));
  // A verdict filter keeps that count alone, of every host at each poll.
  FleetFilter verdict;
  verdict.verdict = "compliant";
  EXPECT_EQ(counts(poller.history_matching(verdict)),
            (std::vector<Counts>{{2, 0, 0, 0}, {0, 0, 0, 0}}));
  verdict.verdict = "drift";
  EXPECT_EQ(counts(poller.history_matching(verdict)),
            (std::vector<Counts>{{0, 0, 0, 0}, {0, 1, 0, 0}}));
  FleetFilter cause;
  cause.cause = "cuda_build";
  EXPECT_EQ(counts(poller.history_matching(cause)),
            (std::vector<Counts>{{1, 0, 0, 0}, {0, 1, 0, 0}}));
  EXPECT_NE(poller.history_matching(cause).scope, "");
}

TEST(InventoryPoller, StartPollsAtOnceAndThenEveryInterval) {
  FakeAgent agent(report_text("compliant"));
  auto options = options_for({agent.address()});
  options.interval = 50ms;
  InventoryPoller poller(options);
  poller.start();
  ASSERT_TRUE(eventually([&] { return poller.latest().polls >= 3; }, 2500ms))
      << poller.latest().polls << " polls";
  EXPECT_GE(agent.requests(), 3U);
  EXPECT_EQ(states_of(poller.latest()), std::vector<std::string>{"compliant"});
}

TEST(InventoryPoller, ItStopsAtOnceBetweenPolls) {
  FakeAgent agent(report_text("compliant"));
  auto poller = std::make_unique<InventoryPoller>(options_for({agent.address()}));
  poller->start();
  ASSERT_TRUE(eventually([&] { return poller->latest().polls == 1; }, 2500ms));
  const auto began = Clock::now();
  poller.reset();
  EXPECT_LT(Clock::now() - began, 10s) << "not the minute of its interval";
  EXPECT_EQ(agent.requests(), 1U);
}

// A shutdown waits for the request that runs (bounded by the client's
// timeout), and asks none of the hosts the poll had left.
TEST(InventoryPoller, ItStopsDuringAPollAfterOneRequestAtMost) {
  FakeAgent agent(report_text("compliant"));
  agent.slow(10s);  // until the agent stops: the client gives up first
  auto options = options_for(std::vector<HostAddress>(8, agent.address()));
  options.client.timeout = 2s;
  options.concurrency = 1;
  auto poller = std::make_unique<InventoryPoller>(options);
  poller->start();
  ASSERT_TRUE(agent.wait_for_requests(1, 10s));
  const auto began = Clock::now();
  poller.reset();
  EXPECT_LT(Clock::now() - began, 8s) << "one request's timeout, not eight";
  EXPECT_EQ(agent.requests(), 1U);
}

TEST(InventoryPoller, AtMostConcurrencyHostsAreAskedAtOnce) {
  FakeAgent agent(report_text("compliant"));
  // A slow agent: a poller that asked more at once would have them all in
  // flight together.
  agent.slow(1s);
  auto options = options_for(std::vector<HostAddress>(9, agent.address()));
  options.concurrency = 3;
  InventoryPoller poller(options);
  poller.poll_once();
  EXPECT_EQ(agent.requests(), 9U);
  EXPECT_LE(agent.most_in_flight(), 3U);
  EXPECT_GE(agent.most_in_flight(), 2U) << "asked one at a time";
  EXPECT_EQ(states_of(poller.latest()), std::vector<std::string>(9, "compliant"));
}

// While a poll runs, the view shows the previous one and says so.
TEST(InventoryPoller, APollRunningIsShownAndItsAnswersOnlyWhenItEnds) {
  FakeAgent agent(report_text("compliant"));
  agent.slow(2500ms);
  InventoryPoller poller(options_for({agent.address()}));
  const auto before = Clock::now();
  std::thread polling([&] { poller.poll_once(); });
  const bool asked = agent.wait_for_requests(1, 10s);
  const auto running = poller.latest();
  agent.release();
  polling.join();
  ASSERT_TRUE(asked);
  EXPECT_TRUE(running.polling);
  EXPECT_GE(running.polling_since, before);
  EXPECT_EQ(running.polls, 0U);
  EXPECT_EQ(states_of(running), std::vector<std::string>{"unavailable"});
  const auto done = poller.latest();
  EXPECT_FALSE(done.polling);
  EXPECT_EQ(done.polls, 1U);
  EXPECT_GE(done.finished, running.polling_since);
  EXPECT_EQ(states_of(done), std::vector<std::string>{"compliant"});
}

}  // namespace
}  // namespace envcontract::fleet
