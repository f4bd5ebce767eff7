#include "facts/path_pattern.hpp"

namespace envcontract::facts {
namespace {

// `value` with glob(3)'s special characters escaped: what an env sets (a
// prefix, a site dir, ${VAR}) is matched literally, never as a pattern.
std::string literal(const std::string& value, bool for_glob) {
  if (!for_glob) {
    return value;
  }
  return glob_literal(value);
}

// One pass over `pattern`: substituted values are never scanned again, so a
// prefix holding "{site}" or "${X}" stays what it is.
std::string substitute(const std::string& pattern, const PathAnchors& anchors,
                       const std::string& site, bool for_glob) {
  std::string text;
  for (std::size_t at = 0; at < pattern.size();) {
    if (pattern.compare(at, 8, "{prefix}") == 0) {
      text += literal(anchors.prefix, for_glob);
      at += 8;
    } else if (pattern.compare(at, 6, "{site}") == 0) {
      text += literal(site, for_glob);
      at += 6;
    } else if (pattern.compare(at, 2, "${") == 0 && pattern.find('}', at) != std::string::npos) {
      const auto end = pattern.find('}', at);
      const auto found = anchors.variables.find(pattern.substr(at + 2, end - at - 2));
      text += literal(found == anchors.variables.end() ? "" : found->second, for_glob);
      at = end + 1;
    } else {
      text.push_back(pattern[at++]);
    }
  }
  return text;
}

}  // namespace

std::vector<std::string> expand_path_pattern(const std::string& pattern, const PathAnchors& anchors,
                                             bool for_glob) {
  if (pattern.find("{site}") == std::string::npos) {
    return {substitute(pattern, anchors, "", for_glob)};
  }
  std::vector<std::string> expansions;
  for (const auto& site : anchors.sites) {
    expansions.push_back(substitute(pattern, anchors, site, for_glob));
  }
  return expansions;
}

std::string glob_literal(const std::string& value) {
  std::string escaped;
  for (const char c : value) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
      escaped.push_back('\\');
    }
    escaped.push_back(c);
  }
  return escaped;
}

std::vector<std::string> unset_variables(const std::string& pattern,
                                         const std::map<std::string, std::string>& variables) {
  std::vector<std::string> names;
  for (auto start = pattern.find("${"); start != std::string::npos;
       start = pattern.find("${", start + 2)) {
    const auto end = pattern.find('}', start);
    if (end == std::string::npos) {
      break;
    }
    const std::string name = pattern.substr(start + 2, end - start - 2);
    if (!variables.contains(name)) {
      names.push_back(name);
    }
  }
  return names;
}

}  // namespace envcontract::facts
