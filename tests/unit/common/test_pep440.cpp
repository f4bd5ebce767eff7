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

TEST(Pep440, ParsesEveryPublicForm) {
  for (const char* version :
       {"1",           "1.0",       "v2.10.0",          "V1.0",         "1.0a1",
        "1.0.alpha.1", "1.0-beta2", "1.0_rc_3",         "1.0c1",        "1.0pre1",
        "1.0preview1", "1.0.post1", "1.0-r2",           "1.0rev3",      "1.0post",
        "1.0.dev",     "1.0.dev4",  "1.0a1.post2.dev3", "2.10.0+cu129", "2.10.0+cpu.cxx11.abi",
        "1.0RC1",      "1.0.POST1", "0.6.2A2"}) {
    EXPECT_TRUE(is_version(version)) << version;
  }
  for (const char* text : {"", "v", "1.", ".1", "1..0", "1.0+", "1.0+cu 129", "1.0x", "1.0a1b2",
                           "a1", "1.0.dev1.post1", "1.0-", "99999999999999999999"}) {
    EXPECT_FALSE(is_version(text)) << text;
  }
  EXPECT_EQ(compare_versions("1.0.alpha.1", "1.0a1"), 0);
  EXPECT_EQ(compare_versions("1.0-r2", "1.0.post2"), 0);
  EXPECT_EQ(compare_versions("1.0c1", "1.0rc1"), 0);
}

// Versions come from files any user may have written: a megabyte of digits
// or separators is answered at once, never with a stack overflow.
TEST(Pep440, MegabyteVersionsAreRefusedQuickly) {
  const std::string digits(1024 * 1024, '1');
  EXPECT_FALSE(is_version(digits));
  std::string dotted;
  for (int i = 0; i < 300000; ++i) {
    dotted += "1.";
  }
  dotted += "1";
  EXPECT_TRUE(is_version(dotted));
  EXPECT_FALSE(is_version(dotted + "+" + std::string(1024 * 1024, '.') + "!"));
  EXPECT_LT(*compare_versions("1.0", dotted), 0);
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
