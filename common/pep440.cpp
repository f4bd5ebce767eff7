#include "common/pep440.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <initializer_list>
#include <limits>
#include <string>
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

// PEP 440's public and local versions, scanned left to right once (no
// backtracking regex: versions come from files any user may have written).
class VersionScanner {
 public:
  explicit VersionScanner(std::string_view text) : m_text(text) {}

  std::optional<Version> scan() {
    Version version;
    accept_word({"v"});
    if (!scan_release(version.release)) {
      return std::nullopt;
    }
    if (!scan_suffix({"alpha", "a", "beta", "b", "preview", "pre", "rc", "c"},
                     [&](std::string_view kind, long n) {
                       const char first = lower(kind[0]);
                       version.pre_kind = first == 'a' ? 0 : first == 'b' ? 1 : 2;
                       version.pre_number = n;
                     }) ||
        !scan_suffix({"post", "rev", "r"}, [&](std::string_view, long n) { version.post = n; }) ||
        !scan_suffix({"dev"}, [&](std::string_view, long n) { version.dev = n; })) {
      return std::nullopt;
    }
    if (m_at < m_text.size() && m_text[m_at] == '+') {
      const std::string_view local = m_text.substr(m_at + 1);
      if (local.empty() || !std::all_of(local.begin(), local.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '.';
          })) {
        return std::nullopt;
      }
      version.local = std::string(local);
      m_at = m_text.size();
    }
    if (m_at != m_text.size()) {
      return std::nullopt;
    }
    while (version.release.size() > 1 && version.release.back() == 0) {
      version.release.pop_back();  // 2.10.0 == 2.10
    }
    return version;
  }

 private:
  static char lower(char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  static bool is_separator(char c) { return c == '-' || c == '_' || c == '.'; }

  std::string_view digits() {
    const std::size_t start = m_at;
    while (m_at < m_text.size() && std::isdigit(static_cast<unsigned char>(m_text[m_at]))) {
      ++m_at;
    }
    return m_text.substr(start, m_at - start);
  }

  // The longest of `words` at the cursor, case-insensitively; the cursor moves past it.
  std::string_view accept_word(std::initializer_list<std::string_view> words) {
    std::string_view best;
    for (const auto word : words) {
      if (word.size() > best.size() && m_at + word.size() <= m_text.size() &&
          std::equal(word.begin(), word.end(), m_text.begin() + static_cast<long>(m_at),
                     [](char a, char b) { return a == lower(b); })) {
        best = word;
      }
    }
    m_at += best.size();
    return best;
  }

  bool scan_release(std::vector<long>& release) {
    for (;;) {
      const auto part = number(std::string(digits()));
      if (!part) {
        return false;
      }
      release.push_back(*part);
      if (m_at + 1 < m_text.size() && m_text[m_at] == '.' &&
          std::isdigit(static_cast<unsigned char>(m_text[m_at + 1]))) {
        ++m_at;
        continue;
      }
      return true;
    }
  }

  // [-_.]? WORD [-_.]? digits*: absent is fine (true, cursor unchanged); a
  // number too large to compare is not (false).
  template <typename Store>
  bool scan_suffix(std::initializer_list<std::string_view> words, Store store) {
    const std::size_t start = m_at;
    if (m_at < m_text.size() && is_separator(m_text[m_at])) {
      ++m_at;
    }
    const std::string_view word = accept_word(words);
    if (word.empty()) {
      m_at = start;
      return true;
    }
    // The separator before the number stays consumed even without a number:
    // "1.0a-" is a version, as PEP 440's grammar (and pip) have it.
    if (m_at < m_text.size() && is_separator(m_text[m_at])) {
      ++m_at;
    }
    const std::string_view number_text = digits();
    const auto value =
        number_text.empty() ? std::optional<long>(0) : number(std::string(number_text));
    if (!value) {
      return false;
    }
    store(word, *value);
    return true;
  }

  std::string_view m_text;
  std::size_t m_at = 0;
};

std::optional<Version> parse(std::string_view text) {
  return VersionScanner(text).scan();
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
