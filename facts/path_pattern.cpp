#include "facts/path_pattern.hpp"

namespace envcontract::facts {
namespace {

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

std::string expand_variables(std::string text,
                             const std::map<std::string, std::string>& variables) {
  for (auto start = text.find("${"); start != std::string::npos; start = text.find("${", start)) {
    const auto end = text.find('}', start);
    if (end == std::string::npos) {
      break;
    }
    const auto found = variables.find(text.substr(start + 2, end - start - 2));
    const std::string value = found == variables.end() ? "" : found->second;
    text.replace(start, end - start + 1, value);
    start += value.size();
  }
  return text;
}

}  // namespace

std::vector<std::string> expand_path_pattern(const std::string& pattern,
                                             const PathAnchors& anchors) {
  std::string anchored = pattern;
  replace_all(anchored, "{prefix}", anchors.prefix);
  if (anchored.find("{site}") == std::string::npos) {
    return {expand_variables(anchored, anchors.variables)};
  }
  std::vector<std::string> expansions;
  for (const auto& site : anchors.sites) {
    std::string one = anchored;
    replace_all(one, "{site}", site);
    expansions.push_back(expand_variables(one, anchors.variables));
  }
  return expansions;
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
