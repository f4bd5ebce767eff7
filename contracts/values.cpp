#include "contracts/values.hpp"

#include "common/pep440.hpp"

#include <charconv>
#include <regex>

namespace envcontract::contracts {
namespace {

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) {
    return {};
  }
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return std::nullopt;
  }
  return value;
}

bool matches(std::string_view text, const std::regex& pattern) {
  return std::regex_match(text.begin(), text.end(), pattern);
}

}  // namespace

bool Comparison::holds_for(std::int64_t actual) const {
  if (op == ">=") {
    return actual >= value;
  }
  if (op == ">") {
    return actual > value;
  }
  return actual == value;
}

common::Result<Comparison> parse_comparison(std::string_view text) {
  const std::string expected =
      "expected a count such as '8', '== 8', '>= 1' or '> 0', got '" + std::string(text) + "'";
  std::string_view rest = trim(text);
  Comparison comparison;
  for (const char* op : {"==", ">=", ">"}) {
    if (rest.starts_with(op)) {
      comparison.op = op;
      rest = trim(rest.substr(std::string_view(op).size()));
      break;
    }
  }
  if (comparison.op.empty()) {
    if (rest.starts_with("<") || rest.starts_with("!=") || rest.starts_with("=")) {
      return common::Error{"only '==', '>=' and '>' compare counts here; got '" +
                           std::string(text) + "'"};
    }
    comparison.op = "==";
  }
  const auto number = parse_integer(rest);
  if (!number) {
    return common::Error{expected};
  }
  if (*number < 0) {
    return common::Error{"a count cannot be negative: '" + std::string(text) + "'"};
  }
  comparison.value = *number;
  return comparison;
}

common::Result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  using std::chrono::milliseconds;
  const std::string expected =
      "expected a duration such as '500ms', '30s', '5m' or '1h', got '" + std::string(text) + "'";
  const std::string_view trimmed = trim(text);
  std::size_t digits = 0;
  while (digits < trimmed.size() && trimmed[digits] >= '0' && trimmed[digits] <= '9') {
    ++digits;
  }
  const auto number = parse_integer(trimmed.substr(0, digits));
  if (!number) {
    return common::Error{expected};
  }
  const std::string_view unit = trimmed.substr(digits);
  std::int64_t scale = 0;
  if (unit == "ms") {
    scale = 1;
  } else if (unit.empty() || unit == "s") {
    scale = 1000;
  } else if (unit == "m") {
    scale = 60 * 1000;
  } else if (unit == "h") {
    scale = 60 * 60 * 1000;
  } else {
    return common::Error{expected};
  }
  constexpr std::int64_t k_one_day_ms = 24LL * 60 * 60 * 1000;
  if (*number == 0) {
    return common::Error{"a duration must be positive, got '" + std::string(text) + "'"};
  }
  if (*number > k_one_day_ms / scale) {
    return common::Error{"a duration must be at most 24h, got '" + std::string(text) + "'"};
  }
  return milliseconds(*number * scale);
}

bool is_release_version(std::string_view text) {
  static const std::regex pattern(R"(\d+(\.\d+)*)");
  return matches(text, pattern);
}

bool is_pep440_version(std::string_view text) {
  return common::is_version(text);
}

common::Result<std::vector<VersionClause>> parse_version_specifier(std::string_view text,
                                                                   BareVersion bare) {
  std::vector<VersionClause> clauses;
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view clause_text = trim(rest.substr(0, comma));
    VersionClause clause;
    std::string_view version = clause_text;
    for (const char* op : {"===", "==", "!=", ">=", "<=", "~=", ">", "<"}) {
      if (clause_text.starts_with(op)) {
        clause.op = op;
        version = trim(clause_text.substr(std::string_view(op).size()));
        break;
      }
    }
    if (clause.op.empty()) {
      if (clauses.empty() && comma == std::string_view::npos && bare == BareVersion::prefix &&
          is_release_version(version)) {
        return std::vector<VersionClause>{{"==", std::string(version) + ".*"}};
      }
      clause.op = "==";
    }
    const bool wildcard = version.ends_with(".*");
    const std::string_view base = wildcard ? version.substr(0, version.size() - 2) : version;
    if (version.empty()) {
      return common::Error{"empty clause in version specifier '" + std::string(text) +
                           "'; write e.g. '>=4.51,<5'"};
    }
    if (wildcard && clause.op != "==" && clause.op != "!=") {
      return common::Error{"'.*' is only allowed with '==' or '!=' in '" + std::string(text) + "'"};
    }
    if (clause.op == "===" ? version.find(' ') != std::string_view::npos
                           : !is_pep440_version(base)) {
      return common::Error{"'" + std::string(version) + "' is not a valid version in specifier '" +
                           std::string(text) + "'"};
    }
    if (clause.op == "~=" && base.find('.') == std::string_view::npos) {
      return common::Error{"'~=' needs at least two release numbers, e.g. '~=2.10', in '" +
                           std::string(text) + "'"};
    }
    clause.version = std::string(version);
    clauses.push_back(std::move(clause));
    if (comma == std::string_view::npos) {
      break;
    }
    rest = rest.substr(comma + 1);
  }
  return clauses;
}

nlohmann::ordered_json to_json(const std::vector<VersionClause>& clauses) {
  auto array = nlohmann::ordered_json::array();
  for (const auto& clause : clauses) {
    array.push_back({{"op", clause.op}, {"version", clause.version}});
  }
  return array;
}

bool is_module_name(std::string_view text) {
  static const std::regex pattern(R"([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*)");
  return matches(text, pattern);
}

bool is_environment_variable_name(std::string_view text) {
  static const std::regex pattern(R"([A-Za-z_][A-Za-z0-9_]*)");
  return matches(text, pattern);
}

bool is_distribution_name(std::string_view text) {
  static const std::regex pattern(R"([A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?)");
  return matches(text, pattern);
}

bool is_check_id(std::string_view text) {
  static const std::regex pattern(R"([A-Za-z0-9][A-Za-z0-9_.-]*)");
  return matches(text, pattern);
}

bool is_file_name(std::string_view text) {
  return !text.empty() && text != "." && text != ".." && text.find('/') == std::string_view::npos;
}

common::Result<ImageReference> parse_image_reference(std::string_view text) {
  // Docker caps a reference at 255 characters of name, a 128-character tag
  // and a digest; longer text (from an image-tag file or command) is refused
  // before the regex, which recurses once per character.
  if (text.size() > 512) {
    return common::Error{"an image reference is at most 512 characters; got " +
                         std::to_string(text.size())};
  }
  static const std::regex pattern(
      R"(([a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+(?=/))?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*)(:([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(@([a-z0-9]+):([0-9a-fA-F]+))?)",
      std::regex::optimize);
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_match(text.begin(), text.end(), match, pattern)) {
    return common::Error{"'" + std::string(text) +
                         "' is not an image reference such as 'registry.example/repo/name:tag' or "
                         "'name@sha256:<64 hex digits>'"};
  }
  ImageReference image;
  image.repository = match[1].str();
  image.tag = match[7].str();
  if (match[8].matched) {
    const std::string algorithm = match[9].str();
    const std::string hex = match[10].str();
    if (algorithm == "sha256" && hex.size() != 64) {
      return common::Error{"a sha256 image digest has 64 hex digits, '" + std::string(text) +
                           "' has " + std::to_string(hex.size())};
    }
    image.digest = algorithm + ":" + hex;
  }
  return image;
}

}  // namespace envcontract::contracts
