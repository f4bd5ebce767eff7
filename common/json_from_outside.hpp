#pragma once

#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

// The one way JSON from outside the process is parsed: agents' reports,
// Prometheus' answers, what env code or a container runtime wrote. Whoever
// wrote it may be hostile, so its size and its nesting are bounded before a
// value is built: nlohmann parses deep nesting fine, but copying, comparing
// and serialising recurse once per level, and 100,000 levels overflow the
// stack (a crash, not an error).
namespace envcontract::common {

// Deeper than any document we read: a report nests about 15 levels.
inline constexpr int k_outside_json_depth = 64;

struct JsonBounds {
  std::size_t max_bytes = 0;  // a longer text is refused unread
  // A text whose arrays and objects nest deeper is refused: "[]" is 1 level.
  int max_depth = k_outside_json_depth;
  // Values nested deeper than this are dropped while parsing (nlohmann's
  // callback depth: 0 is the top value's members); < 0 keeps everything.
  // For readers that need only the top of a document that can be large.
  int kept_depth = -1;
};

// `text` parsed, or why not in words naming it as `what` ("the answer"):
// "the answer is larger than 64 MiB", "the answer nests deeper than 64
// levels", "the answer is not JSON" (also when it holds a NUL byte, which
// nlohmann would take for its end). Never throws on any bytes.
Result<nlohmann::ordered_json> parse_outside_json(std::string_view text, std::string_view what,
                                                  const JsonBounds& bounds);

// Whether arrays and objects in `text` nest deeper than `limit` levels,
// counting brackets outside strings; linear, reads each byte once, and
// decides nothing about whether `text` is JSON.
bool nests_deeper_than(std::string_view text, int limit);

}  // namespace envcontract::common
