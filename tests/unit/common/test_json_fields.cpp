// common/json_fields.cpp: fields of JSON from other agents and Prometheus,
// read without throwing whatever their type.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/json_fields.hpp"

namespace envcontract::common {
namespace {

using Json = nlohmann::ordered_json;

// A field of every JSON type, and a key for none.
const Json& document() {
  static const Json value = Json::parse(R"({
    "text": "harbor.example/flagos/runtime:2.1.2",
    "empty": "",
    "number": 3,
    "boolean": false,
    "null": null,
    "array": [1, "two"],
    "object": {"verdict": "drift"}
  })");
  return value;
}

const std::vector<const char*> k_keys = {"text", "empty", "number", "boolean",
                                         "null", "array", "object", "absent"};

// What a peer may send where an object was expected.
std::vector<Json> not_objects() {
  return {Json(),
          Json(3),
          Json("text"),
          Json(true),
          Json::array({"text", "array"}),
          Json::parse(R"([{"text": "x"}])")};
}

TEST(JsonFields, FieldGivesTheValueWhateverItsTypeAsAReferenceIntoTheObject) {
  const Json& object = document();
  for (const char* key : k_keys) {
    if (std::string(key) == "absent") {
      continue;
    }
    EXPECT_EQ(&field(object, key), &object.at(key)) << key;
  }
  EXPECT_EQ(field(object, "number"), 3);
  EXPECT_EQ(field(object, "array"), Json::parse(R"([1, "two"])"));
}

TEST(JsonFields, FieldIsNullWhenAbsentOrWhenTheInputIsNoObject) {
  EXPECT_TRUE(field(document(), "absent").is_null());
  EXPECT_TRUE(field(document(), "").is_null());
  EXPECT_TRUE(field(document(), "TEXT").is_null()) << "keys are compared exactly";
  for (const Json& input : not_objects()) {
    EXPECT_TRUE(field(input, "text").is_null()) << input;
    EXPECT_TRUE(field(input, "array").is_null()) << input;
  }
}

TEST(JsonFields, StringFieldGivesOnlyStrings) {
  const Json& object = document();
  EXPECT_EQ(string_field(object, "text"), "harbor.example/flagos/runtime:2.1.2");
  for (const char* key : k_keys) {
    if (std::string(key) != "text") {
      EXPECT_EQ(string_field(object, key), "") << key;
    }
  }
  for (const Json& input : not_objects()) {
    EXPECT_EQ(string_field(input, "text"), "") << input;
  }
  // Taken as the bytes the peer sent, a NUL included.
  const Json odd = {{"text", std::string("a\0b\xc3\xa9", 5)}};
  EXPECT_EQ(string_field(odd, "text"), std::string("a\0b\xc3\xa9", 5));
}

// Callers keep pointers into the document (nlohmann's value() would copy).
TEST(JsonFields, ArrayAndObjectFieldsPointIntoTheObject) {
  const Json& object = document();
  EXPECT_EQ(&array_field(object, "array"), &object.at("array"));
  EXPECT_EQ(&object_field(object, "object"), &object.at("object"));
  EXPECT_EQ(string_field(object_field(object, "object"), "verdict"), "drift");
}

TEST(JsonFields, AnythingElseIsAnEmptyArrayOrObject) {
  const Json& object = document();
  for (const char* key : k_keys) {
    if (std::string(key) != "array") {
      EXPECT_TRUE(array_field(object, key).is_array()) << key;
      EXPECT_TRUE(array_field(object, key).empty()) << key;
    }
    if (std::string(key) != "object") {
      EXPECT_TRUE(object_field(object, key).is_object()) << key;
      EXPECT_TRUE(object_field(object, key).empty()) << key;
    }
  }
  for (const Json& input : not_objects()) {
    EXPECT_EQ(array_field(input, "array"), Json::array()) << input;
    EXPECT_EQ(object_field(input, "object"), Json::object()) << input;
  }
}

// The defaults are static: a reference to one stays good after the
// document it was asked of is gone.
TEST(JsonFields, DefaultsOutliveTheDocument) {
  const Json* null_value = nullptr;
  const Json* array = nullptr;
  const Json* object = nullptr;
  {
    const Json answer = Json::parse(R"({"array": "not one"})");
    null_value = &field(answer, "absent");
    array = &array_field(answer, "array");
    object = &object_field(Json::array(), "object");
  }
  EXPECT_TRUE(null_value->is_null());
  EXPECT_EQ(*array, Json::array());
  EXPECT_EQ(*object, Json::object());
}

}  // namespace
}  // namespace envcontract::common
