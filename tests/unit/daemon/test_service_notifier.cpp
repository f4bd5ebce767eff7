// What the agent tells systemd, in process with a real scheduler, a real
// HTTP side on loopback and a datagram socket where systemd's would be: the
// watchdog pings while both answer, and stop when either is gone.
#include "daemon/service_notifier.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "daemon/agent.hpp"
#include "daemon/http_api.hpp"
#include "tests/support/empty_host.hpp"
#include "tests/support/notify_socket.hpp"

namespace envcontract::daemon {
namespace {

using namespace std::chrono_literals;
using testing::count_messages;
using testing::has_message_starting;

TEST(ServiceNotifier, PingsWhileTheSchedulerAndTheHttpSideAnswerAndStopsWhenOneIsGone) {
  testing::TempDir dir;
  testing::NotifySocket systemd(dir.path() / "notify");
  Agent agent(testing::empty_host_agent_config(dir, 1h));
  HttpServer http(agent, "test");
  const ListenAddress address{"127.0.0.1", 0};
  const auto port = http.bind(address);
  ASSERT_TRUE(port.ok()) << port.error();
  std::thread server([&] { http.serve(); });
  ASSERT_EQ(agent.start(), "");
  const auto problem = [&] { return agent_liveness_problem(agent, address, port.value(), 500ms); };

  {
    ServiceNotifier notifier({problem, [&] { return agent_status_line(agent); }}, 400ms);
    const auto alive = systemd.receive(10s, [](const auto& messages) {
      return count_messages(messages, "WATCHDOG=1") >= 3 &&
             has_message_starting(messages, "STATUS=last scan 1: ");
    });
    EXPECT_GE(count_messages(alive, "WATCHDOG=1"), 3U);
    EXPECT_TRUE(has_message_starting(alive, "STATUS=last scan 1: drift, 0 envs (0 compliant), "))
        << ::testing::PrintToString(alive);

    // The HTTP side stops: no more pings, whatever the scheduler does.
    http.stop();
    server.join();
    EXPECT_NE(problem().find("cannot connect to its own HTTP side"), std::string::npos)
        << problem();
    systemd.receive(500ms);  // a ping already on its way
    const auto after = systemd.receive(1500ms);
    EXPECT_EQ(count_messages(after, "WATCHDOG=1"), 0U) << ::testing::PrintToString(after);
  }
  agent.stop();
  EXPECT_EQ(agent.liveness_problem(), "the scheduler is not running");
}

// Without WatchdogSec= there are no pings, only the status.
TEST(ServiceNotifier, WithoutAWatchdogOnlyTheStatusIsSent) {
  testing::TempDir dir;
  testing::NotifySocket systemd(dir.path() / "notify");
  int calls = 0;
  {
    ServiceNotifier notifier({[&] {
                                ++calls;
                                return std::string();
                              },
                              [] { return std::string("first scan running; contract t"); }},
                             0us);
    const auto messages = systemd.receive(1500ms);
    EXPECT_EQ(count_messages(messages, "STATUS=first scan running; contract t"), 1U)
        << ::testing::PrintToString(messages);
    EXPECT_EQ(count_messages(messages, "WATCHDOG=1"), 0U);
  }
  EXPECT_EQ(calls, 0);  // the liveness checks cost nothing when nobody asks
}

}  // namespace
}  // namespace envcontract::daemon
