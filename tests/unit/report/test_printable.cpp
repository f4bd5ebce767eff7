// report/printable.cpp: reports from envs and other hosts drawn without
// letting them drive the operator's terminal.
#include <gtest/gtest.h>

#include "report/printable.hpp"

namespace envcontract::report {
namespace {

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
