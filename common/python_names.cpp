#include "common/python_names.hpp"

#include <cctype>

namespace envcontract::common {

std::string normalize_distribution_name(std::string_view name) {
  std::string normalized;
  bool in_separator_run = false;
  for (const char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (!in_separator_run) {
        normalized.push_back('-');
      }
      in_separator_run = true;
      continue;
    }
    in_separator_run = false;
    normalized.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return normalized;
}

std::string python_major_minor(std::string_view version) {
  const auto first = version.find('.');
  if (first == std::string_view::npos || first == 0) {
    return "";
  }
  return std::string(version.substr(0, version.find('.', first + 1)));
}

}  // namespace envcontract::common
