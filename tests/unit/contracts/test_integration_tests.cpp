// contracts/integration_tests.cpp: the entries of a CI platform config's
// `integration_tests` list read as the FlagOS runner reads them (phase,
// failure policy, report id, environment), each problem reported at its
// line, and one entry found by its id, name or check id.
#include "contracts/integration_tests.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/contract_text.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::contracts {
namespace {

IntegrationEntry named(const std::string& name, const std::string& id = "") {
  IntegrationEntry entry;
  entry.name = name;
  entry.id = id;
  return entry;
}

using At = testing::DiagnosticAt;

std::vector<At> positions(const Diagnostics& diagnostics) {
  return testing::diagnostics_at(diagnostics);
}

// The first entry of a config's text parsed, with what parsing reported.
struct Parsed {
  Diagnostics diagnostics;
  std::optional<IntegrationEntry> entry;
};

Parsed parse_entry(const std::string& text, const NamedList<std::string>& runner = {}) {
  Parsed parsed;
  ParseContext ctx("ci.yaml", parsed.diagnostics);
  const auto root = load_yaml_text(text, ctx);
  if (root) {
    parsed.entry = parse_integration_entry(*root, runner, ctx);
  }
  return parsed;
}

TEST(IntegrationTests, OnlyThePreflightPhaseIsPreflight) {
  EXPECT_TRUE(is_preflight_phase("preflight"));
  EXPECT_FALSE(is_preflight_phase("functional"));
  EXPECT_FALSE(is_preflight_phase("Preflight"));
  EXPECT_FALSE(is_preflight_phase(""));
}

TEST(IntegrationTests, TheRunnersPhaseIsTheEntrysOwnElseOneReadFromItsName) {
  auto own = named("Check device");
  own.phase = "functional";
  EXPECT_EQ(runner_phase(own), "functional") << "a written phase wins over the name";
  for (const char* name : {"Check device", "GPU AVAILABILITY", "Run isolated ops",
                           "Verify Environment", "check xpu-smi"}) {
    EXPECT_EQ(runner_phase(named(name)), "preflight") << name;
  }
  // "check" counts only as a word followed by a space.
  for (const char* name : {"Run operator tests", "Checkout sources", "health-check", ""}) {
    EXPECT_EQ(runner_phase(named(name)), "functional") << name;
  }
}

TEST(IntegrationTests, TheRunnersPolicyIsTheEntrysOwnElseFollowsThePhase) {
  auto own = named("Run operator tests");
  own.failure_policy = "fail-fast";
  EXPECT_EQ(runner_failure_policy(own), "fail-fast");
  EXPECT_EQ(runner_failure_policy(named("Run operator tests")), "continue-after-failure");
  EXPECT_EQ(runner_failure_policy(named("Check device")), "fail-fast");
  auto preflight = named("Run operator tests");
  preflight.phase = "preflight";
  EXPECT_EQ(runner_failure_policy(preflight), "fail-fast");
}

TEST(IntegrationTests, ACheckIdIsTheEntrysIdElseItsNameMadeASlug) {
  EXPECT_EQ(integration_check_id(named("Check device", "torch_cpu-1.0")), "torch_cpu-1.0");
  EXPECT_EQ(integration_check_id(named("Whatever", "check device")), "check-device")
      << "an id the runner accepts but a check id cannot hold";
  EXPECT_EQ(integration_check_id(named("Whatever", "-lead")), "lead");
  EXPECT_EQ(integration_check_id(named("Check device availability")), "check-device-availability");
  EXPECT_EQ(integration_check_id(named("  Run -- ops (v2)!  ")), "run-ops-v2");
}

TEST(IntegrationTests, ANameWithoutLettersOrDigitsGetsAStableIdOfItsHash) {
  const std::string one = integration_check_id(named("算子测试"));
  const std::string other = integration_check_id(named("精度测试"));
  const std::string prefix = "integration-test-";
  ASSERT_EQ(one.rfind(prefix, 0), 0U) << one;
  EXPECT_EQ(one.size(), prefix.size() + 8);
  EXPECT_EQ(one.find_first_not_of("0123456789abcdef", prefix.size()), std::string::npos) << one;
  EXPECT_NE(one, other) << "two such names stay two ids";
  EXPECT_EQ(one, integration_check_id(named("算子测试"))) << "the same name, the same id";
}

TEST(IntegrationTests, AnEnvironmentMapKeepsTheFilesOrderAndReportsEachBadName) {
  Diagnostics diagnostics;
  ParseContext ctx("ci.yaml", diagnostics);
  const auto root = load_yaml_text("ZED: '1'\nALPHA: two\n1BAD: x\nA-B: y\nOK_2: ''\n", ctx);
  ASSERT_TRUE(root);
  const auto variables = read_environment_map(*root, "environment", ctx);
  EXPECT_EQ(variables, (NamedList<std::string>{{"ZED", "1"}, {"ALPHA", "two"}, {"OK_2", ""}}));
  EXPECT_EQ(positions(diagnostics),
            (std::vector<At>{{DiagnosticLevel::error, 3, 1}, {DiagnosticLevel::error, 4, 1}}));
  EXPECT_NE(diagnostics.sorted()[0].message.find("'1BAD' in 'environment' is not a variable name"),
            std::string::npos)
      << diagnostics.text();
}

TEST(IntegrationTests, AnEnvironmentThatIsNotAMapIsAnErrorAndEmpty) {
  Diagnostics diagnostics;
  ParseContext ctx("ci.yaml", diagnostics);
  const auto root = load_yaml_text("- A=1\n- B=2\n", ctx);
  ASSERT_TRUE(root);
  EXPECT_TRUE(read_environment_map(*root, "integration_environment", ctx).empty());
  EXPECT_EQ(diagnostics.error_count(), 1U);
  EXPECT_NE(diagnostics.text().find("'integration_environment' must map variable names to "
                                    "values, got a list"),
            std::string::npos)
      << diagnostics.text();

  Diagnostics nested;
  ParseContext nested_ctx("ci.yaml", nested);
  const auto value_list = load_yaml_text("A: [1, 2]\nB: b\n", nested_ctx);
  ASSERT_TRUE(value_list);
  EXPECT_EQ(read_environment_map(*value_list, "environment", nested_ctx),
            (NamedList<std::string>{{"B", "b"}}));
  EXPECT_EQ(positions(nested), (std::vector<At>{{DiagnosticLevel::error, 1, 4}}));
}

TEST(IntegrationTests, RepositoryPathsAreRelativePathWordsOfThreeCharactersOrMore) {
  EXPECT_EQ(repository_paths("cd ../flagos/ops && python tests/a.py --out=/tmp/x a/"),
            (std::vector<std::string>{"../flagos/ops", "tests/a.py"}));
  EXPECT_EQ(repository_paths("python\ttools/run.py\nbash ./x.sh"),
            (std::vector<std::string>{"tools/run.py", "./x.sh"}))
      << "any white space separates words";
  EXPECT_TRUE(repository_paths("").empty());
  EXPECT_TRUE(repository_paths("echo hello world").empty()) << "no word with a slash";
  EXPECT_TRUE(repository_paths("ls " + std::string(600, 'a') + "/b").empty())
      << "a word past 512 characters is never a path";
}

TEST(IntegrationTests, AnEntryIsReadWithItsEnvironmentAndTheRunners) {
  const auto parsed = parse_entry(
      "name: Run operator tests\nid: ops\nphase: functional\n"
      "failure_policy: continue-after-failure\ncommand: pytest tests/ops\n"
      "environment:\n  A: '1'\n",
      {{"CI", "true"}});
  ASSERT_TRUE(parsed.entry) << parsed.diagnostics.text();
  EXPECT_FALSE(parsed.diagnostics.has_errors()) << parsed.diagnostics.text();
  EXPECT_EQ(parsed.entry->name, "Run operator tests");
  EXPECT_EQ(parsed.entry->id, "ops");
  EXPECT_EQ(parsed.entry->phase, "functional");
  EXPECT_EQ(parsed.entry->failure_policy, "continue-after-failure");
  EXPECT_EQ(parsed.entry->command, "pytest tests/ops");
  EXPECT_EQ(parsed.entry->environment, (NamedList<std::string>{{"A", "1"}}));
  EXPECT_EQ(parsed.entry->runner_environment, (NamedList<std::string>{{"CI", "true"}}));
}

TEST(IntegrationTests, AnEntryWithoutNameOrCommandIsNoEntry) {
  const auto no_command = parse_entry("name: Check device\n");
  EXPECT_FALSE(no_command.entry);
  EXPECT_EQ(no_command.diagnostics.error_count(), 1U) << no_command.diagnostics.text();
  const auto no_name = parse_entry("command: 'true'\n");
  EXPECT_FALSE(no_name.entry);
  EXPECT_EQ(no_name.diagnostics.error_count(), 1U) << no_name.diagnostics.text();
  const auto not_a_map = parse_entry("- name: a\n");
  EXPECT_FALSE(not_a_map.entry);
  EXPECT_TRUE(not_a_map.diagnostics.has_errors());
}

// A misspelt phase would make a preflight vanish: an error at its value,
// never a silent default.
TEST(IntegrationTests, AnUnknownPhaseOrPolicyIsAnErrorAtItsValue) {
  const auto parsed =
      parse_entry("name: Check device\ncommand: 'true'\nphase: prefligt\nfailure_policy: stop\n");
  ASSERT_TRUE(parsed.entry);
  EXPECT_EQ(parsed.entry->phase, "");
  EXPECT_EQ(parsed.entry->failure_policy, "");
  EXPECT_EQ(positions(parsed.diagnostics),
            (std::vector<At>{{DiagnosticLevel::error, 3, 8}, {DiagnosticLevel::error, 4, 17}}));
  const auto messages = parsed.diagnostics.text();
  EXPECT_NE(messages.find("unknown phase 'prefligt' (did you mean 'preflight'?); it is one of "
                          "preflight, functional"),
            std::string::npos)
      << messages;
  EXPECT_NE(messages.find("it is one of fail-fast, continue-after-failure"), std::string::npos)
      << messages;
}

TEST(IntegrationTests, IdsAndNamesTheRunnerRefusesAreErrors) {
  const auto empty_id = parse_entry("name: a\nid: ''\ncommand: x\n");
  EXPECT_EQ(positions(empty_id.diagnostics), (std::vector<At>{{DiagnosticLevel::error, 2, 5}}));
  const auto two_line_id = parse_entry("name: a\nid: \"a\\nb\"\ncommand: x\n");
  EXPECT_EQ(positions(two_line_id.diagnostics), (std::vector<At>{{DiagnosticLevel::error, 2, 5}}));
  const auto two_line_name = parse_entry("name: \"a\\rb\"\ncommand: x\n");
  EXPECT_EQ(positions(two_line_name.diagnostics),
            (std::vector<At>{{DiagnosticLevel::error, 1, 7}}));
}

TEST(IntegrationTests, UnknownKeysAreWarningsUnlessMisspelt) {
  const auto grown = parse_entry("name: a\ncommand: x\ntimeout_minutes: 5\n");
  ASSERT_TRUE(grown.entry);
  EXPECT_EQ(positions(grown.diagnostics), (std::vector<At>{{DiagnosticLevel::warning, 3, 1}}));
  const auto misspelt = parse_entry("name: a\ncommand: x\ncomand: y\n");
  EXPECT_EQ(positions(misspelt.diagnostics), (std::vector<At>{{DiagnosticLevel::error, 3, 1}}));
}

const char* const k_config =
    "integration_environment:\n"
    "  CI: 'true'\n"
    "integration_tests:\n"
    "  - name: Check device availability\n"
    "    command: xpu-smi\n"
    "  - id: ops\n"
    "    name: Run operator tests\n"
    "    command: pytest tests/ops\n";

// The entry found by `selector` in a config file, with what finding it reported.
struct Found {
  Diagnostics diagnostics;
  std::optional<IntegrationEntry> entry;
};

Found find_in(const std::filesystem::path& config, const std::string& selector) {
  Found found;
  ParseContext ctx("contract.yaml", found.diagnostics);
  const auto contract = load_yaml_text("test: '" + selector + "'\n", ctx);
  found.entry = find_integration_entry(config, selector, (*contract)["test"], ctx);
  return found;
}

TEST(IntegrationTests, AnEntryIsFoundByItsIdNameOrCheckIdWithTheRunnersEnvironment) {
  const testing::TempDir dir;
  const auto config = dir.write("ci.yaml", k_config);
  for (const char* selector : {"ops", "Run operator tests"}) {
    const auto found = find_in(config, selector);
    ASSERT_TRUE(found.entry) << selector << ": " << found.diagnostics.text();
    EXPECT_EQ(found.entry->id, "ops");
    EXPECT_EQ(found.entry->command, "pytest tests/ops");
    EXPECT_EQ(found.entry->runner_environment, (NamedList<std::string>{{"CI", "true"}}));
  }
  const auto by_slug = find_in(config, "check-device-availability");
  ASSERT_TRUE(by_slug.entry) << by_slug.diagnostics.text();
  EXPECT_EQ(by_slug.entry->name, "Check device availability");
  EXPECT_FALSE(by_slug.diagnostics.has_errors());
}

TEST(IntegrationTests, AnUnknownSelectorIsReportedAtItWithTheNamesThatExist) {
  const testing::TempDir dir;
  const auto config = dir.write("ci.yaml", k_config);
  const auto found = find_in(config, "opps");
  EXPECT_FALSE(found.entry);
  EXPECT_EQ(positions(found.diagnostics), (std::vector<At>{{DiagnosticLevel::error, 1, 7}}));
  EXPECT_EQ(found.diagnostics.sorted()[0].where.file, "contract.yaml");
  EXPECT_NE(found.diagnostics.text().find("no integration test with id or name 'opps' in " +
                                          config.string() +
                                          " (did you mean 'ops'?); it has 'Check device "
                                          "availability', 'ops', 'Run operator tests'"),
            std::string::npos)
      << found.diagnostics.text();
}

TEST(IntegrationTests, AConfigThatCannotBeLoadedOrHasNoListIsAnErrorAtTheSelector) {
  const testing::TempDir dir;
  const auto missing = find_in(dir.path() / "absent.yaml", "ops");
  EXPECT_FALSE(missing.entry);
  EXPECT_TRUE(missing.diagnostics.has_errors());
  EXPECT_NE(missing.diagnostics.text().find("contract.yaml:1:7: error: cannot load integration "
                                            "test 'ops' from"),
            std::string::npos)
      << missing.diagnostics.text();

  const auto no_list = find_in(dir.write("other.yaml", "integration_tests: {a: 1}\n"), "ops");
  EXPECT_FALSE(no_list.entry);
  EXPECT_NE(no_list.diagnostics.text().find("has no 'integration_tests' list"), std::string::npos)
      << no_list.diagnostics.text();
}

// Problems of the config's entry are the config's, reported against its file.
TEST(IntegrationTests, ProblemsOfTheFoundEntryAreReportedAgainstTheConfig) {
  const testing::TempDir dir;
  const auto config =
      dir.write("ci.yaml", "integration_tests:\n  - id: ops\n    command: x\n    phase: later\n");
  const auto found = find_in(config, "ops");
  EXPECT_FALSE(found.entry) << "no name: no entry";
  ASSERT_EQ(found.diagnostics.error_count(), 2U) << found.diagnostics.text();
  for (const auto& diagnostic : found.diagnostics.all()) {
    EXPECT_EQ(diagnostic.where.file, config.string()) << diagnostic.to_string();
  }
}

// An empty selector names no entry: an entry without an id has id "", and
// `test: ''` must not pick the first such entry without a word.
TEST(IntegrationTests, AnEmptySelectorNamesNoEntry) {
  const testing::TempDir dir;
  const auto config = dir.write("ci.yaml", k_config);
  const auto found = find_in(config, "");
  EXPECT_FALSE(found.entry) << "selected: " << (found.entry ? found.entry->name : "");
  EXPECT_TRUE(found.diagnostics.has_errors());
}

}  // namespace
}  // namespace envcontract::contracts
