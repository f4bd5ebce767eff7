#include "common/spelling.hpp"

#include <algorithm>
#include <cctype>

namespace envcontract::common {
namespace {

char fold(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

// Optimal string alignment distance: a transposition ("tirton") costs one edit,
// which is how most key typos happen.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t rows = a.size() + 1;
  const std::size_t cols = b.size() + 1;
  std::vector<std::size_t> d(rows * cols);
  auto at = [&](std::size_t i, std::size_t j) -> std::size_t& { return d[i * cols + j]; };
  for (std::size_t i = 0; i < rows; ++i)
    at(i, 0) = i;
  for (std::size_t j = 0; j < cols; ++j)
    at(0, j) = j;
  for (std::size_t i = 1; i < rows; ++i) {
    for (std::size_t j = 1; j < cols; ++j) {
      const std::size_t cost = fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1;
      at(i, j) = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
      if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) && fold(a[i - 2]) == fold(b[j - 1])) {
        at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
      }
    }
  }
  return at(rows - 1, cols - 1);
}

}  // namespace

std::size_t spelling_distance(std::string_view a, std::string_view b) {
  return edit_distance(a, b);
}

constexpr std::size_t k_longest_suggested = 256;

std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates) {
  // Nothing typed (every short name would be "close"), or more than any
  // name is long: a suggestion would cost a table of both lengths.
  if (word.empty() || word.size() > k_longest_suggested) {
    return std::nullopt;
  }
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    // Words whose lengths differ by more than the limit are further apart
    // than it: skipped before the table (length by length) is made, which
    // a megabyte-long key from a contract would make hundreds of MB.
    const std::size_t length_gap = word.size() > candidate.size() ? word.size() - candidate.size()
                                                                  : candidate.size() - word.size();
    if (length_gap > limit) {
      continue;
    }
    const std::size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const auto match = closest_match(word, candidates);
  return match ? " (did you mean '" + *match + "'?)" : std::string();
}

}  // namespace envcontract::common
