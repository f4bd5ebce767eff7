#include "common/pep440.hpp"

#include <gtest/gtest.h>

namespace envcontract::common {
namespace {

TEST(Pep440, OrdersReleasesPreReleasesPostAndDev) {
  EXPECT_EQ(compare_versions("2.10.0", "2.10"), 0);
  EXPECT_LT(*compare_versions("2.9.1", "2.10.0"), 0);
  EXPECT_LT(*compare_versions("0.6.2a2", "0.6.2"), 0);
  EXPECT_LT(*compare_versions("0.6.2a2", "0.6.2b1"), 0);
  EXPECT_LT(*compare_versions("1.0rc1", "1.0"), 0);
  EXPECT_GT(*compare_versions("1.0.post1", "1.0"), 0);
  EXPECT_LT(*compare_versions("1.0.dev1", "1.0a1"), 0);
  EXPECT_FALSE(compare_versions("not-a-version", "1.0").has_value());
}

TEST(Pep440, SpecifierClauses) {
  EXPECT_TRUE(satisfies("1.26.4", "<", "2"));
  EXPECT_FALSE(satisfies("2.0.1", "<", "2"));
  EXPECT_TRUE(satisfies("4.51.3", ">=", "4.51"));
  EXPECT_TRUE(satisfies("3.10.13", "==", "3.10.*"));
  EXPECT_FALSE(satisfies("3.11.7", "==", "3.10.*"));
  EXPECT_TRUE(satisfies("3.11.7", "!=", "3.10.*"));
  EXPECT_TRUE(satisfies("2.10.3", "~=", "2.10"));
  EXPECT_FALSE(satisfies("3.0", "~=", "2.10"));
  EXPECT_TRUE(satisfies("2.10.0+cpu", "===", "2.10.0+cpu"));
}

TEST(Pep440, LocalSegmentsAreIgnoredUnlessTheSpecNamesOne) {
  EXPECT_TRUE(satisfies("0.7.0+ascend3.5", "==", "0.7.0"));
  EXPECT_FALSE(satisfies("0.7.0+ascend3.5", "==", "0.7.0+xpu3.6"));
  EXPECT_TRUE(satisfies("0.7.0+xpu3.6", "==", "0.7.0+xpu3.6"));
}

}  // namespace
}  // namespace envcontract::common

namespace envcontract::common {
namespace {

// Found by fuzzing: a number too large for a long threw out of the parser.
TEST(Pep440, NumbersTooLargeToCompareAreNotVersions) {
  const std::string huge = "99999999999999999999999";
  EXPECT_FALSE(is_version(huge));
  EXPECT_FALSE(is_version("2." + huge));
  EXPECT_FALSE(is_version("2.0rc" + huge));
  EXPECT_FALSE(is_version("2.0.post" + huge));
  EXPECT_FALSE(is_version("2.0.dev" + huge));
  EXPECT_FALSE(compare_versions("2." + huge, "2.0"));
  EXPECT_TRUE(is_version("2.10.0rc1"));
}

}  // namespace
}  // namespace envcontract::common
