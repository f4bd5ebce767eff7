// The agent's scheduler, in process: tickets made by scheduled scans are
// trimmed like those requested over HTTP, so an agent does not grow with time.
#include "daemon/agent.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "tests/support/empty_host.hpp"

namespace envcontract::daemon {
namespace {

using namespace std::chrono_literals;

TEST(Agent, ScheduledScansKeepOnlyTheLastTickets) {
  testing::TempDir dir;
  Agent agent(testing::empty_host_agent_config(dir, 5ms));
  ASSERT_EQ(agent.start(), "");
  std::int64_t latest = 0;
  for (int i = 0; i < 600 && latest <= 300; ++i) {
    std::this_thread::sleep_for(50ms);
    const auto snapshot = agent.snapshot();
    latest = snapshot->report ? snapshot->report->scan_id.value_or(0) : 0;
  }
  agent.stop();
  ASSERT_GT(latest, 300) << "the scheduler did not scan often enough to test trimming";
  EXPECT_LE(agent.ticket_count(), 200U);
  EXPECT_FALSE(agent.ticket(1).has_value());  // the first, long trimmed
}

}  // namespace
}  // namespace envcontract::daemon
