// The agent's scheduler, in process: tickets made by scheduled scans are
// trimmed like those requested over HTTP, so an agent does not grow with time.
#include "daemon/agent.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "tests/support/temp_dir.hpp"

namespace envcontract::daemon {
namespace {

using namespace std::chrono_literals;

TEST(Agent, ScheduledScansKeepOnlyTheLastTickets) {
  testing::TempDir dir;
  std::ofstream(dir.path() / "contract.yaml")
      << "schema_version: 1\nname: t\nchecks:\n  - kind: python\n    version: \"3\"\n";
  std::filesystem::create_directories(dir.path() / "root");
  AgentConfig config;
  config.contract = (dir.path() / "contract.yaml").string();
  config.roots = {dir.path() / "root"};
  config.database = dir.path() / "agent.db";
  config.interval = 5ms;  // an empty host scans in about a millisecond
  Agent agent(config);
  ASSERT_EQ(agent.start(), "");
  std::int64_t latest = 0;
  for (int i = 0; i < 600 && latest <= 300; ++i) {
    std::this_thread::sleep_for(50ms);
    const auto snapshot = agent.snapshot();
    latest = snapshot->report ? snapshot->report->value("scan_id", 0) : 0;
  }
  agent.stop();
  ASSERT_GT(latest, 300) << "the scheduler did not scan often enough to test trimming";
  EXPECT_LE(agent.ticket_count(), 200U);
  EXPECT_FALSE(agent.ticket(1).has_value());  // the first, long trimmed
}

}  // namespace
}  // namespace envcontract::daemon
