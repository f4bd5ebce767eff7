// contracts/yaml_document.cpp: YAML documents read with positions for every
// message, refused when aliases or nesting would make a walk unsafe, and the
// small lookups parsers share.
#include "contracts/yaml_document.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/yaml_aliases.hpp"
#include "tests/support/contract_text.hpp"
#include "tests/support/hostile_yaml.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::contracts {
namespace {

using At = testing::DiagnosticAt;

constexpr auto error = DiagnosticLevel::error;

std::vector<At> where(const Diagnostics& diagnostics) {
  return testing::diagnostics_at(diagnostics);
}

struct Loaded {
  Diagnostics diagnostics;
  std::optional<YAML::Node> root;
};

Loaded load(const std::string& text) {
  Loaded loaded;
  ParseContext ctx("doc.yaml", loaded.diagnostics);
  loaded.root = load_yaml_text(text, ctx);
  return loaded;
}

// `text` (ASCII) as Windows editors save "Unicode": UTF-16LE after its byte order mark.
std::string utf16le(const std::string& text) {
  std::string encoded = "\xFF\xFE";
  for (const char c : text) {
    encoded += c;
    encoded += '\0';
  }
  return encoded;
}

TEST(YamlDocument, AValidDocumentLoadsWithoutDiagnostics) {
  const auto loaded = load("name: cuda\nchecks:\n  - kind: tools\n    on_path: [bash]\n");
  ASSERT_TRUE(loaded.root) << loaded.diagnostics.text();
  EXPECT_TRUE(loaded.diagnostics.all().empty()) << loaded.diagnostics.text();
  EXPECT_TRUE(loaded.root->IsMap());
  EXPECT_EQ(scalar_child(*loaded.root, "name"), "cuda");
  const auto checks = find_child(*loaded.root, "checks");
  ASSERT_TRUE(checks);
  EXPECT_EQ(checks->size(), 1U);
}

// Callers say "empty" in their own words (a containers file, the agent
// config); the loader only says the text is no YAML.
TEST(YamlDocument, EmptyAndCommentOnlyTextIsANullDocumentWithoutDiagnostics) {
  for (const std::string text : {"", "\n\n", "# nothing here yet\n", "---\n"}) {
    const auto loaded = load(text);
    ASSERT_TRUE(loaded.root) << text;
    EXPECT_TRUE(loaded.root->IsNull()) << text;
    EXPECT_TRUE(loaded.diagnostics.all().empty()) << text << loaded.diagnostics.text();
  }
}

TEST(YamlDocument, ASyntaxErrorIsOneErrorAtItsPositionAndNoDocument) {
  const auto loaded = load("name: cuda\nchecks: [\n  {kind: tools, on_path: [a]\n");
  EXPECT_FALSE(loaded.root);
  EXPECT_EQ(where(loaded.diagnostics), (std::vector<At>{{error, 4, 1}}));
  EXPECT_EQ(loaded.diagnostics.all()[0].where.file, "doc.yaml");
}

// A tab is the most common cause of a YAML error nobody can see.
TEST(YamlDocument, ATabInTheIndentationIsNamedAtItsLine) {
  const auto loaded = load("checks:\n\t- kind: tools\n");
  EXPECT_FALSE(loaded.root);
  ASSERT_EQ(where(loaded.diagnostics), (std::vector<At>{{error, 2, 2}}));
  EXPECT_NE(loaded.diagnostics.all()[0].message.find("line 2 is indented with a tab"),
            std::string::npos)
      << loaded.diagnostics.text();
  // The error may surface on the line after the tab: the hint still names it.
  const auto nested = load("a:\n  b: 1\n\tc: 2\n");
  ASSERT_EQ(nested.diagnostics.all().size(), 1U);
  EXPECT_NE(nested.diagnostics.all()[0].message.find("line 3 is indented with a tab"),
            std::string::npos)
      << nested.diagnostics.text();
}

// YAML allows a tab as separation after the colon: no error to invent there.
TEST(YamlDocument, ATabAfterAKeyIsNoError) {
  const auto loaded = load("name:\tcuda\n");
  ASSERT_TRUE(loaded.root) << loaded.diagnostics.text();
  EXPECT_EQ(scalar_child(*loaded.root, "name"), "cuda");
}

TEST(YamlDocument, AListEntryWithoutItsDashIsNamedInTheHint) {
  const auto loaded = load("checks:\n  - kind: tools\n  kind: imports\n");
  EXPECT_FALSE(loaded.root);
  ASSERT_EQ(where(loaded.diagnostics), (std::vector<At>{{error, 3, 3}}));
  EXPECT_NE(loaded.diagnostics.all()[0].message.find("'- ' missing at the start of line 3"),
            std::string::npos)
      << loaded.diagnostics.text();
}

TEST(YamlDocument, AKeyIndentedUnlikeItsNeighbourIsNamedInTheHint) {
  const auto loaded = load("name: cuda\n  platform: nvidia\n");
  EXPECT_FALSE(loaded.root);
  ASSERT_EQ(where(loaded.diagnostics).size(), 1U);
  EXPECT_EQ(where(loaded.diagnostics)[0].line, 2);
  EXPECT_NE(loaded.diagnostics.all()[0].message.find("line 2 is indented by 2 spaces"),
            std::string::npos)
      << loaded.diagnostics.text();
}

// Files written on Windows: the same positions and the same hint.
TEST(YamlDocument, CrlfLineEndsGiveTheSamePositionsAndHints) {
  const auto unix_ends = load("name: cuda\n  platform: nvidia\n");
  const auto windows_ends = load("name: cuda\r\n  platform: nvidia\r\n");
  EXPECT_FALSE(windows_ends.root);
  EXPECT_EQ(where(windows_ends.diagnostics), where(unix_ends.diagnostics));
  EXPECT_EQ(windows_ends.diagnostics.text(), unix_ends.diagnostics.text());
}

// Editors on Windows start files with a byte order mark; it is not part of
// the first key, nor a column of the first line.
TEST(YamlDocument, AUtf8ByteOrderMarkIsNotPartOfTheFirstKey) {
  Diagnostics diagnostics;
  ParseContext ctx("doc.yaml", diagnostics);
  const auto root = load_yaml_text("\xEF\xBB\xBFname: cuda\nname: rocm\n", ctx);
  ASSERT_TRUE(root);
  const auto name = find_child(*root, "name");
  ASSERT_TRUE(name);
  EXPECT_EQ(name->Scalar(), "cuda");
  EXPECT_EQ(ctx.locate(*name).line, 1);
  EXPECT_EQ(ctx.locate(*name).column, 7);
  EXPECT_EQ(where(diagnostics), (std::vector<At>{{error, 2, 1}}));
}

TEST(YamlDocument, AUtf16FileWithAByteOrderMarkLoadsAsItsText) {
  const auto loaded = load(utf16le("name: cuda\nname: rocm\n"));
  ASSERT_TRUE(loaded.root) << loaded.diagnostics.text();
  EXPECT_EQ(scalar_child(*loaded.root, "name"), "cuda");
  EXPECT_EQ(where(loaded.diagnostics), (std::vector<At>{{error, 2, 1}}));
}

// Latin-1 from an old editor: kept as the bytes it is (JSON output makes
// them U+FFFD later), with positions unaffected.
TEST(YamlDocument, NonUtf8BytesLoadAsTheyAreWithPositionsIntact) {
  const auto loaded = load("description: caf\xE9\ndescription: th\xE9\n");
  ASSERT_TRUE(loaded.root) << loaded.diagnostics.text();
  EXPECT_EQ(scalar_child(*loaded.root, "description"), "caf\xE9");
  EXPECT_EQ(where(loaded.diagnostics), (std::vector<At>{{error, 2, 1}}));
}

TEST(YamlDocument, BinaryInputIsASyntaxErrorNotACrash) {
  const auto garbage = load(std::string("\x00\xff\xfe\x01garbage: [\x80\x81", 17));
  EXPECT_FALSE(garbage.root);
  EXPECT_EQ(where(garbage.diagnostics).size(), 1U);
  EXPECT_EQ(garbage.diagnostics.error_count(), 1U);
}

// YAML allows no NUL byte, and yaml-cpp misreads the bytes around one
// ("a<NUL>b" loads as "a\b "): it is refused at its line and column, so the
// value judged is never other than the value written.
TEST(YamlDocument, ANulByteIsAnErrorNotSilentlyChangedText) {
  const auto loaded = load(std::string("name: a\0b\n", 10));
  EXPECT_TRUE(loaded.diagnostics.has_errors())
      << "loaded name as '" << (loaded.root ? scalar_child(*loaded.root, "name") : "") << "'";
}

// yaml-cpp keeps both pairs; `node[key]` would silently answer with one.
TEST(YamlDocument, DuplicateKeysAreErrorsAtTheSecondOccurrenceInEveryMapping) {
  const auto loaded = load(
      "name: cuda\n"
      "checks:\n"
      "  - kind: torch\n"
      "    base: '2.10.0'\n"
      "    base: '2.9.0'\n"
      "  - {kind: tools, kind: imports}\n"
      "\"name\": rocm\n");
  // Duplicates are not syntax errors: the document comes back so that the
  // rest of the file is checked in the same pass.
  ASSERT_TRUE(loaded.root);
  EXPECT_EQ(where(loaded.diagnostics),
            (std::vector<At>{{error, 5, 5}, {error, 6, 19}, {error, 7, 1}}));
  EXPECT_NE(loaded.diagnostics.sorted()[0].message.find("first defined at line 4"),
            std::string::npos);
  // Lookups answer with the first, as the message says.
  EXPECT_EQ(scalar_child(*loaded.root, "name"), "cuda");
}

// An alias is the very node its anchor names: a duplicate key in it is one
// mistake, reported once, not once per use.
TEST(YamlDocument, ADuplicateKeyInAnAliasedMappingIsReportedOnce) {
  const auto loaded = load(
      "defaults: &d {timeout: 5, timeout: 6}\n"
      "first: *d\n"
      "second: *d\n");
  ASSERT_TRUE(loaded.root);
  EXPECT_EQ(where(loaded.diagnostics), (std::vector<At>{{error, 1, 27}}))
      << loaded.diagnostics.text();
}

// yaml-cpp 0.7 knows no merge keys: `<<` stays an ordinary key holding the
// aliased mapping, so readers see (and reject) it instead of silently
// gaining keys; a second `<<` in one mapping is a duplicate like any other.
TEST(YamlDocument, MergeKeysAreOrdinaryKeysNotMergedMappings) {
  const auto loaded = load(
      "defaults: &defaults\n"
      "  timeout: 30\n"
      "check:\n"
      "  <<: *defaults\n"
      "  name: smi\n");
  ASSERT_TRUE(loaded.root) << loaded.diagnostics.text();
  EXPECT_TRUE(loaded.diagnostics.all().empty()) << loaded.diagnostics.text();
  const auto check = find_child(*loaded.root, "check");
  ASSERT_TRUE(check);
  EXPECT_FALSE(find_child(*check, "timeout"));
  const auto merged = find_child(*check, "<<");
  ASSERT_TRUE(merged);
  EXPECT_EQ(scalar_child(*merged, "timeout"), "30");

  const auto twice = load("a: &a {x: 1}\nb: &b {y: 2}\nc:\n  <<: *a\n  <<: *b\n");
  EXPECT_EQ(where(twice.diagnostics), (std::vector<At>{{error, 5, 3}}));
}

// A leading "---" and a closing "..." mark one document: nothing to report.
TEST(YamlDocument, ExplicitDocumentMarkersAroundOneDocumentLoad) {
  const auto loaded = load("---\nname: cuda\n...\n");
  ASSERT_TRUE(loaded.root) << loaded.diagnostics.text();
  EXPECT_TRUE(loaded.diagnostics.all().empty()) << loaded.diagnostics.text();
  EXPECT_EQ(scalar_child(*loaded.root, "name"), "cuda");
}

// A file holds one document: what follows a second "---" would never be
// judged, so it is an error at that document.
TEST(YamlDocument, ASecondDocumentIsReportedNotSilentlyDropped) {
  const auto loaded = load(
      "name: cuda\n"
      "---\n"
      "checks:\n"
      "  - kind: tools\n"
      "    on_path: [nvidia-smi]\n");
  EXPECT_FALSE(loaded.diagnostics.all().empty())
      << "the checks of the second document vanished without a diagnostic";
}

// A syntax error in a second document is reported, and no document comes
// back, as for one in the first.
// yaml-cpp 0.7's LoadAll never ends on some inputs (a lone ",", found by
// the fuzzers): the second document is looked for without it, and these
// load (or fail) at once, as they did before documents were counted.
TEST(YamlDocument, InputsThatLoadAllLoopsOnEndAtOnce) {
  for (const std::string& text : {std::string(","), std::string(",  - kind* ei: \n=a")}) {
    const auto loaded = load(text);
    EXPECT_LE(loaded.diagnostics.error_count(), 1U) << text;
  }
}

TEST(YamlDocument, ASyntaxErrorInASecondDocumentIsReported) {
  const auto loaded = load("name: cuda\n---\nchecks: [\n");
  EXPECT_TRUE(loaded.diagnostics.has_errors());
  EXPECT_FALSE(loaded.root);
}

// The cycle is refused before any walk: the duplicate-key walk itself
// would otherwise overflow the stack on it.
TEST(YamlDocument, AnAliasCycleIsRefusedAtTheAliasBeforeAnyWalk) {
  const auto loaded = load("check: &c {name: a, name: b, inner: *c}\n");
  EXPECT_FALSE(loaded.root);
  EXPECT_EQ(where(loaded.diagnostics), (std::vector<At>{{error, 1, 37}}));
}

TEST(YamlDocument, ABillionLaughsIsRefusedWhereTheAliasBoundIsCrossed) {
  for (const auto& text :
       {testing::billion_laughs(testing::LaughsLayout::mapping),
        "laughs:\n" + testing::billion_laughs(testing::LaughsLayout::sequence)}) {
    const auto problem = common::find_yaml_alias_problem(text);
    ASSERT_TRUE(problem);
    const auto loaded = load(text);
    EXPECT_FALSE(loaded.root);
    // Exactly the alias the bound names, and nothing from a walk after it.
    EXPECT_EQ(where(loaded.diagnostics),
              (std::vector<At>{{error, problem->line, problem->column}}));
    EXPECT_EQ(loaded.diagnostics.all()[0].where.file, "doc.yaml");
    EXPECT_EQ(loaded.diagnostics.all()[0].message, problem->message);
  }
}

TEST(YamlDocument, AliasesWithinTheBoundLoadAndReadLikeTheirAnchor) {
  const auto loaded = load("tools: &t [bash, git]\nagain: *t\n");
  ASSERT_TRUE(loaded.root) << loaded.diagnostics.text();
  EXPECT_TRUE(loaded.diagnostics.all().empty());
  EXPECT_EQ(yaml_to_json(*find_child(*loaded.root, "again")),
            nlohmann::ordered_json::parse(R"(["bash", "git"])"));
}

// The alias bound counts what aliases add, not what is written out: a
// large plain document is no attack.
TEST(YamlDocument, AManyNodeDocumentWithoutAliasesLoads) {
  const std::size_t items = common::k_max_nodes_through_aliases + 50'000;
  std::string text = "items:\n";
  for (std::size_t i = 0; i < items; ++i) {
    text += "  - x\n";
  }
  const auto loaded = load(text);
  ASSERT_TRUE(loaded.root) << loaded.diagnostics.text().substr(0, 500);
  EXPECT_TRUE(loaded.diagnostics.all().empty());
  EXPECT_EQ(find_child(*loaded.root, "items")->size(), items);
}

TEST(YamlDocument, NestingTooDeepIsAnErrorNotAStackOverflow) {
  const auto flow = load(std::string(100'000, '[') + std::string(100'000, ']'));
  EXPECT_FALSE(flow.root);
  EXPECT_EQ(flow.diagnostics.error_count(), 1U);
  // In block style the error is on a line of the nesting, not at 0:0.
  std::string block;
  for (int level = 0; level < 1'000; ++level) {
    block += std::string(static_cast<std::size_t>(level), ' ') + "k:\n";
  }
  const auto deep = load(block);
  EXPECT_FALSE(deep.root);
  ASSERT_EQ(deep.diagnostics.error_count(), 1U);
  EXPECT_GT(deep.diagnostics.all()[0].where.line, 1);
  EXPECT_LE(deep.diagnostics.all()[0].where.line, 1'000);
  // Nesting any real file has loads.
  const auto modest = load(std::string(100, '[') + std::string(100, ']'));
  EXPECT_TRUE(modest.root) << modest.diagnostics.text();
}

// yaml-cpp's depth guard says "bad file": the author is told the document
// nests too deep instead.
TEST(YamlDocument, NestingTooDeepSaysSo) {
  const auto loaded = load(std::string(1'000, '[') + std::string(1'000, ']'));
  ASSERT_EQ(loaded.diagnostics.all().size(), 1U);
  const auto& message = loaded.diagnostics.all()[0].message;
  EXPECT_TRUE(message.find("deep") != std::string::npos ||
              message.find("nest") != std::string::npos)
      << message;
}

TEST(YamlDocument, AFileReadsLikeItsTextWithPositions) {
  testing::TempDir dir;
  const std::string text = "name: cuda\nname: rocm\n";
  const auto path = dir.write("contract.yaml", text);
  Diagnostics from_file;
  ParseContext ctx(path.string(), from_file);
  const auto root = load_yaml_file(path, ctx);
  ASSERT_TRUE(root);
  EXPECT_EQ(scalar_child(*root, "name"), "cuda");
  EXPECT_EQ(where(from_file), where(load(text).diagnostics));
  EXPECT_EQ(from_file.all()[0].where.file, path.string());
}

TEST(YamlDocument, AMissingFileIsAnErrorWithoutAPosition) {
  testing::TempDir dir;
  Diagnostics diagnostics;
  ParseContext ctx("agent.yaml", diagnostics);
  EXPECT_FALSE(load_yaml_file(dir.path() / "agent.yaml", ctx));
  ASSERT_EQ(where(diagnostics), (std::vector<At>{{error, 0, 0}}));
  EXPECT_EQ(diagnostics.all()[0].where.file, "agent.yaml");
}

// An ifstream opens a directory and reads nothing: a directory is an error,
// never an empty document (`serve --config /etc/envcontract` would run on the
// default config as if the file were empty).
TEST(YamlDocument, ADirectoryIsAnErrorNotAnEmptyDocument) {
  testing::TempDir dir;
  Diagnostics diagnostics;
  ParseContext ctx(dir.path().string(), diagnostics);
  const auto root = load_yaml_file(dir.path(), ctx);
  EXPECT_FALSE(root) << "a directory read as a " << (root ? describe_node_type(*root) : "");
  EXPECT_EQ(where(diagnostics), (std::vector<At>{{error, 0, 0}}));
}

TEST(YamlDocument, FindChildAnswersOnlyForAScalarKeyOfAMapping) {
  const auto loaded = load("name: cuda\nName: other\n1: one\n? [name]\n: list-key\nempty:\n");
  ASSERT_TRUE(loaded.root) << loaded.diagnostics.text();
  const auto& root = *loaded.root;
  ASSERT_TRUE(find_child(root, "name"));
  EXPECT_EQ(find_child(root, "name")->Scalar(), "cuda");  // keys match exactly, case included
  EXPECT_EQ(find_child(root, "1")->Scalar(), "one");      // a key is its text
  EXPECT_FALSE(find_child(root, "[name]"));               // a list as a key is no name
  EXPECT_FALSE(find_child(root, "missing"));
  ASSERT_TRUE(find_child(root, "empty"));  // present, null
  EXPECT_TRUE(find_child(root, "empty")->IsNull());
  // Not a mapping: no answer rather than a node that throws when used.
  EXPECT_FALSE(find_child(YAML::Load("[name]"), "name"));
  EXPECT_FALSE(find_child(YAML::Load("name"), "name"));
  EXPECT_FALSE(find_child(YAML::Node(), "name"));
}

TEST(YamlDocument, ScalarChildIsEmptyForAnythingButAScalar) {
  const auto loaded = load("name: cuda\nquoted: '7'\nlist: [a]\nmap: {a: b}\nnothing:\n");
  ASSERT_TRUE(loaded.root) << loaded.diagnostics.text();
  EXPECT_EQ(scalar_child(*loaded.root, "name"), "cuda");
  EXPECT_EQ(scalar_child(*loaded.root, "quoted"), "7");
  EXPECT_EQ(scalar_child(*loaded.root, "list"), "");
  EXPECT_EQ(scalar_child(*loaded.root, "map"), "");
  EXPECT_EQ(scalar_child(*loaded.root, "nothing"), "");
  EXPECT_EQ(scalar_child(*loaded.root, "missing"), "");
  EXPECT_EQ(scalar_child(YAML::Load("[a]"), "a"), "");
}

// Kept keys keep their meaning: plain integers, true/false and null become
// JSON's; anything quoted, and YAML 1.1's words, stay the text written.
TEST(YamlDocument, YamlToJsonTypesOnlyPlainIntegersBooleansAndNull) {
  const auto loaded = load(
      "count: 7\n"
      "negative: -3\n"
      "on: true\n"
      "off: false\n"
      "nothing: null\n"
      "tilde: ~\n"
      "empty:\n"
      "quoted_number: \"7\"\n"
      "quoted_bool: 'true'\n"
      "capital: True\n"
      "yes_word: yes\n"
      "decimal: 1.5\n"
      "too_big: 99999999999999999999\n"
      "list: [1, two, {three: 3}]\n");
  ASSERT_TRUE(loaded.root) << loaded.diagnostics.text();
  const auto expected = nlohmann::ordered_json::parse(R"({
    "count": 7, "negative": -3, "on": true, "off": false,
    "nothing": null, "tilde": null, "empty": null,
    "quoted_number": "7", "quoted_bool": "true", "capital": "True", "yes_word": "yes",
    "decimal": "1.5", "too_big": "99999999999999999999",
    "list": [1, "two", {"three": 3}]
  })");
  // ordered_json compares keys in order: file order is kept.
  EXPECT_EQ(yaml_to_json(*loaded.root), expected);
}

// The words of "expected X, got Y" messages. For a scalar the value itself
// is named (the messages rely on it; the header's "a scalar" is stale).
TEST(YamlDocument, DescribeNodeTypeNamesWhatWasFound) {
  EXPECT_EQ(describe_node_type(YAML::Load("{a: b}")), "a mapping");
  EXPECT_EQ(describe_node_type(YAML::Load("[a]")), "a list");
  EXPECT_EQ(describe_node_type(YAML::Load("~")), "null");
  EXPECT_EQ(describe_node_type(YAML::Load("maybe")), "'maybe'");
}

TEST(YamlDocument, PositionsAreOneBasedAndMessagesKeepTheirLevel) {
  Diagnostics diagnostics;
  ParseContext ctx("doc.yaml", diagnostics);
  const auto root = load_yaml_text("name: cuda\nchecks:\n  - kind: tools\n", ctx);
  ASSERT_TRUE(root);
  const auto kind = find_child((*find_child(*root, "checks"))[0], "kind");
  ASSERT_TRUE(kind);
  const auto location = ctx.locate(*kind);
  EXPECT_EQ(location.file, "doc.yaml");
  EXPECT_EQ(location.line, 3);
  EXPECT_EQ(location.column, 11);
  ctx.error(*kind, "e");
  ctx.warning(*find_child(*root, "name"), "w");
  ctx.note(*root, "n");
  EXPECT_EQ(where(diagnostics),
            (std::vector<At>{
                {DiagnosticLevel::note, 1, 1}, {DiagnosticLevel::warning, 1, 7}, {error, 3, 11}}));
  EXPECT_EQ(diagnostics.error_count(), 1U);
}

// Nodes built in code (translated forms) have no position of their own:
// messages about them point at the section they came from, and only while
// it is being read.
TEST(YamlDocument, SynthesisedNodesUseTheFallbackOfTheInnermostScope) {
  Diagnostics diagnostics;
  ParseContext ctx("doc.yaml", diagnostics);
  const auto root = load_yaml_text("outer:\n  inner: x\n", ctx);
  ASSERT_TRUE(root);
  const YAML::Node synthesised("made in code");
  EXPECT_EQ(ctx.locate(synthesised).line, 0);  // no position and no fallback
  EXPECT_EQ(ctx.locate(synthesised).file, "doc.yaml");
  const auto outer = *find_child(*root, "outer");
  const auto inner = *find_child(outer, "inner");
  {
    FallbackScope outer_scope(ctx, outer.Mark());
    EXPECT_EQ(ctx.locate(synthesised).line, 2);
    {
      FallbackScope inner_scope(ctx, inner.Mark());
      ctx.error(synthesised, "from the inner section");
    }
    ctx.error(synthesised, "from the outer section again");
    // A node with a position of its own keeps it.
    EXPECT_EQ(ctx.locate(inner).column, 10);
  }
  EXPECT_EQ(ctx.locate(synthesised).line, 0);
  EXPECT_EQ(where(diagnostics), (std::vector<At>{{error, 2, 3}, {error, 2, 10}}));
}

}  // namespace
}  // namespace envcontract::contracts
