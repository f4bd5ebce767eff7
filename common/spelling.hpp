#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace envcontract::common {

// The candidate closest to `word` by edit distance, if it is close enough to
// be a plausible typo (at most a third of the word's length, at least 1).
// None for an empty word or one longer than 256 bytes: no name is.
std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates);

// Edits (insert, delete, change, swap two neighbours; case ignored) between two words.
std::size_t spelling_distance(std::string_view a, std::string_view b);

// " (did you mean 'x'?)" or "" when nothing is close: ready to append to a message.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace envcontract::common
