#include "common/time_text.hpp"

#include <chrono>
#include <ctime>
#include <regex>
#include <string>

namespace envcontract::common {

std::string rfc3339(SystemTime time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string now_rfc3339() {
  return rfc3339(std::chrono::system_clock::now());
}

std::optional<SystemTime> parse_rfc3339(std::string_view text) {
  // The longest meaningful form, 2026-11-30T12:00:00.123456789+05:30, is 35
  // characters: longer text (from HTTP queries, the store) is refused before
  // the regex sees it, so that it cannot recurse without bound.
  if (text.size() > 40) {
    return std::nullopt;
  }
  static const std::regex pattern(
      R"re((\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2})))?)re");
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_match(text.begin(), text.end(), match, pattern)) {
    return std::nullopt;
  }
  const auto number = [&](int group) { return match[group].matched ? std::stoi(match[group]) : 0; };
  std::tm utc{};
  utc.tm_year = number(1) - 1900;
  utc.tm_mon = number(2) - 1;
  utc.tm_mday = number(3);
  utc.tm_hour = number(4);
  utc.tm_min = number(5);
  utc.tm_sec = number(6);
  // timegm would carry 2026-02-31 into March without a word: a date that
  // does not exist is refused, as is an offset no zone has.
  const std::chrono::year_month_day date{std::chrono::year(number(1)),
                                         std::chrono::month(static_cast<unsigned>(number(2))),
                                         std::chrono::day(static_cast<unsigned>(number(3)))};
  if (!date.ok() || utc.tm_hour > 23 || utc.tm_min > 59 || utc.tm_sec > 60 || number(9) > 23 ||
      number(10) > 59) {
    return std::nullopt;
  }
  std::time_t seconds = timegm(&utc);
  if (match[8].matched) {
    const int offset = (number(9) * 60 + number(10)) * 60;
    seconds += match[8].str() == "+" ? -offset : offset;
  }
  return std::chrono::system_clock::from_time_t(seconds);
}

}  // namespace envcontract::common
