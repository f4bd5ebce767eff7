// The lanes of a scan: an env holds one while it is probed, and a chain runs
// beside another only on a lane no one holds.
#include "probes/probe_lanes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <thread>

namespace envcontract::probes {
namespace {

TEST(ProbeLanes, ASpareLaneIsOneNoEnvHolds) {
  const ProbeLanes lanes(2);
  const auto first_env = lanes.hold_for_env();
  EXPECT_EQ(lanes.free(), 1);
  {
    const auto beside = lanes.spare();
    EXPECT_TRUE(beside);
    EXPECT_EQ(lanes.free(), 0);
    EXPECT_FALSE(lanes.spare()) << "every lane is held";
  }
  EXPECT_EQ(lanes.free(), 1) << "a chain's lane is given back when it ends";
}

TEST(ProbeLanes, AHoldOutlivesTheLanesAndMovesWithOwnership) {
  std::optional<ProbeLanes::Hold> kept;
  {
    const ProbeLanes lanes(1);
    auto hold = lanes.spare();
    ASSERT_TRUE(hold);
    ProbeLanes::Hold moved = std::move(hold);
    EXPECT_FALSE(hold);  // NOLINT(bugprone-use-after-move): what a move leaves is the point
    EXPECT_TRUE(moved);
    kept.emplace(std::move(moved));
    EXPECT_EQ(lanes.free(), 0);
  }
  kept.reset();  // a probe left behind by its scan gives its lane back whenever it ends
}

TEST(ProbeLanes, NoCountMeansOneLanePerCore) {
  const ProbeLanes lanes(0);
  EXPECT_EQ(lanes.free(), static_cast<int>(std::max(1U, std::thread::hardware_concurrency())));
}

}  // namespace
}  // namespace envcontract::probes
