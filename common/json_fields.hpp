#pragma once

#include <string>

#include <nlohmann/json.hpp>

// Reading JSON documents that come from elsewhere (a report fetched from an
// agent, Prometheus' answers): every accessor tolerates a missing field or
// one of another type.
namespace envcontract::common {

// The field whatever its type, or null when absent or `object` is not an
// object (a reference into `object`, or to a static null).
const nlohmann::ordered_json& field(const nlohmann::ordered_json& object, const char* key);

// The field as a string ("" when absent, null or not a string).
std::string string_field(const nlohmann::ordered_json& object, const char* key);

// The field when it is an array, else an empty array: a reference into
// `object` (nlohmann's value() returns copies, which must not be pointed into).
const nlohmann::ordered_json& array_field(const nlohmann::ordered_json& object, const char* key);

// The field when it is an object, else an empty object (a reference, as above).
const nlohmann::ordered_json& object_field(const nlohmann::ordered_json& object, const char* key);

}  // namespace envcontract::common
