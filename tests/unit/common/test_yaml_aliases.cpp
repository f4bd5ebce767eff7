// The bound on what aliases make of a YAML document: exact at its edges,
// blind to documents without aliases, and always at the alias to blame.
#include "common/yaml_aliases.hpp"

#include <gtest/gtest.h>

namespace envcontract::common {
namespace {

// A document with `aliases` aliases of one anchored list of `items` scalars
// (the list counts as a node too).
std::string aliased_list(int items, int aliases) {
  std::string text = "list: &list [";
  for (int item = 0; item < items; ++item) {
    text += item == 0 ? "x" : ", x";
  }
  text += "]\nuses:\n";
  for (int alias = 0; alias < aliases; ++alias) {
    text += "  - *list\n";
  }
  return text;
}

// `levels` mappings, one inside the other, with `innermost` at the bottom.
std::string nested(int levels, const std::string& innermost) {
  std::string text;
  for (int level = 0; level < levels; ++level) {
    text += "{k: ";
  }
  text += innermost;
  for (int level = 0; level < levels; ++level) {
    text += "}";
  }
  return text;
}

TEST(YamlAliases, DocumentsWithoutAliasesOrWithModestOnesPass) {
  EXPECT_FALSE(find_yaml_alias_problem("a: 1\nb: [x, {y: z}]\n"));
  EXPECT_FALSE(find_yaml_alias_problem("tools: &t [bash, git]\nagain: *t\nscalar: &s 1\nre: *s\n"));
  EXPECT_FALSE(find_yaml_alias_problem(""));
}

TEST(YamlAliasesCycles, AListHoldingItselfIsACycleAtItsAlias) {
  const auto problem = find_yaml_alias_problem("a: &a [1, *a]\n");
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->line, 1);
  EXPECT_EQ(problem->column, 11);
  EXPECT_EQ(problem->message,
            "the alias *a is inside the node it names (an alias cycle), which no reading of the "
            "document ends; write the value out instead of the alias");
}

TEST(YamlAliasesCycles, CyclesThroughKeysAndDeeperNodesAreFound) {
  EXPECT_TRUE(find_yaml_alias_problem("&m\n*m : 1\n"));  // a mapping that is its own key
  const auto deep = find_yaml_alias_problem("top: &top\n  list:\n    - {inner: *top}\n");
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->line, 3);
  // An anchor named again names the new node from there on, as yaml-cpp
  // resolves it: this alias is inside the node it names.
  EXPECT_TRUE(find_yaml_alias_problem("a: &x [1]\nb: &x [*x]\n"));
  EXPECT_FALSE(find_yaml_alias_problem("a: &x [1]\nb: [*x]\nc: &x [2]\nd: *x\n"));
}

TEST(YamlAliasesExpansion, TheBoundCountsNodesReachedThroughAliasesExactly) {
  // 100 aliases of a list of 999 scalars: 100 * 1,000 nodes, the bound itself.
  EXPECT_FALSE(find_yaml_alias_problem(aliased_list(999, 100)));
  const auto past = find_yaml_alias_problem(aliased_list(999, 101));
  ASSERT_TRUE(past);
  EXPECT_EQ(past->line, 103);  // the 101st alias
  EXPECT_EQ(past->message,
            "the alias *list expands the YAML beyond 100000 nodes (a billion-laughs document: "
            "aliases of lists of aliases); write the values out, or alias fewer and smaller nodes");
}

TEST(YamlAliasesExpansion, AliasesOfAliasesAreCountedExpanded) {
  // Each list holds ten aliases of the one before: ten times the nodes per line.
  std::string text = "l0: &l0 [a, a, a, a, a, a, a, a, a, a]\n";
  for (int level = 1; level < 30; ++level) {
    const std::string before = "*l" + std::to_string(level - 1);
    text += "l" + std::to_string(level) + ": &l" + std::to_string(level) + " [" + before;
    for (int alias = 1; alias < 10; ++alias) {
      text += ", " + before;
    }
    text += "]\n";
  }
  const auto problem = find_yaml_alias_problem(text);
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->line, 5);
}

TEST(YamlAliasesDepth, AliasesMayNotNestTheDocumentPastTheBound) {
  // Each anchor 100 levels deep around an alias of the one before: 100 more
  // levels per line, though no line is deep.
  std::string text = "d0: &d0 " + nested(100, "x") + "\n";
  for (int level = 1; level < 8; ++level) {
    text += "d" + std::to_string(level) + ": &d" + std::to_string(level) + " " +
            nested(100, "*d" + std::to_string(level - 1)) + "\n";
  }
  const auto problem = find_yaml_alias_problem(text);
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->line, 5);
  EXPECT_NE(problem->message.find("nests the YAML deeper than 500 levels"), std::string::npos)
      << problem->message;
  // The same nesting written out once is for yaml-cpp's own bound to judge.
  EXPECT_FALSE(find_yaml_alias_problem("d0: &d0 " + nested(100, "x") + "\nd1: *d0\n"));
}

TEST(YamlAliases, WhatIsNotYamlOrNotTheFirstDocumentIsLeftToTheLoad) {
  EXPECT_FALSE(find_yaml_alias_problem("a: [unclosed\nb: &b [*b]\n"));
  EXPECT_FALSE(find_yaml_alias_problem("a: *nowhere\n"));
  // YAML::Load reads the first document only, and so does the bound.
  EXPECT_FALSE(find_yaml_alias_problem("a: 1\n---\nb: &b [*b]\n"));
}

}  // namespace
}  // namespace envcontract::common
