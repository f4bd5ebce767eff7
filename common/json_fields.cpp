#include "common/json_fields.hpp"

namespace envcontract::common {
using Json = nlohmann::ordered_json;

const Json& field(const Json& object, const char* key) {
  static const Json null_value = nullptr;
  if (!object.is_object()) {
    return null_value;
  }
  const auto it = object.find(key);
  return it == object.end() ? null_value : *it;
}

std::string string_field(const Json& object, const char* key) {
  const Json& value = field(object, key);
  return value.is_string() ? value.get<std::string>() : std::string();
}

const Json& array_field(const Json& object, const char* key) {
  static const Json empty = Json::array();
  const Json& value = field(object, key);
  return value.is_array() ? value : empty;
}

const Json& object_field(const Json& object, const char* key) {
  static const Json empty = Json::object();
  const Json& value = field(object, key);
  return value.is_object() ? value : empty;
}

}  // namespace envcontract::common
