#include "common/json_from_outside.hpp"

#include <string>

namespace envcontract::common {
namespace {

using Json = nlohmann::ordered_json;

std::string size_text(std::size_t bytes) {
  if (bytes >= (1U << 20) && bytes % (1U << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  if (bytes >= (1U << 10) && bytes % (1U << 10) == 0) {
    return std::to_string(bytes >> 10) + " KiB";
  }
  return std::to_string(bytes) + " bytes";
}

}  // namespace

bool nests_deeper_than(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) {
        return true;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      // Unbalanced closers are the parser's to refuse; they must not let
      // the openers after them go uncounted.
      --depth;
    }
  }
  return false;
}

Result<Json> parse_outside_json(std::string_view text, std::string_view what,
                                const JsonBounds& bounds) {
  const std::string named(what);
  if (text.size() > bounds.max_bytes) {
    return Error{named + " is larger than " + size_text(bounds.max_bytes)};
  }
  // nlohmann takes a NUL byte for the end of the input and ignores what
  // follows it; JSON has no NUL outside strings nor unescaped inside, so a
  // text with one is refused whole rather than read in part.
  if (text.find('\0') != std::string_view::npos) {
    return Error{named + " is not JSON"};
  }
  // Counted before parsing, so no value deeper than the bound is ever built
  // (and none is half built and then thrown away).
  if (nests_deeper_than(text, bounds.max_depth)) {
    return Error{named + " nests deeper than " + std::to_string(bounds.max_depth) + " levels"};
  }
  Json::parser_callback_t keep = nullptr;
  if (bounds.kept_depth >= 0) {
    keep = [kept = bounds.kept_depth](int depth, Json::parse_event_t, Json&) {
      return depth <= kept;
    };
  }
  // allow_exceptions=false: a syntax error is a discarded value, not a throw.
  auto json = Json::parse(text.begin(), text.end(), keep, false);
  if (json.is_discarded()) {
    return Error{named + " is not JSON"};
  }
  return json;
}

}  // namespace envcontract::common
