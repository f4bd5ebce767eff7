// report/printable.cpp: text from envs and other hosts never drives the
// operator's terminal.
#include <gtest/gtest.h>

#include "report/printable.hpp"

namespace envcontract::report {
namespace {

TEST(Printable, ControlCharactersAreShownEscaped) {
  EXPECT_EQ(printable("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(printable("a\rb\x07\x7f"), "a\\x0db\\x07\\x7f");
  EXPECT_EQ(printable("one\ntwo"), "one\\x0atwo");
  EXPECT_EQ(printable("one\ntwo", true), "one\ntwo");
  EXPECT_EQ(printable("tab\there"), "tab\\x09here");
  EXPECT_EQ(printable(std::string("nul\0byte", 8)), "nul\\x00byte");
}

TEST(Printable, OtherTextIsKept) {
  EXPECT_EQ(printable("torch 2.10.0+cu129 ✓ é"), "torch 2.10.0+cu129 ✓ é");
  EXPECT_EQ(printable(""), "");
}

// Keys as well as values: a report from another host names its envs.
TEST(Printable, EveryStringOfAJsonValue) {
  const Json value = {{"env\x1b", {"a\nb", "c\x1b"}}, {"n", 3}, {"ok", true}};
  const Json shown = printable_json(value);
  ASSERT_TRUE(shown.contains("env\\x1b"));
  EXPECT_EQ(shown["env\\x1b"][0], "a\nb") << "newlines kept in values";
  EXPECT_EQ(shown["env\\x1b"][1], "c\\x1b");
  EXPECT_EQ(shown["n"], 3);
  EXPECT_EQ(shown["ok"], true);
}

}  // namespace
}  // namespace envcontract::report
