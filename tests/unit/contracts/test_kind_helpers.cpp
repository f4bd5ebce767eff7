// contracts/kind_helpers.cpp: the shared readers of check-kind parsers, each
// reading one key into its typed parameter and reporting a bad value at its
// own position, leaving the parameter as it was.
#include "contracts/kind_helpers.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "contracts/output_pattern.hpp"
#include "tests/support/contract_text.hpp"

namespace envcontract::contracts {
namespace {

using namespace kind_helpers;

using At = testing::Position;

// A check mapping read from text, and every diagnostic reading it produced.
class CheckText {
 public:
  explicit CheckText(const std::string& text) : m_ctx("check.yaml", m_diagnostics) {
    const auto root = load_yaml_text(text, m_ctx);
    EXPECT_TRUE(root) << m_diagnostics.text();
    m_root = root.value_or(YAML::Node());
    m_reader.emplace(m_root, "'test' check", m_ctx);
  }
  CheckText(const CheckText&) = delete;
  CheckText& operator=(const CheckText&) = delete;

  MappingReader& reader() { return *m_reader; }
  std::string text() const { return m_diagnostics.text(); }

  // Where each error is, sorted; other levels are not expected here.
  std::vector<At> errors() const {
    std::vector<At> found;
    for (const auto& diagnostic : m_diagnostics.sorted()) {
      EXPECT_EQ(diagnostic.level, DiagnosticLevel::error) << diagnostic.to_string();
      found.push_back({diagnostic.where.line, diagnostic.where.column});
    }
    return found;
  }
  // The one error's message.
  std::string only_message() const {
    EXPECT_EQ(m_diagnostics.all().size(), 1U) << text();
    return m_diagnostics.all().empty() ? "" : m_diagnostics.all().front().message;
  }

 private:
  Diagnostics m_diagnostics;
  ParseContext m_ctx;
  YAML::Node m_root;
  std::optional<MappingReader> m_reader;
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(KindHelpers, ReadNamesTakesAListOrASingleNameAsAListOfOne) {
  CheckText check("modules: [torch_fl, flag_gems]\nsingle: triton\n");
  Strings modules;
  Strings single;
  EXPECT_TRUE(read_names(check.reader(), "modules", modules, is_module_name, "a module name"));
  EXPECT_TRUE(read_names(check.reader(), "single", single, is_module_name, "a module name"));
  EXPECT_EQ(modules, (Strings{"torch_fl", "flag_gems"}));
  EXPECT_EQ(single, Strings{"triton"});
  check.reader().reject_unknown_keys();
  EXPECT_TRUE(check.errors().empty()) << check.text();
}

TEST(KindHelpers, ReadNamesKeepsTheValidNamesAndReportsEachInvalidOneAtItsItem) {
  CheckText check("absent: [torch_fl, torch-xmlir, flag_gems, [nested]]\n");
  Strings names;
  EXPECT_FALSE(read_names(check.reader(), "absent", names, is_module_name, "a Python module name"));
  EXPECT_EQ(names, (Strings{"torch_fl", "flag_gems"}));
  EXPECT_EQ(check.errors(), (std::vector<At>{{1, 20}, {1, 44}})) << check.text();
  EXPECT_TRUE(contains(check.text(), "is not a Python module name")) << check.text();
}

TEST(KindHelpers, ReadNamesRefusesAMappingAndLeavesTheNamesAlone) {
  CheckText check("present:\n  torch_fl: yes\n");
  Strings names{"kept"};
  EXPECT_FALSE(read_names(check.reader(), "present", names, is_module_name, "a module name"));
  EXPECT_EQ(names, Strings{"kept"});
  EXPECT_EQ(check.errors(), (std::vector<At>{{2, 3}})) << check.text();
}

TEST(KindHelpers, ReadNamesIsFineWithoutAnOptionalKeyButNotARequiredOne) {
  CheckText check("other: x\n");
  Strings names;
  EXPECT_TRUE(read_names(check.reader(), "on_path", names, is_file_name, "a file name"));
  EXPECT_TRUE(check.errors().empty()) << check.text();
  EXPECT_FALSE(
      read_names(check.reader(), "on_path", names, is_file_name, "a file name", Need::required));
  EXPECT_TRUE(names.empty());
  EXPECT_EQ(check.errors(), (std::vector<At>{{1, 1}})) << check.text();
}

TEST(KindHelpers, ReadTextSetsTheTextOnlyWhenTheKeyIsThere) {
  CheckText check("provider: flagtree\n");
  std::string provider = "default";
  std::string prefix = "default";
  read_text(check.reader(), "provider", provider, Need::optional);
  read_text(check.reader(), "version_prefix", prefix, Need::optional);
  EXPECT_EQ(provider, "flagtree");
  EXPECT_EQ(prefix, "default");
  EXPECT_TRUE(check.errors().empty()) << check.text();

  read_text(check.reader(), "version_prefix", prefix, Need::required);
  EXPECT_EQ(prefix, "default");
  EXPECT_EQ(check.errors(), (std::vector<At>{{1, 1}})) << check.text();
}

TEST(KindHelpers, ReadTimeoutReadsADurationAndKeepsTheDefaultWhenAbsent) {
  CheckText given("timeout: 90s\n");
  std::chrono::milliseconds timeout{60'000};
  read_timeout(given.reader(), timeout);
  EXPECT_EQ(timeout, std::chrono::seconds(90));
  EXPECT_TRUE(given.errors().empty()) << given.text();

  CheckText absent("code: x\n");
  std::chrono::milliseconds kept{60'000};
  read_timeout(absent.reader(), kept);
  EXPECT_EQ(kept, std::chrono::milliseconds(60'000));
  EXPECT_TRUE(absent.errors().empty()) << absent.text();
}

TEST(KindHelpers, ABadTimeoutIsReportedAtItsValueAndLeavesTheDefault) {
  CheckText check("code: x\ntimeout: soon\n");
  std::chrono::milliseconds timeout{60'000};
  read_timeout(check.reader(), timeout);
  EXPECT_EQ(timeout, std::chrono::milliseconds(60'000));
  EXPECT_EQ(check.errors(), (std::vector<At>{{2, 10}})) << check.text();
  EXPECT_TRUE(contains(check.only_message(), parse_duration("soon").error()))
      << check.only_message();
}

TEST(KindHelpers, ReadCountReadsAComparisonAndABareNumberMeansEquals) {
  CheckText check("count: \">= 8\"\nexactly: \"4\"\n");
  Comparison count{">", 0};
  Comparison exactly{">", 0};
  read_count(check.reader(), "count", count, Need::optional);
  read_count(check.reader(), "exactly", exactly, Need::optional);
  EXPECT_EQ(count.op, ">=");
  EXPECT_EQ(count.value, 8);
  EXPECT_EQ(exactly.op, "==");
  EXPECT_EQ(exactly.value, 4);
  EXPECT_TRUE(check.errors().empty()) << check.text();
}

TEST(KindHelpers, ABadCountIsReportedAtItsValueAndLeavesTheDefault) {
  CheckText check("glob: /dev/xpu*\ncount: \"<= 8\"\n");
  Comparison count{">=", 1};
  read_count(check.reader(), "count", count, Need::optional);
  EXPECT_EQ(count.op, ">=");
  EXPECT_EQ(count.value, 1);
  EXPECT_EQ(check.errors(), (std::vector<At>{{2, 8}})) << check.text();

  Comparison missing{">=", 1};
  read_count(check.reader(), "minimum", missing, Need::required);
  EXPECT_EQ(missing.op, ">=");
  EXPECT_EQ(check.errors(), (std::vector<At>{{1, 1}, {2, 8}})) << check.text();
}

TEST(KindHelpers, ReadSpecifierReadsABareVersionAsExactOrAsAPrefix) {
  CheckText check("python: \"3.10\"\nprovider_version: \"0.7.0\"\npin: \">=4.51,<5\"\n");
  std::vector<VersionClause> python;
  std::vector<VersionClause> provider;
  std::vector<VersionClause> pin;
  read_specifier(check.reader(), "python", python, Need::required, BareVersion::prefix);
  read_specifier(check.reader(), "provider_version", provider, Need::optional, BareVersion::exact);
  read_specifier(check.reader(), "pin", pin, Need::optional, BareVersion::exact);
  ASSERT_EQ(python.size(), 1U);
  EXPECT_EQ(python[0].op, "==");
  EXPECT_EQ(python[0].version, "3.10.*");
  ASSERT_EQ(provider.size(), 1U);
  EXPECT_EQ(provider[0].op, "==");
  EXPECT_EQ(provider[0].version, "0.7.0");
  ASSERT_EQ(pin.size(), 2U);
  EXPECT_EQ(pin[0].op, ">=");
  EXPECT_EQ(pin[1].op, "<");
  EXPECT_TRUE(check.errors().empty()) << check.text();
}

TEST(KindHelpers, ABadSpecifierIsReportedAtItsValueAndLeavesTheClauses) {
  CheckText check("version: \"<two\"\n");
  std::vector<VersionClause> clauses{{">=", "3.10"}};
  read_specifier(check.reader(), "version", clauses, Need::required, BareVersion::prefix);
  ASSERT_EQ(clauses.size(), 1U);
  EXPECT_EQ(clauses[0].version, "3.10");
  EXPECT_EQ(check.errors(), (std::vector<At>{{1, 10}})) << check.text();
}

TEST(KindHelpers, ReadOutputPatternKeepsAPatternRe2Accepts) {
  CheckText check("expect_output: \"tensor\\\\(2\\\\.\"\n");
  std::string pattern;
  read_output_pattern(check.reader(), "expect_output", pattern);
  EXPECT_EQ(pattern, "tensor\\(2\\.");
  EXPECT_TRUE(check.errors().empty()) << check.text();

  CheckText absent("code: x\n");
  std::string kept = "previous";
  read_output_pattern(absent.reader(), "expect_output", kept);
  EXPECT_EQ(kept, "previous");
  EXPECT_TRUE(absent.errors().empty()) << absent.text();
}

TEST(KindHelpers, APatternRe2RefusesIsReportedWithWhatToWriteAndNotKept) {
  CheckText check("code: x\nexpect_output: \"(?<=a)b\"\n");
  ASSERT_FALSE(output_pattern_problem("(?<=a)b").empty());
  std::string pattern = "previous";
  read_output_pattern(check.reader(), "expect_output", pattern);
  EXPECT_EQ(pattern, "previous");
  EXPECT_EQ(check.errors(), (std::vector<At>{{2, 16}})) << check.text();
  EXPECT_TRUE(contains(check.only_message(), output_pattern_problem("(?<=a)b")))
      << check.only_message();
}

TEST(KindHelpers, PathPatternsAnchoredAtPrefixSiteOrRootAreKept) {
  CheckText check(
      "exist: [\"{prefix}/lib/libxpurt.so.1\", \"{site}/torch_fl\", /opt/xpu/lib/*.so]\n"
      "absent: \"{site}/torch/lib/libtorch_cuda.so\"\n");
  Strings exist;
  Strings absent;
  Strings none{"kept"};
  EXPECT_TRUE(read_path_patterns(check.reader(), "exist", exist));
  EXPECT_TRUE(read_path_patterns(check.reader(), "absent", absent));
  EXPECT_TRUE(read_path_patterns(check.reader(), "missing", none));
  EXPECT_EQ(exist, (Strings{"{prefix}/lib/libxpurt.so.1", "{site}/torch_fl", "/opt/xpu/lib/*.so"}));
  EXPECT_EQ(absent, Strings{"{site}/torch/lib/libtorch_cuda.so"});
  EXPECT_EQ(none, Strings{"kept"});
  EXPECT_TRUE(check.errors().empty()) << check.text();
}

TEST(KindHelpers, AnUnanchoredPathIsReportedAtItsItemAndTheOthersAreKept) {
  CheckText check("absent: [\"{prefix}/lib\", lib/libcuda.so, \"{sites}/torch\", /opt/x]\n");
  Strings patterns;
  EXPECT_FALSE(read_path_patterns(check.reader(), "absent", patterns));
  EXPECT_EQ(patterns, (Strings{"{prefix}/lib", "/opt/x"}));
  EXPECT_EQ(check.errors(), (std::vector<At>{{1, 26}, {1, 42}})) << check.text();
  // A near miss of an anchor is named.
  EXPECT_TRUE(contains(check.text(), "did you mean '{site}'")) << check.text();
}

TEST(KindHelpers, PathPatternsThatAreNotStringsAreRefusedWhole) {
  CheckText check("exist: [\"{prefix}/lib\", {a: b}]\nabsent: {a: b}\n");
  Strings exist;
  Strings absent;
  EXPECT_FALSE(read_path_patterns(check.reader(), "exist", exist));
  EXPECT_FALSE(read_path_patterns(check.reader(), "absent", absent));
  EXPECT_TRUE(exist.empty());
  EXPECT_TRUE(absent.empty());
  EXPECT_EQ(check.errors(), (std::vector<At>{{1, 25}, {2, 9}})) << check.text();
}

TEST(KindHelpers, OnePathPatternIsKeptOnlyWhenAnchored) {
  CheckText check("library: \"{site}/torch_fl/lib/libtorch_fl.so\"\nother: torch_fl/lib\n");
  std::string library;
  std::string other = "previous";
  read_path_pattern(check.reader(), "library", library, Need::required);
  EXPECT_EQ(library, "{site}/torch_fl/lib/libtorch_fl.so");
  EXPECT_TRUE(check.errors().empty()) << check.text();
  read_path_pattern(check.reader(), "other", other, Need::optional);
  EXPECT_EQ(other, "previous");
  EXPECT_EQ(check.errors(), (std::vector<At>{{2, 8}})) << check.text();
  EXPECT_TRUE(contains(check.only_message(), "torch_fl/lib")) << check.only_message();
}

TEST(KindHelpers, NamedValuesComeInTheFilesOrderWithTheirNodes) {
  CheckText check("equals:\n  XPU_ROOT: /usr/local/xpu\n  ASCEND_HOME: /usr/local/Ascend\n");
  const auto entries = read_named_values(check.reader(), "equals", is_environment_variable_name,
                                         "a variable name", "variable names to values");
  ASSERT_EQ(entries.size(), 2U);
  EXPECT_EQ(entries[0].name, "XPU_ROOT");
  EXPECT_EQ(entries[0].value, "/usr/local/xpu");
  EXPECT_EQ(entries[1].name, "ASCEND_HOME");
  EXPECT_EQ(entries[1].value, "/usr/local/Ascend");
  EXPECT_EQ(entries[1].name_node.Mark().line + 1, 3);
  EXPECT_EQ(entries[1].name_node.Mark().column + 1, 3);
  EXPECT_EQ(entries[1].value_node.Mark().column + 1, 16);
  EXPECT_TRUE(check.errors().empty()) << check.text();
}

TEST(KindHelpers, NamedValuesReportBadNamesAndValuesAndKeepTheRest) {
  CheckText check(
      "equals:\n  XPU_ROOT: /usr/local/xpu\n  not-a-name: x\n  LIST: [a, b]\n  OK: \"1\"\n");
  const auto entries = read_named_values(check.reader(), "equals", is_environment_variable_name,
                                         "a variable name", "variable names to values");
  ASSERT_EQ(entries.size(), 2U);
  EXPECT_EQ(entries[0].name, "XPU_ROOT");
  EXPECT_EQ(entries[1].name, "OK");
  EXPECT_EQ(entries[1].value, "1");
  EXPECT_EQ(check.errors(), (std::vector<At>{{3, 3}, {4, 9}})) << check.text();
}

TEST(KindHelpers, NamedValuesThatAreNotAMappingAreOneErrorAndNoEntries) {
  CheckText check("equals: [XPU_ROOT]\n");
  const auto entries = read_named_values(check.reader(), "equals", is_environment_variable_name,
                                         "a variable name", "variable names to values");
  EXPECT_TRUE(entries.empty());
  EXPECT_EQ(check.errors(), (std::vector<At>{{1, 9}})) << check.text();
  EXPECT_TRUE(contains(check.only_message(), "must map variable names to values"))
      << check.only_message();

  CheckText absent("set: [X]\n");
  EXPECT_TRUE(read_named_values(absent.reader(), "equals", is_environment_variable_name,
                                "a variable name", "variable names to values")
                  .empty());
  EXPECT_TRUE(absent.errors().empty()) << absent.text();
}

TEST(KindHelpers, RequireOneOfReportsACheckThatChecksNothingAtItsMapping) {
  CheckText check("description: nothing here\n");
  require_one_of(check.reader(), {"exist", "absent"});
  EXPECT_EQ(check.errors(), (std::vector<At>{{1, 1}})) << check.text();
  EXPECT_TRUE(contains(check.only_message(), "'exist', 'absent'")) << check.only_message();
}

TEST(KindHelpers, RequireOneOfIsSatisfiedByAnyOneKeyEvenANullOne) {
  CheckText check("absent:\n");
  require_one_of(check.reader(), {"exist", "absent"});
  // The keys it looked for are known keys, not unknown ones.
  check.reader().reject_unknown_keys();
  EXPECT_TRUE(check.errors().empty()) << check.text();
}

}  // namespace
}  // namespace envcontract::contracts
