// JSON from outside is refused, with the reason in words, when it is too
// large or nests too deep, before any value is built: 100,000 levels once
// crashed fleetctl (a stack overflow while serialising them).
#include "common/json_from_outside.hpp"

#include <gtest/gtest.h>

#include <string>

#include "common/json_text.hpp"

namespace envcontract::common {
namespace {

std::string nested(int levels, const std::string& inside = "") {
  return std::string(static_cast<std::size_t>(levels), '[') + inside +
         std::string(static_cast<std::size_t>(levels), ']');
}

const JsonBounds k_bounds{.max_bytes = 1 << 20};

TEST(JsonFromOutside, ReadsADocumentWithinItsBounds) {
  const auto parsed =
      parse_outside_json(R"({"verdict": "drift", "envs": [{"n": 1}]})", "the answer", k_bounds);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ((*parsed)["envs"][0]["n"], 1);
  // The order of keys is kept (ordered_json), as reports are shown.
  EXPECT_EQ(json_text(*parsed), R"({"verdict":"drift","envs":[{"n":1}]})");
}

TEST(JsonFromOutside, RefusesNestingPastTheBoundSayingSo) {
  EXPECT_TRUE(parse_outside_json(nested(k_outside_json_depth), "the answer", k_bounds).ok());
  const auto deeper = parse_outside_json(nested(k_outside_json_depth + 1), "the answer", k_bounds);
  ASSERT_FALSE(deeper.ok());
  EXPECT_EQ(deeper.error(), "the answer nests deeper than 64 levels");
  // Objects count as arrays do, and the bound is the caller's to set.
  const std::string objects = R"({"a": {"b": {"c": [1]}}})";
  EXPECT_TRUE(parse_outside_json(objects, "x", {.max_bytes = 100, .max_depth = 4}).ok());
  EXPECT_EQ(parse_outside_json(objects, "x", {.max_bytes = 100, .max_depth = 3}).error(),
            "x nests deeper than 3 levels");
}

// What crashed fleetctl: refused at once, and nothing deep is built.
TEST(JsonFromOutside, OneHundredThousandLevelsAreAnErrorNotACrash) {
  const auto parsed =
      parse_outside_json(R"({"envs": )" + nested(100'000) + "}", "the answer", k_bounds);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error(), "the answer nests deeper than 64 levels");
  EXPECT_FALSE(parse_outside_json(std::string(100'000, '{'), "the answer", k_bounds).ok());
}

// Brackets inside strings are text: they neither count nor hide the
// brackets after them.
TEST(JsonFromOutside, BracketsInStringsAreNotNesting) {
  const std::string text = R"(["[[[[[[[[[[", "\"[[[[[[[", "\\", ")" + std::string(200, '{') + "\"]";
  const auto parsed = parse_outside_json(text, "x", {.max_bytes = 4096, .max_depth = 1});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->size(), 4U);
  EXPECT_FALSE(nests_deeper_than(text, 1));
  EXPECT_TRUE(nests_deeper_than(R"(["\\", [1]])", 1)) << "an escaped backslash ends no string";
  // Closers with no opener do not buy depth for what follows.
  EXPECT_TRUE(nests_deeper_than("]]]]" + nested(3), 2));
}

TEST(JsonFromOutside, RefusesWhatIsTooLargeOrNotJson) {
  const auto large =
      parse_outside_json(std::string(2048, ' ') + "1", "the answer", {.max_bytes = 2048});
  ASSERT_FALSE(large.ok());
  EXPECT_EQ(large.error(), "the answer is larger than 2 KiB");
  EXPECT_EQ(parse_outside_json("x", "y", {.max_bytes = 64u << 20}).error(), "y is not JSON");
  EXPECT_EQ(parse_outside_json("{\"a\": 1", "the answer", k_bounds).error(),
            "the answer is not JSON");
  EXPECT_EQ(parse_outside_json("\"\xff\"", "the answer", k_bounds).error(),
            "the answer is not JSON")
      << "invalid UTF-8 is refused, never thrown";
  EXPECT_EQ(parse_outside_json("", "the answer", k_bounds).error(), "the answer is not JSON");
  // nlohmann alone would read "{}" and ignore the rest (found by fuzzing).
  EXPECT_EQ(parse_outside_json(std::string("{}\0[[[", 6), "the answer", k_bounds).error(),
            "the answer is not JSON");
}

// Readers that need only the top of a document drop what lies deeper while
// parsing, as they did with their own callbacks.
TEST(JsonFromOutside, KeepsOnlyTheLevelsAskedFor) {
  const auto parsed = parse_outside_json(R"({"name": "torch", "files": ["a", "b"], "n": 1})",
                                         "conda-meta record", {.max_bytes = 4096, .kept_depth = 1});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ((*parsed)["name"], "torch");
  EXPECT_EQ((*parsed)["n"], 1);
  EXPECT_EQ((*parsed)["files"], nlohmann::ordered_json::array()) << json_text(*parsed);
}

}  // namespace
}  // namespace envcontract::common
