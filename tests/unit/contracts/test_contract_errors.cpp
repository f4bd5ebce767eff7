// Every class of contract error, reported as file:line:column at the exact
// spot, all of them in one pass.
#include <gtest/gtest.h>

#include "contracts/contract_loader.hpp"
#include "tests/support/contract_text.hpp"
#include "tests/support/hostile_yaml.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::contracts {
namespace {

using testing::joined;
using testing::load_text;
using testing::messages;

TEST(ContractErrors, YamlSyntaxErrorHasPosition) {
  const auto result = load_text("schema_version: 1\nchecks: [\n  {kind: tools, on_path: [a]\n");
  EXPECT_FALSE(result.contract);
  ASSERT_EQ(messages(result).size(), 1U) << joined(result);
  EXPECT_EQ(messages(result)[0],
            "contract.yaml:4:1: error: YAML syntax error: end of map flow not found");
}

TEST(ContractErrors, UnknownKeysSuggestTheNearestKnownKey) {
  const auto result = load_text(R"(schema_version: 1
dispaly_name: Kunlunxin
checks:
  - kind: triton
    provder: flagtree
    backends: [xpu]
)");
  EXPECT_EQ(messages(result),
            (std::vector<std::string>{
                "contract.yaml:2:1: error: unknown key 'dispaly_name' in the contract (did you "
                "mean 'display_name'?)",
                "contract.yaml:5:5: error: unknown key 'provder' in 'triton' check (did you mean "
                "'provider'?)"}));
}

TEST(ContractErrors, UnknownKeyWithNoNearMissHasNoSuggestion) {
  const auto result = load_text(
      "schema_version: 1\nchecks:\n  - kind: tools\n    on_path: [a]\n"
      "    colour: blue\n");
  EXPECT_EQ(messages(result),
            (std::vector<std::string>{"contract.yaml:5:5: error: unknown key 'colour' in 'tools' "
                                      "check"}));
}

TEST(ContractErrors, UnknownKindSuggestsAKind) {
  const auto result =
      load_text("schema_version: 1\nchecks:\n  - kind: tirton\n    backends: [x]\n");
  EXPECT_EQ(messages(result),
            (std::vector<std::string>{
                "contract.yaml:3:11: error: unknown check kind 'tirton' (did you mean 'triton'?); "
                "see docs/contracts.md for the kinds"}));
}

TEST(ContractErrors, DuplicateKeysAreRejectedAtTheSecondOccurrence) {
  const auto result = load_text(R"(schema_version: 1
name: kunlunxin
checks:
  - kind: torch
    base: "2.10.0"
    base: "2.9.0"
name: other
)");
  EXPECT_EQ(messages(result),
            (std::vector<std::string>{
                "contract.yaml:6:5: error: duplicate key 'base' (first defined at line 5)",
                "contract.yaml:7:1: error: duplicate key 'name' (first defined at line 2)"}));
}

TEST(ContractErrors, DuplicateCheckIdsAreRejected) {
  const auto result = load_text(R"(schema_version: 1
checks:
  - {id: smi, kind: tools, on_path: [a]}
  - {id: smi, kind: tools, on_path: [b]}
)");
  EXPECT_EQ(messages(result),
            (std::vector<std::string>{"contract.yaml:4:10: error: duplicate check id 'smi' (first "
                                      "defined at contract.yaml:3:10); ids must be unique"}));
}

TEST(ContractErrors, WrongTypesNameWhatWasExpectedAndFound) {
  const auto result = load_text(R"(schema_version: 1
checks:
  - kind: imports
    modules: {torch: 1}
  - kind: command
    run: [echo, hi]
  - kind: imports
    modules: [torch]
    ordered: maybe
  - kind: tools
    on_path: [[nested]]
targets: nope
)");
  EXPECT_EQ(messages(result),
            (std::vector<std::string>{
                "contract.yaml:4:14: error: 'modules' of 'imports' check must be a list, got a "
                "mapping",
                "contract.yaml:6:10: error: 'run' of 'command' check must be a string, got a list",
                "contract.yaml:9:14: error: 'ordered' of 'imports' check must be true or false, "
                "got 'maybe'",
                "contract.yaml:11:15: error: each item of 'on_path' of 'tools' check must be a "
                "string, got a list",
                "contract.yaml:12:10: error: 'targets' must be a list of {name, image}, got "
                "'nope'"}));
}

TEST(ContractErrors, ImpossibleValuesAreRejected) {
  const auto result = load_text(R"(schema_version: 1
image: registry.example/img@sha256:1234
envs: {require: some}
checks:
  - kind: devices
    expression: torch_fl.flagos.device_count()
    count: ">= -1"
  - kind: smoke
    code: "pass"
    timeout: 0s
  - kind: modules
    present: [torch_fl]
    absent: [torch_fl]
)");
  EXPECT_EQ(messages(result),
            (std::vector<std::string>{
                "contract.yaml:2:8: error: 'image': a sha256 image digest has 64 hex digits, "
                "'registry.example/img@sha256:1234' has 4",
                "contract.yaml:3:17: error: 'envs' must say which envs must comply: any, all, or "
                "a list of env names, got 'some'",
                "contract.yaml:7:12: error: 'count' of 'devices' check: a count cannot be "
                "negative: '>= -1'",
                "contract.yaml:10:14: error: 'timeout' of 'smoke' check: a duration must be "
                "positive, got '0s'",
                "contract.yaml:13:13: error: module 'torch_fl' is both present and absent in "
                "'modules' check"}));
}

TEST(ContractErrors, MissingRequiredKeysPointAtTheirMapping) {
  const auto result = load_text(
      "schema_version: 1\nchecks:\n  - id: nokind\n  - kind: linkage\n"
      "    must_not_need: [libtorch_cuda.so]\n");
  EXPECT_EQ(messages(result),
            (std::vector<std::string>{
                "contract.yaml:3:5: error: check 'nokind' is missing the required key 'kind'",
                "contract.yaml:4:5: error: 'linkage' check is missing the required key "
                "'library'"}));
}

TEST(ContractErrors, AllErrorsOfAFileComeInOnePassInFileOrder) {
  const auto result = load_text(R"(schema_version: 2
checks:
  - kind: python
    version: "three"
  - kind: glibc
    min_version: x
  - kind: tool
    on_path: [a]
extra: 1
)");
  const auto found = result.diagnostics.sorted();
  ASSERT_EQ(found.size(), 5U) << joined(result);
  const std::vector<std::pair<int, int>> positions = {{1, 17}, {4, 14}, {6, 18}, {7, 11}, {9, 1}};
  for (std::size_t i = 0; i < found.size(); ++i) {
    EXPECT_EQ(found[i].level, contracts::DiagnosticLevel::error) << i;
    EXPECT_EQ(found[i].where.file, "contract.yaml") << i;
    EXPECT_EQ(std::pair(found[i].where.line, found[i].where.column), positions[i]) << i;
  }
  EXPECT_TRUE(found[0].message.starts_with("unsupported schema_version")) << found[0].message;
  EXPECT_TRUE(found[3].message.starts_with("unknown check kind 'tool'")) << found[3].message;
  EXPECT_TRUE(found[4].message.starts_with("unknown key 'extra'")) << found[4].message;
}

TEST(ContractErrors, NotAMappingAndEmptyContracts) {
  EXPECT_EQ(messages(load_text("- a\n- b\n")),
            (std::vector<std::string>{
                "contract.yaml:1:1: error: the contract must be a mapping of keys to values, got "
                "a list"}));
  EXPECT_EQ(messages(load_text("name: nothing\n")),
            (std::vector<std::string>{
                "contract.yaml:1:1: error: the contract checks nothing: add 'checks:' (see "
                "docs/contracts.md), an 'environment_check:' section, or a target image"}));
  EXPECT_EQ(messages(load_text("")).size(), 1U);
}

TEST(ContractErrors, UnreadableFilesAndDirectoriesAreClearErrors) {
  testing::TempDir dir;
  const auto missing = load_contract_file(dir.path() / "missing.yaml");
  ASSERT_EQ(messages(missing).size(), 1U);
  EXPECT_NE(messages(missing)[0].find("cannot read the contract"), std::string::npos);
  const auto directory = load_contract_file(dir.path());
  ASSERT_EQ(messages(directory).size(), 1U);
  EXPECT_NE(messages(directory)[0].find("is a directory"), std::string::npos);
}

TEST(ContractErrors, NullAndComplexKeysInAPlatformConfig) {
  // Found by fuzzing: a key-less line in a platform config crashed the loader.
  const auto result = load_text("setup_script: s.sh\n: is drift\n? [a, b]\n: c\n");
  EXPECT_FALSE(result.contract);
  EXPECT_GE(result.diagnostics.error_count(), 1U);
}

TEST(ContractErrors, NonUtf8AndBinaryInputDoNotCrash) {
  const std::string binary("\x00\xff\xfe\x01garbage: [\x80\x81", 17);
  const auto result = load_text(binary);
  EXPECT_FALSE(result.contract);
  EXPECT_GE(result.diagnostics.error_count(), 1U);
}

// yaml-cpp makes an alias the very node its anchor names, so this list
// holds itself: the first walk of the tree (duplicate keys) overflowed the
// stack, and `envcontractd validate` died of SIGSEGV.
TEST(ContractErrors, AnAliasCycleIsRefusedAtTheAlias) {
  const auto result =
      load_text("schema_version: 1\nchecks: &checks\n  - kind: tools\n    on_path: *checks\n");
  EXPECT_FALSE(result.contract);
  EXPECT_EQ(messages(result),
            (std::vector<std::string>{
                "contract.yaml:4:14: error: the alias *checks is inside the node it names (an "
                "alias cycle), which no reading of the document ends; write the value out instead "
                "of the alias"}));
}

// Loading it took a millisecond; walking it would have taken hours.
TEST(ContractErrors, ABillionLaughsIsRefusedAtTheAliasPastTheBound) {
  const auto result =
      load_text("schema_version: 1\n" + testing::billion_laughs(testing::LaughsLayout::mapping));
  EXPECT_FALSE(result.contract);
  EXPECT_EQ(messages(result),
            (std::vector<std::string>{
                "contract.yaml:6:63: error: the alias *lol3 expands the YAML beyond 100000 nodes "
                "(a billion-laughs document: aliases of lists of aliases); write the values out, "
                "or alias fewer and smaller nodes"}));
}

TEST(ContractErrors, AliasesWithinTheBoundStillLoad) {
  const auto result = load_text(
      "schema_version: 1\nchecks:\n  - kind: tools\n    on_path: &tools [bash, git]\n"
      "  - id: tools-again\n    kind: tools\n    on_path: *tools\n");
  ASSERT_TRUE(result.contract) << joined(result);
  EXPECT_EQ(result.contract->checks.size(), 2U);
}

}  // namespace
}  // namespace envcontract::contracts
