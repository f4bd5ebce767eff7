#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace envcontract::common {

using SystemTime = std::chrono::system_clock::time_point;

// "2026-11-30T07:47:33Z": RFC 3339 in UTC, to the second.
std::string rfc3339(SystemTime time);
std::string now_rfc3339();

// Reads RFC 3339 ("2026-11-30T07:47:33Z", "...T07:47:33.25+02:00") or a bare
// date ("2026-11-30", midnight UTC); nullopt for anything else.
std::optional<SystemTime> parse_rfc3339(std::string_view text);

}  // namespace envcontract::common
