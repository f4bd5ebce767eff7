// facts/linkage.cpp: linkage facts as `envcontractd facts` and the checks'
// evidence show them: whether a library loads, what it lacks and why, and
// a search cut short never shown as a library that is missing.
#include "facts/linkage.hpp"

#include <gtest/gtest.h>

#include "common/json_text.hpp"

namespace envcontract::facts {
namespace {

NearMiss near_miss(const std::string& kind, int likelihood) {
  return {"_ZN3c106detail14torchCheckFailEPKcS2_jRKSs",
          "c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&)",
          "/opt/envs/e/lib/python3.11/site-packages/torch/lib/libc10.so",
          kind,
          likelihood,
          {"4th parameter: int (wanted) vs unsigned int (defined in libc10.so)"}};
}

MissingLibrary missing_library(const std::string& name, const std::filesystem::path& needed_by) {
  MissingLibrary missing;
  missing.name = name;
  missing.needed_by = needed_by;
  return missing;
}

LibraryLinkage loading_library() {
  LibraryLinkage library;
  library.path = "/opt/envs/e/lib/python3.11/site-packages/torch_xpu/_C.so";
  library.soname = "_C.so";
  library.needed = {"libtorch.so", "libc.so.6"};
  library.closure = {{"libtorch.so", "_C.so", "/opt/envs/e/lib/libtorch.so"},
                     {"libc.so.6", "libtorch.so", "/lib/x86_64-linux-gnu/libc.so.6"}};
  return library;
}

TEST(Linkage, ALibraryThatLoadsSaysSoWithItsClosure) {
  const auto library = loading_library();
  ASSERT_TRUE(library.loads());
  const Json json = to_json(library);
  EXPECT_EQ(json["path"], "/opt/envs/e/lib/python3.11/site-packages/torch_xpu/_C.so");
  EXPECT_EQ(json["soname"], "_C.so");
  EXPECT_EQ(json["loads"], true);
  EXPECT_EQ(json["error"], "");
  EXPECT_EQ(json["needed"], (Json::array({"libtorch.so", "libc.so.6"})));
  EXPECT_EQ(json["closure"][1], (Json{{"name", "libc.so.6"},
                                      {"needed_by", "libtorch.so"},
                                      {"path", "/lib/x86_64-linux-gnu/libc.so.6"}}));
  for (const char* empty : {"missing", "unresolved", "missing_versions", "unchecked"}) {
    EXPECT_EQ(json[empty], Json::array()) << empty << " is an empty list, never null";
  }
}

// Any one of an unreadable file, a missing library, an unbound symbol or a
// missing version node is a library that does not load.
TEST(Linkage, AnyOneReasonMakesALibraryNotLoad) {
  auto unreadable = loading_library();
  unreadable.error = "truncated: 12 bytes, too short for an ELF header";
  auto missing = loading_library();
  missing.missing.push_back(missing_library("libxpurt.so.2", missing.path));
  auto unbound = loading_library();
  unbound.symbols.unresolved.push_back({"xpuMalloc", "xpuMalloc", "", unbound.path, {}});
  auto unversioned = loading_library();
  unversioned.symbols.missing_versions.push_back({"GLIBC_2.38", "libc.so.6", unversioned.path});
  for (const auto* library : {&unreadable, &missing, &unbound, &unversioned}) {
    EXPECT_FALSE(library->loads());
    EXPECT_EQ(to_json(*library)["loads"], false);
  }
  EXPECT_EQ(to_json(unreadable)["error"], unreadable.error);
  EXPECT_EQ(to_json(unversioned)["missing_versions"][0],
            (Json{{"version", "GLIBC_2.38"},
                  {"library", "libc.so.6"},
                  {"needed_by", unversioned.path.string()}}));
  // Symbols left unchecked because a library is missing are listed, but
  // alone they stop nothing: the missing library is the cause.
  auto echo = loading_library();
  echo.symbols.unchecked = {"/opt/envs/e/lib/libplugin.so"};
  EXPECT_TRUE(echo.loads());
  EXPECT_EQ(to_json(echo)["unchecked"], (Json::array({"/opt/envs/e/lib/libplugin.so"})));
}

TEST(Linkage, AMissingLibrarySaysWhereItWasSoughtAndWhatIsThere) {
  MissingLibrary missing;
  missing.name = "libxpurt.so.2";
  missing.needed_by = "/opt/envs/e/lib/libtorch_xpu.so";
  missing.searched = {"/opt/xpu/lib (RUNPATH)", "/lib/x86_64-linux-gnu (system)"};
  missing.other_versions = {"/opt/xpu/lib/libxpurt.so.1"};
  missing.rejected = {"/usr/lib32/libxpurt.so.2: ELFCLASS32"};
  const Json json = to_json(missing);
  EXPECT_EQ(json["name"], "libxpurt.so.2");
  EXPECT_EQ(json["needed_by"], "/opt/envs/e/lib/libtorch_xpu.so");
  EXPECT_EQ(json["searched"],
            (Json::array({"/opt/xpu/lib (RUNPATH)", "/lib/x86_64-linux-gnu (system)"})));
  EXPECT_EQ(json["other_versions"], (Json::array({"/opt/xpu/lib/libxpurt.so.1"})));
  EXPECT_EQ(json["rejected"], (Json::array({"/usr/lib32/libxpurt.so.2: ELFCLASS32"})));
}

// A library "missing" after a bound cut the search short is no evidence
// that the loader would not find it: its JSON (in `envcontractd facts` and in
// a missing_library diagnosis' evidence) says the search was cut.
TEST(Linkage, AMissingLibraryOfACutSearchSaysTheSearchWasCut) {
  MissingLibrary missing;
  missing.name = "libxpurt.so.2";
  missing.needed_by = "/opt/envs/e/lib/libtorch_xpu.so";
  missing.searched = {"(and more places, not listed)"};
  missing.incomplete =
      "LD_LIBRARY_PATH names more than 1024 directories: only the first are searched";
  const Json json = to_json(missing);
  ASSERT_TRUE(json.contains("incomplete")) << common::json_text(json);
  EXPECT_EQ(json["incomplete"], missing.incomplete);
}

// The most likely near miss first, as `near_miss` (earlier reports' field),
// and every one in order under `near_misses`.
TEST(Linkage, AnUnboundSymbolListsItsNearMissesMostLikelyFirst) {
  UnresolvedSymbol symbol;
  symbol.mangled = "_ZN3c106detail14torchCheckFailEPKcS2_iRKSs";
  symbol.demangled =
      "c10::detail::torchCheckFail(char const*, char const*, int, std::string const&)";
  symbol.version = "";
  symbol.needed_by = "/opt/envs/e/lib/libtorch_xpu.so";
  symbol.near_misses = {near_miss("parameters", 90), near_miss("scope", 40)};
  const Json json = to_json(symbol);
  EXPECT_EQ(json["mangled"], symbol.mangled);
  EXPECT_EQ(json["demangled"], symbol.demangled);
  EXPECT_EQ(json["needed_by"], "/opt/envs/e/lib/libtorch_xpu.so");
  ASSERT_EQ(json["near_misses"].size(), 2U);
  EXPECT_EQ(json["near_miss"], json["near_misses"][0]);
  EXPECT_EQ(json["near_misses"][0]["kind"], "parameters");
  EXPECT_EQ(json["near_misses"][0]["likelihood"], 90);
  EXPECT_EQ(json["near_misses"][1]["kind"], "scope");
  EXPECT_EQ(json["near_misses"][0]["library"],
            "/opt/envs/e/lib/python3.11/site-packages/torch/lib/libc10.so");
  EXPECT_EQ(json["near_misses"][0]["differences"],
            (Json::array({"4th parameter: int (wanted) vs unsigned int (defined in libc10.so)"})));

  symbol.near_misses.clear();
  const Json alone = to_json(symbol);
  EXPECT_EQ(alone["near_miss"], nullptr) << "none: null, not an empty object";
  EXPECT_EQ(alone["near_misses"], Json::array());
}

TEST(Linkage, AnEnvsLinkageSaysUnderWhichActivationAndHowManyWereSkipped) {
  LinkageFacts facts;
  facts.activation = Activation::bare;
  facts.libraries = {loading_library()};
  facts.skipped = 12;
  const Json json = to_json(facts);
  EXPECT_EQ(json["activation"], "bare");
  EXPECT_EQ(json["skipped"], 12);
  ASSERT_EQ(json["libraries"].size(), 1U);
  EXPECT_EQ(json["libraries"][0], to_json(facts.libraries[0]));
  EXPECT_EQ(to_json(LinkageFacts{})["activation"], "activated");
  EXPECT_EQ(to_json(LinkageFacts{})["libraries"], Json::array());
}

TEST(Linkage, ALookupSaysWhereALibraryIsFoundOrThatItIsNot) {
  LibraryLookup found;
  found.name = "libbkcl.so";
  found.path = "/usr/local/xpu/lib/libbkcl.so";
  found.found_via = "LD_LIBRARY_PATH";
  found.searched = {"/usr/local/xpu/lib (LD_LIBRARY_PATH)"};
  const Json json_found = to_json(found);
  EXPECT_EQ(json_found["name"], "libbkcl.so");
  EXPECT_EQ(json_found["path"], "/usr/local/xpu/lib/libbkcl.so");
  EXPECT_EQ(json_found["found_via"], "LD_LIBRARY_PATH");
  EXPECT_EQ(json_found["searched"], (Json::array({"/usr/local/xpu/lib (LD_LIBRARY_PATH)"})));
  EXPECT_EQ(json_found["other_versions"], Json::array());
  LibraryLookup missing;
  missing.name = "libxpurt.so.2";
  missing.searched = {"/lib (system)"};
  missing.other_versions = {"/usr/local/xpu/lib/libxpurt.so.1"};
  const Json json = to_json(missing);
  EXPECT_EQ(json["path"], nullptr) << "not found: null, never an empty path";
  EXPECT_EQ(json["other_versions"], (Json::array({"/usr/local/xpu/lib/libxpurt.so.1"})));
}

// A lookup cut short is "neither found nor missing" (the header): its JSON
// says so, where {"path": null} alone would read as a library not there.
TEST(Linkage, ALookupCutShortIsNotShownAsMissing) {
  LibraryLookup cut;
  cut.name = "libfoo-forbidden.so.1";
  cut.incomplete =
      "LD_LIBRARY_PATH names more than 1024 directories: only the first are searched, so what it "
      "loads is unknown";
  const Json json = to_json(cut);
  ASSERT_TRUE(json.contains("incomplete")) << common::json_text(json);
  EXPECT_EQ(json["incomplete"], cut.incomplete);
}

TEST(Linkage, TheCLibraryIsNullWhereUnknown) {
  EXPECT_EQ(
      to_json(GlibcFacts{"2.36", "/lib/x86_64-linux-gnu/libc.so.6", ""}),
      (Json{{"version", "2.36"}, {"path", "/lib/x86_64-linux-gnu/libc.so.6"}, {"problem", ""}}));
  EXPECT_EQ(to_json(GlibcFacts{"", "", "no libc.so.6 on the loader's path"}),
            (Json{{"version", nullptr},
                  {"path", nullptr},
                  {"problem", "no libc.so.6 on the loader's path"}}));
}

// Names come from an env's files: bytes that are not UTF-8 are kept in the
// facts, and written out without an exception.
TEST(Linkage, NamesThatAreNotUtf8AreWrittenOut) {
  auto library = loading_library();
  library.path = "/opt/envs/e/lib/\xff\xfe.so";
  library.needed = {"lib\xc3(.so"};
  library.missing.push_back(missing_library("lib\xc3(.so", library.path));
  const Json json = to_json(library);
  EXPECT_EQ(json["path"], "/opt/envs/e/lib/\xff\xfe.so");
  std::string text;
  EXPECT_NO_THROW(text = common::json_text(json));
  EXPECT_NE(text.find("/opt/envs/e/lib/"), std::string::npos);
  EXPECT_EQ(Json::parse(text)["loads"], false);
}

}  // namespace
}  // namespace envcontract::facts
