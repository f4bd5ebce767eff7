// contracts/check_parser.cpp: turns check mappings into Checks through the
// kind registry, whichever section they come from, keeping their ids unique.
#include "contracts/check_parser.hpp"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "tests/support/contract_text.hpp"

namespace envcontract::contracts {
namespace {

using At = testing::Position;

// A list of check mappings read from text, parsed one by one, and every
// diagnostic that produced.
class CheckList {
 public:
  explicit CheckList(const std::string& text, const std::string& section = "checks",
                     KindContext context = {})
      : m_ctx("checks.yaml", m_diagnostics), m_parser(m_ctx, std::move(context)) {
    const auto root = load_yaml_text(text, m_ctx);
    EXPECT_TRUE(root && root->IsSequence()) << m_diagnostics.text();
    m_root = root.value_or(YAML::Node());
    for (const auto& item : m_root) {
      m_parser.parse(item, section);
    }
  }
  CheckList(const CheckList&) = delete;
  CheckList& operator=(const CheckList&) = delete;

  CheckParser& parser() { return m_parser; }
  const YAML::Node& root() const { return m_root; }
  std::string text() const { return m_diagnostics.text(); }

  std::vector<At> errors() const {
    std::vector<At> found;
    for (const auto& diagnostic : m_diagnostics.sorted()) {
      if (diagnostic.level == DiagnosticLevel::error) {
        found.push_back({diagnostic.where.line, diagnostic.where.column});
      }
    }
    return found;
  }
  std::vector<std::string> messages() const {
    std::vector<std::string> found;
    for (const auto& diagnostic : m_diagnostics.sorted()) {
      found.push_back(diagnostic.message);
    }
    return found;
  }

 private:
  Diagnostics m_diagnostics;
  ParseContext m_ctx;
  CheckParser m_parser;
  YAML::Node m_root;
};

std::vector<std::string> ids_of(const std::vector<Check>& checks) {
  std::vector<std::string> ids;
  for (const auto& check : checks) {
    ids.push_back(check.id);
  }
  return ids;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CheckParser, ACheckCarriesItsCommonKeysSectionAndOrigin) {
  CheckList list(
      "- id: smi\n"
      "  kind: tools\n"
      "  severity: advisory\n"
      "  description: xpu-smi helps operators\n"
      "  on_path: [xpu-smi]\n",
      "environment_check");
  const auto checks = list.parser().take_checks();
  EXPECT_TRUE(list.errors().empty()) << list.text();
  ASSERT_EQ(checks.size(), 1U);
  const Check& check = checks[0];
  EXPECT_EQ(check.id, "smi");
  EXPECT_EQ(check.kind, "tools");
  EXPECT_EQ(check.severity, Severity::advisory);
  EXPECT_EQ(check.description, "xpu-smi helps operators");
  EXPECT_EQ(check.section, "environment_check");
  EXPECT_EQ(check.origin.file, "checks.yaml");
  EXPECT_EQ(check.origin.line, 1);
  EXPECT_EQ(check.origin.column, 3);
  ASSERT_NE(find_check_kind("tools"), nullptr);
  EXPECT_EQ(check.stage, find_check_kind("tools")->stage);
  ASSERT_NE(check.parameters_if<ToolsParams>(), nullptr);
  EXPECT_EQ(check.parameters<ToolsParams>().on_path, Strings{"xpu-smi"});
}

TEST(CheckParser, SeverityDefaultsToRequiredAndTheStageToTheKinds) {
  CheckList list(
      "- kind: imports\n"
      "  modules: [torch_fl]\n"
      "- kind: smoke\n"
      "  code: print(1)\n"
      "  severity: required\n");
  const auto checks = list.parser().take_checks();
  EXPECT_TRUE(list.errors().empty()) << list.text();
  ASSERT_EQ(checks.size(), 2U);
  EXPECT_EQ(checks[0].severity, Severity::required);
  EXPECT_EQ(checks[1].severity, Severity::required);
  EXPECT_EQ(checks[0].stage, find_check_kind("imports")->stage);
  EXPECT_EQ(checks[1].stage, find_check_kind("smoke")->stage);
  EXPECT_EQ(checks[0].description, "");
}

TEST(CheckParser, DefaultIdsAreTheKindNumberedFromTwo) {
  CheckList list(
      "- kind: tools\n"
      "  on_path: [a]\n"
      "- kind: glibc\n"
      "  min_version: \"2.38\"\n"
      "- kind: tools\n"
      "  on_path: [b]\n"
      "- kind: tools\n"
      "  on_path: [c]\n");
  EXPECT_TRUE(list.errors().empty()) << list.text();
  EXPECT_EQ(ids_of(list.parser().take_checks()),
            (std::vector<std::string>{"tools", "glibc", "tools-2", "tools-3"}));
}

TEST(CheckParser, ADefaultIdStepsAroundAnExplicitOne) {
  CheckList list(
      "- id: tools\n"
      "  kind: glibc\n"
      "  min_version: \"2.38\"\n"
      "- kind: tools\n"
      "  on_path: [a]\n");
  EXPECT_TRUE(list.errors().empty()) << list.text();
  EXPECT_EQ(ids_of(list.parser().take_checks()), (std::vector<std::string>{"tools", "tools-2"}));
}

TEST(CheckParser, AnExplicitDuplicateIdIsAnErrorAtItAndThatCheckIsDropped) {
  CheckList list(
      "- id: smi\n"
      "  kind: tools\n"
      "  on_path: [xpu-smi]\n"
      "- id: smi\n"
      "  kind: command\n"
      "  run: xpu-smi -L\n");
  EXPECT_EQ(list.errors(), (std::vector<At>{{4, 7}})) << list.text();
  // The message points back at the first definition, at its id.
  EXPECT_TRUE(contains(list.text(), "checks.yaml:1:7")) << list.text();
  const auto checks = list.parser().take_checks();
  ASSERT_EQ(checks.size(), 1U);
  EXPECT_EQ(checks[0].kind, "tools");
}

TEST(CheckParser, AnUnknownKindIsReportedAndTheOtherChecksStillParse) {
  CheckList list(
      "- kind: tool\n"
      "  on_path: [xpu-smi]\n"
      "- kind: glibc\n"
      "  min_version: \"2.38\"\n");
  EXPECT_EQ(list.errors(), (std::vector<At>{{1, 9}})) << list.text();
  EXPECT_TRUE(contains(list.text(), "did you mean 'tools'")) << list.text();
  EXPECT_EQ(ids_of(list.parser().take_checks()), std::vector<std::string>{"glibc"});
}

TEST(CheckParser, ACheckWithoutAKindIsReportedAtItsMappingAndNotMade) {
  CheckList list("- id: smi\n  on_path: [xpu-smi]\n");
  EXPECT_EQ(list.errors(), (std::vector<At>{{1, 3}})) << list.text();
  // Named by its id, since it has one.
  EXPECT_TRUE(contains(list.text(), "check 'smi'")) << list.text();
  EXPECT_TRUE(list.parser().take_checks().empty());
}

TEST(CheckParser, ANonMappingIsReportedAndNotMade) {
  CheckList list("- tools\n- [kind, tools]\n");
  EXPECT_EQ(list.errors(), (std::vector<At>{{1, 3}, {2, 3}})) << list.text();
  EXPECT_TRUE(list.parser().take_checks().empty());
}

TEST(CheckParser, AnUnknownSeverityIsReportedAtItsValueAndTheCheckStaysRequired) {
  CheckList list(
      "- kind: tools\n"
      "  severity: optional\n"
      "  on_path: [x]\n");
  EXPECT_EQ(list.errors(), (std::vector<At>{{2, 13}})) << list.text();
  EXPECT_TRUE(contains(list.text(), "'tools' check")) << list.text();
  const auto checks = list.parser().take_checks();
  ASSERT_EQ(checks.size(), 1U);
  EXPECT_EQ(checks[0].severity, Severity::required);
}

TEST(CheckParser, AnUnknownKeyIsReportedAtItsKey) {
  CheckList list(
      "- kind: tools\n"
      "  on_path: [x]\n"
      "  on_pth: [y]\n");
  EXPECT_EQ(list.errors(), (std::vector<At>{{3, 3}})) << list.text();
  EXPECT_TRUE(contains(list.text(), "on_pth")) << list.text();
}

TEST(CheckParser, AnInvalidIdIsReportedAndTheCheckFallsBackToItsKindsName) {
  CheckList list(
      "- id: \"no spaces\"\n"
      "  kind: tools\n"
      "  on_path: [x]\n");
  EXPECT_EQ(list.errors(), (std::vector<At>{{1, 7}})) << list.text();
  EXPECT_EQ(ids_of(list.parser().take_checks()), std::vector<std::string>{"tools"});
}

// A check whose id is invalid falls back to the kind's name as one without
// an id does: when an earlier check has that name already, it steps around
// it, and the invalid id is the only error (not also a "duplicate check id"
// the author never wrote).
TEST(CheckParser, AnInvalidIdIsOneErrorEvenWhenTheKindsNameIsTaken) {
  CheckList list(
      "- kind: tools\n"
      "  on_path: [x]\n"
      "- id: \"no spaces\"\n"
      "  kind: tools\n"
      "  on_path: [y]\n");
  EXPECT_EQ(list.errors(), (std::vector<At>{{3, 7}})) << list.text();
  for (const auto& message : list.messages()) {
    EXPECT_FALSE(contains(message, "duplicate check id")) << message;
  }
}

TEST(CheckParser, AnAddedCheckGetsAnIdNoParsedCheckHas) {
  CheckList list("- kind: tools\n  on_path: [x]\n");
  Check added;
  added.id = "tools";
  added.kind = "tools";
  added.params = ToolsParams{{"y"}};
  list.parser().add(added, list.root()[0]);
  Check fresh;
  fresh.id = "from-platform-config";
  fresh.kind = "tools";
  fresh.params = ToolsParams{{"z"}};
  list.parser().add(fresh, list.root()[0]);
  // A check built elsewhere is never a duplicate: it is renamed.
  EXPECT_TRUE(list.errors().empty()) << list.text();
  const auto checks = list.parser().take_checks();
  EXPECT_EQ(ids_of(checks), (std::vector<std::string>{"tools", "tools-2", "from-platform-config"}));
  ASSERT_EQ(checks.size(), 3U);
  EXPECT_EQ(checks[1].parameters<ToolsParams>().on_path, Strings{"y"});
}

TEST(CheckParser, TakingTheChecksLeavesNoneBehindButIdsStayClaimed) {
  CheckList list("- kind: tools\n  on_path: [x]\n");
  EXPECT_EQ(list.parser().take_checks().size(), 1U);
  EXPECT_TRUE(list.parser().take_checks().empty());
}

TEST(CheckParser, TheKindContextIsKeptForTheKindsParsers) {
  KindContext context;
  context.contract_dir = "/etc/envcontract/contracts";
  context.checkout = "/srv/checkouts/flagos";
  CheckList list("- kind: tools\n  on_path: [x]\n", "checks", context);
  EXPECT_EQ(list.parser().kind_context().contract_dir, context.contract_dir);
  EXPECT_EQ(list.parser().kind_context().checkout, context.checkout);
}

}  // namespace
}  // namespace envcontract::contracts
