// contracts/diagnostics.cpp: the problems a pass over contract files finds,
// kept all at once, counted, sorted by position and printed as
// "file:line:column: level: message" lines.
#include "contracts/diagnostics.hpp"

#include <gtest/gtest.h>

namespace envcontract::contracts {
namespace {

TEST(Diagnostics, ALocationIsFileLineAndColumnOrTheFileAloneWhenItsLineIsUnknown) {
  EXPECT_EQ((SourceLocation{"contract.yaml", 3, 7}).to_string(), "contract.yaml:3:7");
  EXPECT_EQ((SourceLocation{"contract.yaml", 0, 7}).to_string(), "contract.yaml");
  EXPECT_EQ((SourceLocation{"contract.yaml", -1, 0}).to_string(), "contract.yaml");
  EXPECT_EQ((SourceLocation{"contract.yaml", 1, 0}).to_string(), "contract.yaml:1:0");
}

TEST(Diagnostics, ADiagnosticPrintsItsLevelBetweenWhereAndWhat) {
  const SourceLocation where{"c.yaml", 2, 5};
  EXPECT_EQ((Diagnostic{DiagnosticLevel::error, where, "bad"}).to_string(),
            "c.yaml:2:5: error: bad");
  EXPECT_EQ((Diagnostic{DiagnosticLevel::warning, where, "odd"}).to_string(),
            "c.yaml:2:5: warning: odd");
  EXPECT_EQ((Diagnostic{DiagnosticLevel::note, where, "fyi"}).to_string(), "c.yaml:2:5: note: fyi");
  EXPECT_EQ((Diagnostic{DiagnosticLevel::error, {"c.yaml", 0, 0}, "unreadable"}).to_string(),
            "c.yaml: error: unreadable");
}

TEST(Diagnostics, OnlyErrorsCountAsErrors) {
  Diagnostics diagnostics;
  EXPECT_FALSE(diagnostics.has_errors());
  EXPECT_EQ(diagnostics.error_count(), 0U);
  diagnostics.warning({"a.yaml", 1, 1}, "a warning");
  diagnostics.note({"a.yaml", 2, 1}, "a note");
  EXPECT_FALSE(diagnostics.has_errors()) << "warnings and notes never stop a load";
  EXPECT_EQ(diagnostics.error_count(), 0U);
  diagnostics.error({"a.yaml", 3, 1}, "one");
  diagnostics.error({"a.yaml", 4, 1}, "two");
  EXPECT_TRUE(diagnostics.has_errors());
  EXPECT_EQ(diagnostics.error_count(), 2U);
  ASSERT_EQ(diagnostics.all().size(), 4U) << "every problem is kept, not only the first";
  EXPECT_EQ(diagnostics.all()[0].level, DiagnosticLevel::warning);
  EXPECT_EQ(diagnostics.all()[1].level, DiagnosticLevel::note);
  EXPECT_EQ(diagnostics.all()[2].level, DiagnosticLevel::error);
  EXPECT_EQ(diagnostics.all()[3].message, "two");
}

TEST(Diagnostics, SortedOrdersByFileLineAndColumnAndKeepsTheOrderOfEqualPositions) {
  Diagnostics diagnostics;
  diagnostics.error({"b.yaml", 1, 1}, "b first");
  diagnostics.error({"a.yaml", 10, 2}, "a line 10");
  diagnostics.warning({"a.yaml", 2, 9}, "a line 2 column 9");
  diagnostics.note({"a.yaml", 2, 3}, "a line 2 column 3");
  diagnostics.error({"a.yaml", 10, 2}, "a line 10 again");
  diagnostics.error({"a.yaml", 0, 0}, "a whole file");
  const auto sorted = diagnostics.sorted();
  ASSERT_EQ(sorted.size(), 6U);
  std::vector<std::string> messages;
  for (const auto& diagnostic : sorted) {
    messages.push_back(diagnostic.message);
  }
  // Line 10 sorts after line 2 (numbers, not text); two problems at one
  // position stay in the order they were found.
  EXPECT_EQ(messages,
            (std::vector<std::string>{"a whole file", "a line 2 column 3", "a line 2 column 9",
                                      "a line 10", "a line 10 again", "b first"}));
  EXPECT_EQ(diagnostics.all().front().message, "b first") << "sorting copies, never reorders";
}

TEST(Diagnostics, TextIsEverySortedDiagnosticOnALineOfItsOwn) {
  Diagnostics diagnostics;
  EXPECT_EQ(diagnostics.text(), "");
  diagnostics.warning({"c.yaml", 4, 1}, "unknown key 'x'");
  diagnostics.error({"c.yaml", 2, 3}, "'name' is missing");
  EXPECT_EQ(diagnostics.text(),
            "c.yaml:2:3: error: 'name' is missing\n"
            "c.yaml:4:1: warning: unknown key 'x'\n");
}

}  // namespace
}  // namespace envcontract::contracts
