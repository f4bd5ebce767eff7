#include "report/printable.hpp"

#include <cstdio>

namespace envcontract::report {

std::string printable(const std::string& text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && !(keep_newlines && c == '\n')) || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out;
}

Json printable_json(const Json& value) {
  if (value.is_string()) {
    return printable(value.get_ref<const std::string&>(), true);
  }
  if (value.is_array()) {
    Json copy = Json::array();
    for (const auto& item : value) {
      copy.push_back(printable_json(item));
    }
    return copy;
  }
  if (value.is_object()) {
    Json copy = Json::object();
    for (const auto& [key, item] : value.items()) {
      copy[printable(key)] = printable_json(item);
    }
    return copy;
  }
  return value;
}

}  // namespace envcontract::report
