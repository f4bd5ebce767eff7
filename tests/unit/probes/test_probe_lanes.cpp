// The lanes of a scan: a lane per env the scan is probing or has yet to
// probe, and one spare only once fewer envs are left than lanes.
#include "probes/probe_lanes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <thread>

namespace envcontract::probes {
namespace {

TEST(ProbeLanes, ALaneIsSpareOnlyOnceFewerEnvsAreLeftThanLanes) {
  const ProbeLanes lanes(2, 3);
  EXPECT_EQ(lanes.free(), 0);
  EXPECT_FALSE(lanes.spare()) << "three envs to probe hold both lanes";
  lanes.env_done();
  EXPECT_EQ(lanes.free(), 0) << "the lane goes to the env still waiting";
  lanes.env_done();
  EXPECT_EQ(lanes.free(), 1) << "one env left: the other lane is spare";
  {
    const auto beside = lanes.spare();
    EXPECT_TRUE(beside);
    EXPECT_EQ(lanes.free(), 0);
    EXPECT_FALSE(lanes.spare()) << "every lane is held";
  }
  EXPECT_EQ(lanes.free(), 1) << "a chain's lane is given back when it ends";
  lanes.env_done();
  lanes.env_done();  // one turn too many gives back nothing more
  EXPECT_EQ(lanes.free(), 2);
}

TEST(ProbeLanes, ALoneEnvLeavesTheOtherLanesSpare) {
  const ProbeLanes lanes(4, 1);
  EXPECT_EQ(lanes.free(), 3);
}

TEST(ProbeLanes, AnEnvsTurnEndsHoweverItsJobEnds) {
  const ProbeLanes lanes(1, 1);
  try {
    const ProbeLanes::EnvTurn turn(lanes);
    throw std::runtime_error("the env's job failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(lanes.free(), 1);
}

TEST(ProbeLanes, AHoldOutlivesTheLanesAndMovesWithOwnership) {
  std::optional<ProbeLanes> lanes(std::in_place, 2, 0);
  const ProbeLanes observer = *lanes;  // the same lanes, for after they are gone
  std::optional<ProbeLanes::Hold> kept;
  {
    auto hold = lanes->spare();
    ASSERT_TRUE(hold);
    ProbeLanes::Hold moved = std::move(hold);
    EXPECT_FALSE(hold);  // NOLINT(bugprone-use-after-move): what a move leaves is the point
    EXPECT_TRUE(moved);
    kept.emplace(std::move(moved));
    EXPECT_EQ(observer.free(), 1);
  }
  // Assigned over, a hold gives its lane back and takes the other's.
  auto second = lanes->spare();
  ASSERT_TRUE(second);
  EXPECT_EQ(observer.free(), 0);
  *kept = std::move(second);
  EXPECT_EQ(observer.free(), 1);
  lanes.reset();
  kept.reset();  // a probe left behind by its scan gives its lane back whenever it ends
  EXPECT_EQ(observer.free(), 2);
}

TEST(ProbeLanes, NoCountMeansOneLanePerCore) {
  const ProbeLanes lanes(0, 0);
  EXPECT_EQ(lanes.free(), static_cast<int>(std::max(1U, std::thread::hardware_concurrency())));
}

}  // namespace
}  // namespace envcontract::probes
