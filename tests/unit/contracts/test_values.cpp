#include "contracts/values.hpp"

#include <gtest/gtest.h>

namespace envcontract::contracts {
namespace {

template <typename T>
const T& value_of(const common::Result<T>& parsed) {
  if (!parsed) {
    ADD_FAILURE() << "unexpected error: " << parsed.error();
    static const T empty{};
    return empty;
  }
  return parsed.value();
}

template <typename T>
std::string error_of(const common::Result<T>& parsed) {
  return parsed ? std::string("<no error>") : parsed.error();
}

TEST(Comparison, ReadsEveryOperatorAndBareNumbers) {
  EXPECT_EQ(value_of(parse_comparison("8")).op, "==");
  EXPECT_EQ(value_of(parse_comparison("8")).value, 8);
  EXPECT_EQ(value_of(parse_comparison("== 8")).op, "==");
  EXPECT_EQ(value_of(parse_comparison(">=1")).op, ">=");
  EXPECT_EQ(value_of(parse_comparison(">=1")).value, 1);
  EXPECT_EQ(value_of(parse_comparison(" > 0 ")).op, ">");
}

TEST(Comparison, HoldsForMatchingCounts) {
  EXPECT_TRUE(value_of(parse_comparison(">= 8")).holds_for(8));
  EXPECT_FALSE(value_of(parse_comparison(">= 8")).holds_for(7));
  EXPECT_TRUE(value_of(parse_comparison("> 0")).holds_for(1));
  EXPECT_FALSE(value_of(parse_comparison("> 0")).holds_for(0));
  EXPECT_TRUE(value_of(parse_comparison("8")).holds_for(8));
  EXPECT_FALSE(value_of(parse_comparison("8")).holds_for(9));
}

TEST(Comparison, RejectsOtherOperatorsNegativesAndText) {
  EXPECT_NE(error_of(parse_comparison("< 3")).find("only '==', '>=' and '>'"), std::string::npos);
  EXPECT_NE(error_of(parse_comparison(">= -1")).find("cannot be negative"), std::string::npos);
  EXPECT_NE(error_of(parse_comparison("many")).find("expected a count"), std::string::npos);
  EXPECT_NE(error_of(parse_comparison("")).find("expected a count"), std::string::npos);
}

TEST(Duration, ReadsUnits) {
  using std::chrono::milliseconds;
  EXPECT_EQ(value_of(parse_duration("500ms")), milliseconds(500));
  EXPECT_EQ(value_of(parse_duration("30s")), milliseconds(30'000));
  EXPECT_EQ(value_of(parse_duration("30")), milliseconds(30'000));
  EXPECT_EQ(value_of(parse_duration("5m")), milliseconds(300'000));
  EXPECT_EQ(value_of(parse_duration("1h")), milliseconds(3'600'000));
}

TEST(Duration, RejectsZeroHugeAndUnknownUnits) {
  EXPECT_NE(error_of(parse_duration("0s")).find("must be positive"), std::string::npos);
  EXPECT_NE(error_of(parse_duration("25h")).find("at most 24h"), std::string::npos);
  EXPECT_NE(error_of(parse_duration("10 parsecs")).find("expected a duration"), std::string::npos);
  EXPECT_NE(error_of(parse_duration("-5s")).find("expected a duration"), std::string::npos);
}

TEST(VersionSpecifier, ReadsClauses) {
  const auto clauses = value_of(parse_version_specifier(">=4.51,<5"));
  ASSERT_EQ(clauses.size(), 2U);
  EXPECT_EQ(clauses[0].op, ">=");
  EXPECT_EQ(clauses[0].version, "4.51");
  EXPECT_EQ(clauses[1].op, "<");
  EXPECT_EQ(clauses[1].version, "5");
}

TEST(VersionSpecifier, BareVersionIsExactOrPrefix) {
  const auto exact = value_of(parse_version_specifier("0.7.0", BareVersion::exact));
  ASSERT_EQ(exact.size(), 1U);
  EXPECT_EQ(exact[0].op, "==");
  EXPECT_EQ(exact[0].version, "0.7.0");
  const auto prefix = value_of(parse_version_specifier("3.10", BareVersion::prefix));
  ASSERT_EQ(prefix.size(), 1U);
  EXPECT_EQ(prefix[0].version, "3.10.*");
}

TEST(VersionSpecifier, AcceptsLocalAndPreReleaseVersions) {
  EXPECT_EQ(value_of(parse_version_specifier("==0.7.0+ascend3.5"))[0].version, "0.7.0+ascend3.5");
  EXPECT_EQ(value_of(parse_version_specifier("==0.6.2a2"))[0].version, "0.6.2a2");
  EXPECT_EQ(value_of(parse_version_specifier("~=2.10"))[0].op, "~=");
}

TEST(VersionSpecifier, RejectsMalformedClauses) {
  EXPECT_NE(error_of(parse_version_specifier(">=abc")).find("not a valid version"),
            std::string::npos);
  EXPECT_NE(error_of(parse_version_specifier(">=1,")).find("empty clause"), std::string::npos);
  EXPECT_NE(error_of(parse_version_specifier(">=1.*")).find("only allowed with"),
            std::string::npos);
  EXPECT_NE(error_of(parse_version_specifier("~=2")).find("at least two"), std::string::npos);
}

TEST(Names, ValidateEachKind) {
  EXPECT_TRUE(is_module_name("torch_fl"));
  EXPECT_TRUE(is_module_name("triton.backends"));
  EXPECT_FALSE(is_module_name("torch-fl"));
  EXPECT_FALSE(is_module_name("1torch"));
  EXPECT_TRUE(is_environment_variable_name("LD_LIBRARY_PATH"));
  EXPECT_FALSE(is_environment_variable_name("LD-LIBRARY"));
  EXPECT_TRUE(is_distribution_name("flag-gems"));
  EXPECT_FALSE(is_distribution_name("-flag"));
  EXPECT_TRUE(is_check_id("torch-cpu.build_1"));
  EXPECT_FALSE(is_check_id("has space"));
  EXPECT_TRUE(is_file_name("libbkcl.so"));
  EXPECT_FALSE(is_file_name("lib/libbkcl.so"));
}

TEST(ImageReference, SplitsRepositoryTagAndDigest) {
  const auto image = value_of(parse_image_reference(
      "harbor.example/flagos-runtime/flagos-runtime-kunlunxin-xre5.37.1:2.2.0"));
  EXPECT_EQ(image.repository, "harbor.example/flagos-runtime/flagos-runtime-kunlunxin-xre5.37.1");
  EXPECT_EQ(image.tag, "2.2.0");
  EXPECT_EQ(value_of(parse_image_reference("registry:5000/team/img:7")).repository,
            "registry:5000/team/img");
  EXPECT_EQ(value_of(parse_image_reference("ubuntu:22")).tag, "22");
  const std::string digest(64, 'a');
  EXPECT_EQ(value_of(parse_image_reference("repo/img@sha256:" + digest)).digest,
            "sha256:" + digest);
}

TEST(ImageReference, RejectsBadReferences) {
  EXPECT_NE(error_of(parse_image_reference("repo/img@sha256:abc")).find("64 hex digits"),
            std::string::npos);
  EXPECT_NE(error_of(parse_image_reference("Has Space:1")).find("not an image reference"),
            std::string::npos);
}

}  // namespace
}  // namespace envcontract::contracts
