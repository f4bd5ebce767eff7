// What the agent tells systemd, in process with a real scheduler, a real
// HTTP side on loopback and a datagram socket where systemd's would be: the
// watchdog pings while both answer, and stop when either is gone.
#include "daemon/service_notifier.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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
  const auto problem = [&] { return agent_liveness_problem(agent, http); };

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
    EXPECT_EQ(problem(), "the HTTP side is not accepting connections");
    systemd.receive(500ms);  // a ping already on its way
    const auto after = systemd.receive(1500ms);
    EXPECT_EQ(count_messages(after, "WATCHDOG=1"), 0U) << ::testing::PrintToString(after);
  }
  agent.stop();
  EXPECT_EQ(agent.liveness_problem(), "the scheduler is not running");
}

// Clients that hold every HTTP thread (slow requests, dribbled a byte at a
// time) and fill the queue do not make the agent look stuck: threads keep
// taking connections as each one's http_timeout ends, so the watchdog goes
// on pinging and systemd does not restart an agent under such load.
TEST(ServiceNotifier, SlowClientsFillingEveryThreadAreNotAStuckAgent) {
  testing::TempDir dir;
  auto config = testing::empty_host_agent_config(dir, 1h);
  config.http_threads = 2;
  config.http_max_connections = 40;
  config.http_timeout = 1s;
  Agent agent(config);
  HttpServer http(agent, "test");
  const auto port = http.bind({"127.0.0.1", 0});
  ASSERT_TRUE(port.ok()) << port.error();
  std::thread server([&] { http.serve(); });
  ASSERT_EQ(agent.start(), "");
  std::vector<int> clients;
  for (int i = 0; i < 30; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port.value()));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    clients.push_back(fd);
  }
  std::size_t samples = 0;
  for (auto until = std::chrono::steady_clock::now() + 4s; std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(100ms)) {
    for (const int fd : clients) {
      (void)::send(fd, "G", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    EXPECT_EQ(agent_liveness_problem(agent, http), "");
    ++samples;
  }
  EXPECT_GT(samples, 20U);
  for (const int fd : clients) {
    ::close(fd);
  }
  http.stop();
  server.join();
  agent.stop();
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
