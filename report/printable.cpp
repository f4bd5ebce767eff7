#include "report/printable.hpp"

namespace envcontract::report {

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
