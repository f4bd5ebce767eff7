// common/spelling.cpp: "did you mean" for keys, verbs and parameters.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/spelling.hpp"

namespace envcontract {
namespace {

using common::closest_match;
using common::did_you_mean;
using common::spelling_distance;

TEST(Spelling, ASwapOfNeighboursIsOneEditAndCaseIsIgnored) {
  EXPECT_EQ(spelling_distance("tirton", "triton"), 1U);
  EXPECT_EQ(spelling_distance("Triton", "triton"), 0U);
  EXPECT_EQ(spelling_distance("torch", "torhc"), 1U);
  EXPECT_EQ(spelling_distance("imports", "import"), 1U);
  EXPECT_EQ(spelling_distance("cuda", "hip"), 4U);
  EXPECT_EQ(spelling_distance("", "abc"), 3U);
}

TEST(Spelling, TheClosestCandidateWithinAThirdOfTheWord) {
  const std::vector<std::string> kinds = {"torch", "triton", "imports", "devices", "smoke"};
  EXPECT_EQ(closest_match("tirton", kinds), "triton");
  EXPECT_EQ(closest_match("import", kinds), "imports");
  EXPECT_EQ(closest_match("devcies", kinds), "devices");
  EXPECT_FALSE(closest_match("linkage", kinds).has_value()) << "nothing close";
  // Short words may still differ by one edit.
  EXPECT_EQ(closest_match("tx", std::vector<std::string>{"to"}), "to");
  EXPECT_FALSE(closest_match("tx", std::vector<std::string>{"tooo"}).has_value());
}

TEST(Spelling, TiesGoToTheFirstCandidate) {
  EXPECT_EQ(closest_match("cat", std::vector<std::string>{"bat", "cut"}), "bat");
  EXPECT_EQ(closest_match("cat", std::vector<std::string>{"cut", "bat"}), "cut");
}

TEST(Spelling, NothingTypedSuggestsNothing) {
  EXPECT_FALSE(closest_match("", std::vector<std::string>{"a", "b"}).has_value());
  EXPECT_EQ(did_you_mean("", {"a"}), "");
}

// A megabyte-long key (a contract is operator input, but bad input gets a
// clear error, not a stall): far from every candidate, told at once.
TEST(Spelling, AHugeWordIsFarFromEveryShortCandidate) {
  const std::string huge(1 << 20, 'x');
  EXPECT_FALSE(closest_match(huge, {"checks", "targets", "environment_check"}).has_value());
  // Long against long (a waiver naming a check id, both from the contract):
  // past 256 bytes nothing is suggested, rather than a table of both lengths.
  const std::string long_id(300, 'c');
  EXPECT_FALSE(closest_match(long_id + "x", {long_id}).has_value());
  EXPECT_EQ(closest_match(std::string(200, 'c') + "x", {std::string(200, 'c')}),
            std::string(200, 'c'));
  EXPECT_EQ(did_you_mean("chekcs", {"checks", "targets"}), " (did you mean 'checks'?)");
}

}  // namespace
}  // namespace envcontract
