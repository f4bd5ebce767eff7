#include "contracts/output_pattern.hpp"

#include <re2/re2.h>

namespace envcontract::contracts {
namespace {

// Only the start of the output is searched, as it was when the bound kept
// std::regex's recursion on the stack: what a contract matched then, it
// matches now.
constexpr std::size_t k_searched_output_bytes = 4096;

RE2::Options pattern_options() {
  RE2::Options options;
  options.set_log_errors(false);  // a refused pattern is reported to its author, not to stderr
  return options;
}

bool has_backreference(const std::string& pattern) {
  for (std::size_t at = 0; at + 1 < pattern.size(); ++at) {
    if (pattern[at] == '\\') {
      if (pattern[at + 1] >= '1' && pattern[at + 1] <= '9') {
        return true;
      }
      ++at;  // an escaped backslash escapes nothing after it
    }
  }
  return false;
}

bool has_lookaround(const std::string& pattern) {
  for (const char* opener : {"(?=", "(?!", "(?<=", "(?<!"}) {
    if (pattern.find(opener) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// What to write instead, for what RE2 most often refuses in patterns written
// for backtracking matchers.
std::string instead(const RE2& compiled, const std::string& pattern) {
  if (has_backreference(pattern)) {
    return "backreferences (\\1) have no linear-time match: write the repeated text out, or match "
           "any text there (.*)";
  }
  if (has_lookaround(pattern)) {
    return "lookahead and lookbehind ((?=, (?!, (?<=, (?<!) have no linear-time match: match "
           "the surrounding text itself, or split the check in two";
  }
  if (compiled.error_code() == RE2::ErrorRepeatSize ||
      compiled.error_code() == RE2::ErrorPatternTooLarge) {
    return "repeat counts are at most 1000 and the whole pattern must stay small: use + or * "
           "instead of large counts";
  }
  return "the syntax is RE2's (https://github.com/google/re2/wiki/Syntax), close to Python's re "
         "without backreferences and lookaround";
}

}  // namespace

std::string output_pattern_problem(const std::string& pattern) {
  const RE2 compiled(pattern, pattern_options());
  if (compiled.ok()) {
    return "";
  }
  return "RE2 refuses it (" + compiled.error() + "); " + instead(compiled, pattern);
}

bool output_matches(const std::string& output, const std::string& pattern) {
  const RE2 compiled(pattern, pattern_options());
  if (!compiled.ok()) {
    return false;
  }
  const std::string_view searched(output.data(), std::min(output.size(), k_searched_output_bytes));
  return RE2::PartialMatch(re2::StringPiece(searched.data(), searched.size()), compiled);
}

}  // namespace envcontract::contracts
