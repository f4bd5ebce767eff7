// contracts/mapping_reader.cpp: typed reads of a YAML mapping's keys, each
// wrong value reported at its own line and column, unknown keys with a
// "did you mean", all of a mapping's errors in one pass.
#include "contracts/mapping_reader.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "tests/support/contract_text.hpp"

namespace envcontract::contracts {
namespace {

using At = testing::DiagnosticAt;

constexpr auto error = DiagnosticLevel::error;
constexpr auto warning = DiagnosticLevel::warning;

// A config loaded from text, and every diagnostic reading it produced.
class Document {
 public:
  explicit Document(const std::string& text) : m_ctx("config.yaml", m_diagnostics) {
    const auto root = load_yaml_text(text, m_ctx);
    EXPECT_TRUE(root) << m_diagnostics.text();
    m_root = root.value_or(YAML::Node());
  }
  Document(const Document&) = delete;
  Document& operator=(const Document&) = delete;

  const YAML::Node& root() const { return m_root; }
  // The value of a top-level key the test wrote.
  YAML::Node operator[](std::string_view key) const { return find_child(m_root, key).value(); }
  ParseContext& ctx() { return m_ctx; }
  const Diagnostics& diagnostics() const { return m_diagnostics; }
  std::string text() const { return m_diagnostics.text(); }

  std::vector<At> where() const {
    std::vector<At> found;
    for (const auto& diagnostic : m_diagnostics.sorted()) {
      found.push_back({diagnostic.level, diagnostic.where.line, diagnostic.where.column});
    }
    return found;
  }

 private:
  Diagnostics m_diagnostics;
  ParseContext m_ctx;
  YAML::Node m_root;
};

bool mentions(const Diagnostic& diagnostic, const std::string& words) {
  return diagnostic.message.find(words) != std::string::npos;
}

TEST(MappingReader, ReadsTypedValuesWithoutDiagnostics) {
  Document doc(
      "name: cuda\n"
      "timeout: 30\n"
      "strict: true\n"
      "lenient: false\n"
      "modules: [torch, triton]\n"
      "single: torch\n"
      "none: []\n");
  MappingReader reader(doc.root(), "the check", doc.ctx());
  EXPECT_TRUE(reader.is_mapping());
  EXPECT_EQ(reader.string("name", Need::required), "cuda");
  EXPECT_EQ(reader.integer("timeout", Need::required, 1, 3600), 30);
  EXPECT_EQ(reader.boolean("strict"), true);
  EXPECT_EQ(reader.boolean("lenient"), false);
  EXPECT_EQ(reader.string_list("modules"), (std::vector<std::string>{"torch", "triton"}));
  // One string where a list is expected is a list of one.
  EXPECT_EQ(reader.string_list("single"), (std::vector<std::string>{"torch"}));
  EXPECT_EQ(reader.string_list("none"), std::vector<std::string>{});
  reader.reject_unknown_keys();
  EXPECT_TRUE(doc.where().empty()) << doc.text();
}

// A list or scalar where a mapping belongs: one error where it is, then
// every read comes back empty without piling up more errors about it.
TEST(MappingReader, ANonMappingIsOneErrorAtItsPositionAndReadsAsEmpty) {
  Document doc("check:\n  - kind: tools\nother: tools\nnothing:\n");
  MappingReader list(doc["check"], "check 'smi'", doc.ctx());
  EXPECT_FALSE(list.is_mapping());
  EXPECT_FALSE(list.has("kind"));
  EXPECT_FALSE(list.get("kind", Need::required));
  EXPECT_FALSE(list.string("kind", Need::required));
  EXPECT_FALSE(list.integer("timeout", Need::required, 0, 10));
  EXPECT_FALSE(list.boolean("strict", Need::required));
  EXPECT_FALSE(list.string_list("modules", Need::required));
  list.reject_unknown_keys();
  EXPECT_TRUE(list.unknown_entries().empty());
  EXPECT_EQ(doc.where(), (std::vector<At>{{error, 2, 3}}));
  EXPECT_TRUE(mentions(doc.diagnostics().all()[0], "check 'smi'")) << doc.text();

  MappingReader scalar(doc["other"], "check 'other'", doc.ctx());
  MappingReader null(doc["nothing"], "check 'nothing'", doc.ctx());
  EXPECT_FALSE(scalar.is_mapping());
  EXPECT_FALSE(null.is_mapping());
  EXPECT_EQ(doc.diagnostics().error_count(), 3U) << doc.text();
  EXPECT_EQ(doc.where()[1], (At{error, 3, 8}));
}

TEST(MappingReader, AMissingRequiredKeyIsReportedAtItsMappingAndAnOptionalOneIsNot) {
  Document doc("checks:\n  - id: smi\n    kind: tools\n");
  MappingReader reader(doc["checks"][0], "check 'smi'", doc.ctx());
  EXPECT_FALSE(reader.string("description"));
  EXPECT_FALSE(reader.integer("timeout", Need::optional, 1, 60));
  EXPECT_FALSE(reader.boolean("strict"));
  EXPECT_FALSE(reader.string_list("on_path"));
  EXPECT_FALSE(reader.get("stage"));
  EXPECT_TRUE(doc.where().empty()) << doc.text();

  EXPECT_FALSE(reader.string_list("on_path", Need::required));
  EXPECT_FALSE(reader.integer("count", Need::required, 0, 8));
  EXPECT_FALSE(reader.boolean("strict", Need::required));
  EXPECT_FALSE(reader.string("library", Need::required));
  // The mapping starts at its first key, after the "- ".
  EXPECT_EQ(doc.where(), (std::vector<At>(4, At{error, 2, 5})));
  const auto& all = doc.diagnostics().all();
  EXPECT_TRUE(mentions(all[0], "'on_path'")) << all[0].message;
  EXPECT_TRUE(mentions(all[3], "'library'")) << all[3].message;
}

// `timeout:` with nothing after it: there, but no value of any type.
TEST(MappingReader, ANullValueIsPresentButNotAValue) {
  Document doc("timeout:\nname:\nstrict:\nmodules:\n");
  MappingReader reader(doc.root(), "the config", doc.ctx());
  EXPECT_TRUE(reader.has("timeout"));
  ASSERT_TRUE(reader.get("timeout"));
  EXPECT_TRUE(reader.get("timeout")->IsNull());
  EXPECT_TRUE(doc.where().empty());
  EXPECT_FALSE(reader.integer("timeout", Need::optional, 0, 10));
  EXPECT_FALSE(reader.string("name"));
  EXPECT_FALSE(reader.boolean("strict"));
  EXPECT_FALSE(reader.string_list("modules"));
  EXPECT_EQ(doc.diagnostics().error_count(), 4U) << doc.text();
  for (const auto& at : doc.where()) {
    EXPECT_EQ(at.level, error);
    EXPECT_GE(at.line, 1) << "a null value has a position too";
  }
}

// Every wrong type in one pass, each at the value (not at its key).
TEST(MappingReader, WrongTypesAreReportedAtTheValueAndReadingGoesOn) {
  Document doc(
      "name: [a, b]\n"
      "timeout: {minutes: 5}\n"
      "strict: maybe\n"
      "modules: {torch: 1}\n"
      "after: fine\n");
  MappingReader reader(doc.root(), "the check", doc.ctx());
  EXPECT_FALSE(reader.string("name"));
  EXPECT_FALSE(reader.integer("timeout", Need::required, 1, 60));
  EXPECT_FALSE(reader.boolean("strict"));
  EXPECT_FALSE(reader.string_list("modules"));
  EXPECT_EQ(reader.string("after"), "fine");
  EXPECT_EQ(doc.where(),
            (std::vector<At>{{error, 1, 7}, {error, 2, 10}, {error, 3, 9}, {error, 4, 10}}));
}

TEST(MappingReader, AnIntegerMustBeAWholeNumberWrittenPlainly) {
  for (const std::string value : {"1.5", "ten", "0x10", "1e3", "30s", "''", "[5]", "5 6"}) {
    Document doc("timeout: " + value + "\n");
    MappingReader reader(doc.root(), "the check", doc.ctx());
    EXPECT_FALSE(reader.integer("timeout", Need::required, 0, 1000)) << value;
    EXPECT_EQ(doc.where(), (std::vector<At>{{error, 1, 10}})) << value;
  }
}

TEST(MappingReader, IntegerBoundsAreInclusive) {
  Document doc("low: 1\nhigh: 3600\nbelow: 0\nabove: 3601\nnegative: -5\n");
  MappingReader reader(doc.root(), "the check", doc.ctx());
  EXPECT_EQ(reader.integer("low", Need::required, 1, 3600), 1);
  EXPECT_EQ(reader.integer("high", Need::required, 1, 3600), 3600);
  EXPECT_TRUE(doc.where().empty()) << doc.text();
  EXPECT_FALSE(reader.integer("below", Need::required, 1, 3600));
  EXPECT_FALSE(reader.integer("above", Need::required, 1, 3600));
  EXPECT_FALSE(reader.integer("negative", Need::required, 1, 3600));
  EXPECT_EQ(doc.where(), (std::vector<At>{{error, 3, 8}, {error, 4, 8}, {error, 5, 11}}));
}

TEST(MappingReader, IntegersReachTheEdgesOf64Bits) {
  constexpr auto lowest = std::numeric_limits<std::int64_t>::min();
  constexpr auto highest = std::numeric_limits<std::int64_t>::max();
  Document doc("max: 9223372036854775807\nmin: -9223372036854775808\n");
  MappingReader reader(doc.root(), "the check", doc.ctx());
  EXPECT_EQ(reader.integer("max", Need::required, lowest, highest), highest);
  EXPECT_EQ(reader.integer("min", Need::required, lowest, highest), lowest);
  EXPECT_TRUE(doc.where().empty()) << doc.text();
}

// A whole number past 64 bits is out of range, said with the range ("must be
// between 1 and 3600"), not "must be a whole number".
TEST(MappingReader, AnIntegerBeyond64BitsIsReportedAsOutOfRange) {
  Document doc("timeout: 99999999999999999999\n");
  MappingReader reader(doc.root(), "the check", doc.ctx());
  EXPECT_FALSE(reader.integer("timeout", Need::required, 1, 3600));
  ASSERT_EQ(doc.where(), (std::vector<At>{{error, 1, 10}}));
  EXPECT_TRUE(mentions(doc.diagnostics().all()[0], "between 1 and 3600")) << doc.text();
}

// YAML 1.1 reads yes/no/on/off as booleans, 1.2 as strings; people write
// both. Only true and false are read: the others are errors at the value,
// never a guess either way.
TEST(MappingReader, BooleansAreTrueOrFalseAndNothingElse) {
  for (const std::string value :
       {"yes", "no", "on", "off", "y", "n", "True", "FALSE", "1", "0", "enabled", "[true]"}) {
    Document doc("strict: " + value + "\n");
    MappingReader reader(doc.root(), "the check", doc.ctx());
    EXPECT_FALSE(reader.boolean("strict", Need::required)) << value;
    EXPECT_EQ(doc.where(), (std::vector<At>{{error, 1, 9}})) << value;
  }
}

TEST(MappingReader, AStringListReportsEveryBadItemAtItsOwnPosition) {
  Document doc(
      "modules:\n"
      "  - torch\n"
      "  - [nested]\n"
      "  - {k: v}\n"
      "  - triton\n"
      "  - {}\n"
      "mapping: {torch: 1}\n");
  MappingReader reader(doc.root(), "the check", doc.ctx());
  // One bad item spoils the list, but every bad item is named.
  EXPECT_FALSE(reader.string_list("modules"));
  EXPECT_EQ(doc.where(), (std::vector<At>{{error, 3, 5}, {error, 4, 5}, {error, 6, 5}}));
  EXPECT_FALSE(reader.string_list("mapping"));
  EXPECT_EQ(doc.where().back(), (At{error, 7, 10}));
}

// List items have no key: `what` is all the message has to name them.
TEST(MappingReader, ReadStringAndReadStringListNameTheValueTheyWereGiven) {
  Document doc("targets:\n  - registry.example/img:1\n  - {image: x}\n  - [a, b]\n");
  const auto targets = doc["targets"];
  EXPECT_EQ(read_string(targets[0], "each target", doc.ctx()), "registry.example/img:1");
  EXPECT_FALSE(read_string(targets[1], "each target", doc.ctx()));
  EXPECT_EQ(read_string_list(targets[0], "the images", doc.ctx()),
            (std::vector<std::string>{"registry.example/img:1"}));
  EXPECT_EQ(read_string_list(targets[2], "the images", doc.ctx()),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(read_string_list(targets[1], "the images", doc.ctx()));
  EXPECT_EQ(doc.where(), (std::vector<At>{{error, 3, 5}, {error, 3, 5}}));
  for (const auto& diagnostic : doc.diagnostics().all()) {
    EXPECT_TRUE(diagnostic.message.starts_with("each target") ||
                diagnostic.message.starts_with("the images"))
        << diagnostic.message;
  }
}

TEST(MappingReader, UnknownKeysAreErrorsAtTheKeyWithTheNearestKnownKeySuggested) {
  Document doc("name: smi\ntimeot: 5\ncolour: blue\n");
  MappingReader reader(doc.root(), "'tools' check", doc.ctx());
  EXPECT_EQ(reader.string("name"), "smi");
  // Absent and optional: nothing to say until the unknown keys are known.
  EXPECT_FALSE(reader.integer("timeout", Need::optional, 1, 60));
  EXPECT_TRUE(doc.where().empty());
  reader.reject_unknown_keys();
  ASSERT_EQ(doc.where(), (std::vector<At>{{error, 2, 1}, {error, 3, 1}}));
  const auto found = doc.diagnostics().sorted();
  EXPECT_TRUE(mentions(found[0], "(did you mean 'timeout'?)")) << found[0].message;
  EXPECT_TRUE(mentions(found[0], "'tools' check")) << found[0].message;
  EXPECT_FALSE(mentions(found[1], "did you mean")) << found[1].message;
}

// Whichever accessor asked for a key, even just whether it is there, the
// key is known: reject_unknown_keys has nothing to say about it.
TEST(MappingReader, EveryAccessorMakesItsKeyKnown) {
  Document doc("a: x\nb: x\nc: x\nd: 1\ne: true\nf: [x]\n");
  MappingReader reader(doc.root(), "the check", doc.ctx());
  reader.has("a");
  reader.get("b");
  reader.string("c");
  reader.integer("d", Need::optional, 0, 9);
  reader.boolean("e");
  reader.string_list("f");
  EXPECT_TRUE(reader.unknown_entries().empty());
  reader.reject_unknown_keys();
  EXPECT_TRUE(doc.where().empty()) << doc.text();
}

// Where unknown keys are kept (CI configs grow keys), they are warnings,
// but a near miss of a known key would silently drop what it names.
TEST(MappingReader, AtWarningLevelUnknownKeysAreWarningsButNearMissesStayErrors) {
  Document doc(
      "setup_script: s.sh\n"
      "cache_volume: /data\n"
      "torch_contarct: {base_version: '2.10.0'}\n"
      "nme: short\n");
  MappingReader reader(doc.root(), "the contract", doc.ctx());
  reader.string("setup_script");
  reader.has("torch_contract");
  reader.has("name");
  reader.reject_unknown_keys(DiagnosticLevel::warning);
  // A key under five letters is near almost anything: no error for that.
  EXPECT_EQ(doc.where(), (std::vector<At>{{warning, 2, 1}, {error, 3, 1}, {warning, 4, 1}}));
  const auto found = doc.diagnostics().sorted();
  EXPECT_TRUE(mentions(found[0], "kept but not judged")) << found[0].message;
  EXPECT_TRUE(mentions(found[1], "(did you mean 'torch_contract'?)")) << found[1].message;
}

TEST(MappingReader, AKeyThatIsNoPlainNameIsAnErrorAtAnyLevel) {
  Document doc("? [a, b]\n: c\nname: x\n");
  MappingReader reader(doc.root(), "the contract", doc.ctx());
  reader.string("name");
  EXPECT_TRUE(reader.unknown_entries().empty());  // left to reject_unknown_keys
  reader.reject_unknown_keys(DiagnosticLevel::warning);
  EXPECT_EQ(doc.where(), (std::vector<At>{{error, 1, 3}}));
}

TEST(MappingReader, UnknownEntriesAreTheUnaskedKeysInFileOrderWithTheirValues) {
  Document doc("zeta: 1\nname: x\nalpha: [a]\n");
  MappingReader reader(doc.root(), "the contract", doc.ctx());
  reader.string("name");
  const auto unknown = reader.unknown_entries();
  ASSERT_EQ(unknown.size(), 2U);
  EXPECT_EQ(unknown[0].first, "zeta");
  EXPECT_EQ(unknown[0].second.Scalar(), "1");
  EXPECT_EQ(unknown[1].first, "alpha");
  EXPECT_TRUE(unknown[1].second.IsSequence());
  EXPECT_TRUE(doc.where().empty());  // listing them reports nothing
}

// The load reports the second; the reader goes on with the first, as
// find_child does, so the message's "first defined at" is what is judged.
TEST(MappingReader, TheFirstOfDuplicateKeysIsRead) {
  Document doc("timeout: 5\ntimeout: 50\n");
  EXPECT_EQ(doc.where(), (std::vector<At>{{error, 2, 1}}));
  MappingReader reader(doc.root(), "the check", doc.ctx());
  EXPECT_EQ(reader.integer("timeout", Need::required, 1, 60), 5);
  reader.reject_unknown_keys();
  EXPECT_EQ(doc.where().size(), 1U) << doc.text();
}

// yaml-cpp 0.7 does not merge `<<: *defaults`: the merged keys are not
// there, and `<<` is reported so that the author knows why.
TEST(MappingReader, AMergeKeyIsAnUnknownKeyAndMergesNothing) {
  Document doc(
      "defaults: &defaults\n"
      "  timeout: 30\n"
      "check:\n"
      "  <<: *defaults\n"
      "  name: smi\n");
  MappingReader reader(doc["check"], "the check", doc.ctx());
  EXPECT_FALSE(reader.has("timeout"));
  EXPECT_FALSE(reader.integer("timeout", Need::required, 1, 60));
  EXPECT_EQ(reader.string("name"), "smi");
  reader.reject_unknown_keys();
  // The missing key at the mapping (its first key), then the unknown `<<`.
  EXPECT_EQ(doc.where(), (std::vector<At>{{error, 4, 3}, {error, 4, 3}}));
  const auto found = doc.diagnostics().all();
  EXPECT_TRUE(mentions(found[0], "'timeout'")) << found[0].message;
  EXPECT_TRUE(mentions(found[1], "'<<'")) << found[1].message;
}

// An unknown key is compared for a typo only with known keys of a length
// within two of its own: a 1 MB key costs nothing to reject (it cost over a
// second and 150 MB each, a table of key length x known length cells).
TEST(MappingReader, AHugeUnknownKeyCostsLessToRejectThanToLoad) {
  Diagnostics diagnostics;
  ParseContext ctx("contract.yaml", diagnostics);
  const std::string text = "? " + std::string(256 * 1024, 'k') + "\n: 1\n";
  const auto started = std::chrono::steady_clock::now();
  const auto root = load_yaml_text(text, ctx);
  const auto loaded = std::chrono::steady_clock::now();
  ASSERT_TRUE(root);
  MappingReader reader(*root, "the contract", ctx);
  // The top-level keys of a contract, as its reader asks for them.
  for (const char* key : {"schema_version", "name", "display_name", "platform", "description",
                          "image", "targets", "envs", "detect", "checks", "environment_check",
                          "torch_contract", "integration_tests", "waivers", "provision"}) {
    reader.has(key);
  }
  reader.reject_unknown_keys();
  const auto rejected = std::chrono::steady_clock::now();
  ASSERT_EQ(diagnostics.error_count(), 1U);
  EXPECT_EQ(diagnostics.all()[0].where.line, 1);
  // Rejecting one key is a pass over the known keys: far less than the
  // load's pass over the text, however slow the machine (the 100 ms are a
  // loaded machine's scheduling; the table of edits took hundreds).
  EXPECT_LT(rejected - loaded, (loaded - started) + std::chrono::milliseconds(100))
      << "loading took "
      << std::chrono::duration_cast<std::chrono::milliseconds>(loaded - started).count()
      << " ms, rejecting the key "
      << std::chrono::duration_cast<std::chrono::milliseconds>(rejected - loaded).count() << " ms";
}

}  // namespace
}  // namespace envcontract::contracts
