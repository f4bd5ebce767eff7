#include "common/pep440.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <regex>
#include <vector>

namespace envcontract::common {
namespace {

struct Version {
  std::vector<long> release;
  int pre_kind = 3;  // 0 a, 1 b, 2 rc, 3 none (a final release sorts after its pre-releases)
  long pre_number = 0;
  long post = -1;  // -1: none
  long dev = -1;   // -1: none
  std::string local;
};

// A run of digits as a number; nullopt when it does not fit (a "version"
// such as 99999999999999999999 is not one we can compare).
std::optional<long> number(const std::string& digits) {
  long value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size()) {
    return std::nullopt;
  }
  return value;
}

std::optional<Version> parse(std::string_view text) {
  static const std::regex pattern(
      R"(v?(\d+(?:\.\d+)*)(?:[-_.]?(a|alpha|b|beta|rc|c|pre|preview)[-_.]?(\d*))?(?:[-_.]?(?:post|rev|r)[-_.]?(\d*))?(?:[-_.]?dev[-_.]?(\d*))?(?:\+([A-Za-z0-9.]+))?)",
      std::regex::icase);
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_match(text.begin(), text.end(), match, pattern)) {
    return std::nullopt;
  }
  Version version;
  const std::string release = match[1].str();
  std::size_t start = 0;
  while (start <= release.size()) {
    const auto dot = release.find('.', start);
    const auto part = number(release.substr(start, dot - start));
    if (!part) {
      return std::nullopt;
    }
    version.release.push_back(*part);
    if (dot == std::string::npos) {
      break;
    }
    start = dot + 1;
  }
  while (version.release.size() > 1 && version.release.back() == 0) {
    version.release.pop_back();  // 2.10.0 == 2.10
  }
  if (match[2].matched) {
    const std::string kind = match[2].str();
    version.pre_kind = kind[0] == 'a' || kind[0] == 'A'   ? 0
                       : kind[0] == 'b' || kind[0] == 'B' ? 1
                                                          : 2;
    const auto pre_number = match[3].length() ? number(match[3].str()) : std::optional<long>(0);
    if (!pre_number) {
      return std::nullopt;
    }
    version.pre_number = *pre_number;
  }
  if (match[4].matched) {
    const auto post = match[4].length() ? number(match[4].str()) : std::optional<long>(0);
    if (!post) {
      return std::nullopt;
    }
    version.post = *post;
  }
  if (match[5].matched) {
    const auto dev = match[5].length() ? number(match[5].str()) : std::optional<long>(0);
    if (!dev) {
      return std::nullopt;
    }
    version.dev = *dev;
  }
  version.local = match[6].str();
  return version;
}

int compare(const Version& a, const Version& b, bool with_local) {
  const std::size_t length = std::max(a.release.size(), b.release.size());
  for (std::size_t i = 0; i < length; ++i) {
    const long left = i < a.release.size() ? a.release[i] : 0;
    const long right = i < b.release.size() ? b.release[i] : 0;
    if (left != right) {
      return left < right ? -1 : 1;
    }
  }
  // A dev release of a final version sorts before its pre-releases.
  const int a_pre = a.pre_kind == 3 && a.post < 0 && a.dev >= 0 ? -1 : a.pre_kind;
  const int b_pre = b.pre_kind == 3 && b.post < 0 && b.dev >= 0 ? -1 : b.pre_kind;
  if (a_pre != b_pre) {
    return a_pre < b_pre ? -1 : 1;
  }
  if (a.pre_number != b.pre_number) {
    return a.pre_number < b.pre_number ? -1 : 1;
  }
  if (a.post != b.post) {
    return a.post < b.post ? -1 : 1;
  }
  const long a_dev = a.dev < 0 ? std::numeric_limits<long>::max() : a.dev;
  const long b_dev = b.dev < 0 ? std::numeric_limits<long>::max() : b.dev;
  if (a_dev != b_dev) {
    return a_dev < b_dev ? -1 : 1;
  }
  if (with_local && a.local != b.local) {
    return a.local < b.local ? -1 : 1;
  }
  return 0;
}

}  // namespace

bool is_version(std::string_view text) {
  return parse(text).has_value();
}

std::optional<int> compare_versions(std::string_view a, std::string_view b) {
  const auto left = parse(a);
  const auto right = parse(b);
  if (!left || !right) {
    return std::nullopt;
  }
  return compare(*left, *right, !left->local.empty() && !right->local.empty());
}

bool satisfies(std::string_view version_text, std::string_view op, std::string_view spec_text) {
  if (op == "===") {
    return version_text == spec_text;
  }
  const bool wildcard = spec_text.ends_with(".*");
  if (wildcard) {
    // ==3.10.* : the version's release starts with 3.10.
    const auto version = parse(version_text);
    const auto prefix = parse(spec_text.substr(0, spec_text.size() - 2));
    if (!version || !prefix) {
      return false;
    }
    bool matches = true;
    // Trailing zeros were dropped when parsing; compare against them explicitly.
    const std::string text(spec_text.substr(0, spec_text.size() - 2));
    const std::size_t components =
        static_cast<std::size_t>(std::count(text.begin(), text.end(), '.')) + 1;
    for (std::size_t i = 0; i < components; ++i) {
      const long have = i < version->release.size() ? version->release[i] : 0;
      const long want = i < prefix->release.size() ? prefix->release[i] : 0;
      matches = matches && have == want;
    }
    return op == "==" ? matches : !matches;
  }
  const auto version = parse(version_text);
  const auto spec = parse(spec_text);
  if (!version || !spec) {
    return false;
  }
  const int order = compare(*version, *spec, !spec->local.empty());
  if (op == "==") {
    return order == 0;
  }
  if (op == "!=") {
    return order != 0;
  }
  if (op == ">=") {
    return order >= 0;
  }
  if (op == "<=") {
    return order <= 0;
  }
  if (op == ">") {
    return order > 0;
  }
  if (op == "<") {
    return order < 0;
  }
  if (op == "~=") {
    // ~=2.10.1 means >=2.10.1, ==2.10.*
    if (order < 0 || spec->release.size() < 2) {
      return false;
    }
    for (std::size_t i = 0; i + 1 < spec->release.size(); ++i) {
      const long have = i < version->release.size() ? version->release[i] : 0;
      if (have != spec->release[i]) {
        return false;
      }
    }
    return true;
  }
  return false;
}

}  // namespace envcontract::common
