// common/time_text.cpp: RFC 3339 written in UTC and read from people and
// other programs (history's `since`, the store's times).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/time_text.hpp"

namespace envcontract {
namespace {

using common::parse_rfc3339;
using common::rfc3339;
using std::chrono::seconds;
using std::chrono::system_clock;

system_clock::time_point at(long long unix_seconds) {
  return system_clock::time_point(seconds(unix_seconds));
}

TEST(TimeText, WritesUtcToTheSecond) {
  EXPECT_EQ(rfc3339(at(0)), "1970-01-01T00:00:00Z");
  EXPECT_EQ(rfc3339(at(1796023653)), "2026-11-30T07:27:33Z");
  EXPECT_EQ(rfc3339(at(1796023653) + std::chrono::milliseconds(999)), "2026-11-30T07:27:33Z")
      << "fractions are dropped, never rounded up";
}

TEST(TimeText, ReadsWhatItWritesAndOtherZones) {
  EXPECT_EQ(parse_rfc3339("2026-11-30T07:27:33Z"), at(1796023653));
  EXPECT_EQ(parse_rfc3339(rfc3339(at(1796023653))), at(1796023653));
  EXPECT_EQ(parse_rfc3339("2026-11-30T09:27:33+02:00"), at(1796023653));
  EXPECT_EQ(parse_rfc3339("2026-11-30T02:57:33-04:30"), at(1796023653));
  EXPECT_EQ(parse_rfc3339("2026-11-30t07:27:33z"), at(1796023653));
  EXPECT_EQ(parse_rfc3339("2026-11-30 07:27:33Z"), at(1796023653));
  EXPECT_EQ(parse_rfc3339("2026-11-30T07:27:33.25Z"), at(1796023653)) << "to the second";
  EXPECT_EQ(parse_rfc3339("2026-11-30"), at(1796023653 - 7 * 3600 - 27 * 60 - 33))
      << "a bare date is midnight UTC";
}

TEST(TimeText, LeapDaysExistOnlyInLeapYears) {
  EXPECT_TRUE(parse_rfc3339("2028-02-29").has_value());
  EXPECT_TRUE(parse_rfc3339("2000-02-29T00:00:00Z").has_value());
  EXPECT_FALSE(parse_rfc3339("2026-02-29").has_value());
  EXPECT_FALSE(parse_rfc3339("1900-02-29").has_value());
}

// A date that does not exist is refused, not carried into the next month
// (2026-02-31 would have been read as 2026-03-03).
TEST(TimeText, RefusesWhatIsNotATime) {
  for (const std::string& text : std::vector<std::string>{
           "2026-02-31", "2026-04-31T00:00:00Z", "2026-13-01", "2026-00-10", "2026-11-00",
           "2026-11-30T24:00:00Z", "2026-11-30T12:60:00Z", "2026-11-30T12:00:61Z",
           "2026-11-30T12:00:00+99:99", "2026-11-30T12:00:00+05:60", "2026-11-30T12:00:00",
           "2026-11-30T12:00Z", "26-11-30", "yesterday", "", "2026-11-30T12:00:00Z trailing",
           std::string(41, '9')}) {
    EXPECT_FALSE(parse_rfc3339(text).has_value()) << text;
  }
}

}  // namespace
}  // namespace envcontract
