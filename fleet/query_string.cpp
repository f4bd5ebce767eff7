#include "fleet/query_string.hpp"

#include <cctype>

namespace envcontract::fleet {

namespace {

std::string percent_encoded(const std::string& text) {
  static constexpr char k_hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const unsigned char c : text) {
    if (std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += k_hex[c >> 4];
      out += k_hex[c & 0xF];
    }
  }
  return out;
}

}  // namespace

std::string query_string(const std::vector<std::pair<std::string, std::string>>& parameters) {
  std::string query;
  for (const auto& [name, value] : parameters) {
    if (!value.empty()) {
      query += (query.empty() ? "?" : "&") + percent_encoded(name) + "=" + percent_encoded(value);
    }
  }
  return query;
}

}  // namespace envcontract::fleet
