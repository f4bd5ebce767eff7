// contracts/judges_files.cpp: files a contract wants (or forbids) in an env,
// judged from the path matches probes gathered, and what its shared
// libraries need, judged from the linkage facts.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/json_text.hpp"
#include "contracts/judgement.hpp"
#include "tests/support/contract_text.hpp"

namespace envcontract {
namespace {

using contracts::CheckStatus;
using contracts::EnvVerdict;
using testing::cause_of;
using testing::check_of;
using testing::judge_one;
using testing::shown;
using Strings = std::vector<std::string>;

const std::string k_site = "/opt/envs/e/lib/python3.11/site-packages";
const std::string k_user_site = "/home/u/.local/lib/python3.11/site-packages";

// An env of the host with two site dirs (its own and the user site).
facts::EnvFacts host_env() {
  facts::EnvFacts env;
  env.env.name = "e";
  env.env.prefix = "/opt/envs/e";
  env.static_facts.site_packages = {k_site, k_user_site};
  return env;
}

// What probes record for `pattern`: its expansions and what they matched.
facts::PathMatches matched(const std::string& pattern, Strings expansions, Strings matches) {
  facts::PathMatches entry;
  entry.pattern = pattern;
  entry.expansions = std::move(expansions);
  entry.matches = std::move(matches);
  return entry;
}

// ---- files -----------------------------------------------------------------

// {site} is looked for in every site dir: the failure names them all, so
// the owner sees where the agent looked.
TEST(FilesJudge, AnExistRuleFailsWhenNoSiteDirHoldsThePath) {
  const std::string pattern = "{site}/torch_fl/lib/libtorch_fl.so";
  const Strings expansions = {k_site + "/torch_fl/lib/libtorch_fl.so",
                              k_user_site + "/torch_fl/lib/libtorch_fl.so"};
  auto env = host_env();
  env.path_matches.push_back(matched(pattern, expansions, {}));
  const auto result = judge_one("- {id: c, kind: files, exist: ['" + pattern + "']}", env);
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  EXPECT_EQ(cause_of(result), "missing_file");
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary, expansions[0] + ", " + expansions[1] + ": none exists");
  EXPECT_EQ(result.diagnosis->evidence["pattern"], expansions[0]);
  EXPECT_EQ(result.diagnosis->evidence["searched"], expansions);
  EXPECT_EQ(result.actual[pattern], Strings{});
}

// A package may live in any site dir: a match in the user site is enough.
TEST(FilesJudge, AnExistRulePassesWhenAnySiteDirHoldsThePath) {
  const std::string pattern = "{site}/torch_fl/lib/libtorch_fl.so";
  const std::string found = k_user_site + "/torch_fl/lib/libtorch_fl.so";
  auto env = host_env();
  env.path_matches.push_back(
      matched(pattern, {k_site + "/torch_fl/lib/libtorch_fl.so", found}, {found}));
  const auto result = judge_one("- {id: c, kind: files, exist: ['" + pattern + "']}", env);
  EXPECT_EQ(result.status, CheckStatus::pass) << shown(result);
  EXPECT_FALSE(result.diagnosis);
  EXPECT_EQ(result.actual[pattern], Strings{found});
}

TEST(FilesJudge, AnAbsentRuleFailsNamingWhatMatched) {
  const std::string pattern = "{prefix}/lib/libcuda*.so*";
  const Strings found = {"/opt/envs/e/lib/libcudart.so.12", "/opt/envs/e/lib/libcudnn.so.9"};
  auto env = host_env();
  env.path_matches.push_back(matched(pattern, {"/opt/envs/e/lib/libcuda*.so*"}, found));
  const auto result = judge_one("- {id: c, kind: files, absent: ['" + pattern + "']}", env);
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  EXPECT_EQ(cause_of(result), "forbidden_file");
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary,
            "/opt/envs/e/lib/libcudart.so.12 exists; the contract forbids it");
  EXPECT_EQ(result.diagnosis->evidence["paths"], found);
  EXPECT_EQ(result.actual[pattern], found);
}

// A pattern the probes were not asked to look for has no matches, which is
// no evidence of absence (a pass) nor of a missing file (a drift).
TEST(FilesJudge, APatternTheProbesWereNotAskedForIsAnErrorNeverAPassOrADrift) {
  const auto judged = testing::judge_checks(
      "- {id: absent, kind: files, absent: ['{site}/torch/lib/libtorch_cuda.so']}\n"
      "- {id: exist, kind: files, exist: ['{site}/torch_fl/__init__.py']}\n",
      host_env());
  EXPECT_EQ(judged.verdict, EnvVerdict::error);
  for (const char* id : {"absent", "exist"}) {
    const auto result = check_of(judged, id);
    EXPECT_EQ(result.status, CheckStatus::error) << shown(result);
    EXPECT_EQ(cause_of(result), "probe_error") << id;
  }
  const auto absent = check_of(judged, "absent");
  ASSERT_TRUE(absent.diagnosis);
  EXPECT_EQ(absent.diagnosis->summary,
            "{site}/torch/lib/libtorch_cuda.so was not looked for in this env");
}

// A glob that failed (its site dirs unknown, a directory unreadable) says
// nothing of what exists: the check is an error naming why.
TEST(FilesJudge, APatternThatCouldNotBeLookedForIsAnErrorSayingWhy) {
  const std::string pattern = "{site}/torch/lib/libtorch_cuda.so";
  auto env = host_env();
  auto entry = matched(pattern, {}, {});
  entry.error = "the env's site dirs are unknown, so {site} cannot be looked in";
  env.path_matches.push_back(entry);
  const auto judged =
      testing::judge_checks("- {id: c, kind: files, absent: ['" + pattern + "']}", env);
  EXPECT_EQ(judged.verdict, EnvVerdict::error);
  const auto result = check_of(judged, "c");
  EXPECT_EQ(result.status, CheckStatus::error) << shown(result);
  EXPECT_EQ(cause_of(result), "probe_error");
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary,
            pattern +
                " could not be looked for: the env's site dirs are unknown, so {site} "
                "cannot be looked in");
}

// A container's absolute paths are its rootfs' (the probes globbed inside
// it): the host's own /etc/passwd is no match, and a match is reported as
// the agent names it (docs/probes.md, "Facts a contract asks for").
TEST(FilesJudge, AContainerEnvsAbsolutePathsAreItsRootfsNotTheHosts) {
  ASSERT_TRUE(std::filesystem::exists("/etc/passwd")) << "the host file the judge must not see";
  auto env = host_env();
  env.env.system_root = "/srv/image";
  env.env.prefix = "/srv/image/opt/envs/e";
  env.static_facts.site_packages = {"/srv/image" + k_site};
  const std::string runtime = "/srv/image/usr/local/xpu/lib/libxpurt.so";
  env.path_matches.push_back(matched("/etc/passwd", {"/etc/passwd"}, {}));
  env.path_matches.push_back(
      matched("/usr/local/xpu/lib/libxpurt.so", {"/usr/local/xpu/lib/libxpurt.so"}, {runtime}));
  const auto result = judge_one(
      "- {id: c, kind: files, exist: [/usr/local/xpu/lib/libxpurt.so], absent: [/etc/passwd]}",
      env);
  EXPECT_EQ(result.status, CheckStatus::pass) << shown(result);
  EXPECT_EQ(result.actual["/usr/local/xpu/lib/libxpurt.so"], Strings{runtime});
  EXPECT_EQ(result.actual["/etc/passwd"], Strings{});
}

// A definite fault wins over a pattern that could not be looked for,
// whatever their order in the contract (as the linkage judge lets a definite
// fault of another library fail the check): a missing file is reported.
TEST(FilesJudge, AMissingFileFailsWhateverPatternCouldNotBeLookedForBeforeIt) {
  const std::string unknown = "{site}/torch_fl/lib/libtorch_fl.so";
  const std::string missing = "{prefix}/etc/xpu.conf";
  auto env = host_env();
  auto unreadable = matched(unknown, {k_site + "/torch_fl/lib/libtorch_fl.so"}, {});
  unreadable.error = unknown + ": a directory could not be read";
  env.path_matches.push_back(unreadable);
  env.path_matches.push_back(matched(missing, {"/opt/envs/e/etc/xpu.conf"}, {}));
  for (const std::string& list :
       {"['" + unknown + "', '" + missing + "']", "['" + missing + "', '" + unknown + "']"}) {
    const auto result = judge_one("- {id: c, kind: files, exist: " + list + "}", env);
    EXPECT_EQ(result.status, CheckStatus::fail) << list << ": " << shown(result);
    EXPECT_EQ(cause_of(result), "missing_file") << list;
  }
}

// What a partly failed glob did find still counts: a forbidden file matched
// in one site dir, while another could not be read, is the drift that match
// proves.
TEST(FilesJudge, AForbiddenFileFoundFailsEvenWhenAnotherSiteDirCouldNotBeRead) {
  const std::string pattern = "{site}/torch/lib/libtorch_cuda.so";
  const std::string found = k_site + "/torch/lib/libtorch_cuda.so";
  auto env = host_env();
  auto entry = matched(pattern, {found, k_user_site + "/torch/lib/libtorch_cuda.so"}, {found});
  entry.error = k_user_site + "/torch/lib/libtorch_cuda.so: a directory could not be read";
  env.path_matches.push_back(entry);
  const auto result = judge_one("- {id: c, kind: files, absent: ['" + pattern + "']}", env);
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  EXPECT_EQ(cause_of(result), "forbidden_file");
}

// ---- linkage ---------------------------------------------------------------

const std::string k_fl_library = k_site + "/torch_fl/lib/libtorch_fl.so";

// libtorch_fl.so needs libc10.so, which needs libtorch_cuda.so.
facts::LibraryLinkage torch_fl_library(const std::string& path = k_fl_library) {
  facts::LibraryLinkage library;
  library.path = path;
  library.soname = "libtorch_fl.so";
  library.needed = {"libc10.so"};
  library.closure = {{"libc10.so", "libtorch_fl.so", k_site + "/torch/lib/libc10.so"},
                     {"libtorch_cuda.so", "libc10.so", k_site + "/torch/lib/libtorch_cuda.so"}};
  return library;
}

const std::string k_no_cuda =
    "- {id: c, kind: linkage, library: '{site}/torch_fl/lib/libtorch_fl.so', "
    "must_not_need: [libtorch_cuda.so]";

// Through a dependency is the same fault as directly: the chain shows how.
TEST(LinkageJudge, AForbiddenLibraryReachedThroughTheClosureFailsWithItsChain) {
  auto env = host_env();
  env.linkage.libraries.push_back(torch_fl_library());
  const auto result = judge_one(k_no_cuda + "}", env);
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  EXPECT_EQ(cause_of(result), "forbidden_needed");
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary,
            "libtorch_fl.so needs libtorch_cuda.so (libtorch_fl.so -> libc10.so -> "
            "libtorch_cuda.so)");
  EXPECT_EQ(result.diagnosis->evidence["chain"],
            (Strings{"libtorch_fl.so", "libc10.so", "libtorch_cuda.so"}));
  EXPECT_EQ(result.diagnosis->evidence["library"], k_fl_library);
  EXPECT_EQ(result.actual["matched"], Strings{k_fl_library});
}

TEST(LinkageJudge, WithoutTransitiveOnlyTheLibrarysOwnNeedsCount) {
  auto env = host_env();
  env.linkage.libraries.push_back(torch_fl_library());
  const auto direct = judge_one(k_no_cuda + ", must_need: [libc10.so], transitive: false}", env);
  EXPECT_EQ(direct.status, CheckStatus::pass) << shown(direct);
  EXPECT_EQ(direct.actual["matched"], Strings{k_fl_library});
}

TEST(LinkageJudge, ALibraryThatDoesNotNeedARequiredOneFailsWithWhatItNeeds) {
  auto env = host_env();
  env.linkage.libraries.push_back(torch_fl_library());
  const auto result = judge_one(
      "- {id: c, kind: linkage, library: '{site}/torch_fl/lib/libtorch_fl.so', "
      "must_need: [libxpurt.so.1]}",
      env);
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  EXPECT_EQ(cause_of(result), "missing_library");
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary, "libtorch_fl.so does not need libxpurt.so.1");
  EXPECT_EQ(result.diagnosis->evidence["needed"], Strings{"libc10.so"});
}

// What it needs is unknown: neither a pass nor a drift.
TEST(LinkageJudge, ALibraryThatCouldNotBeAnalysedIsAnError) {
  auto env = host_env();
  auto library = torch_fl_library();
  library.error = "refused as a shared library: its dynamic sections exceed 256 MiB";
  env.linkage.libraries.push_back(library);
  const auto judged = testing::judge_checks(k_no_cuda + "}", env);
  EXPECT_EQ(judged.verdict, EnvVerdict::error);
  const auto result = check_of(judged, "c");
  EXPECT_EQ(result.status, CheckStatus::error) << shown(result);
  EXPECT_EQ(cause_of(result), "unreadable_file");
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary, "libtorch_fl.so could not be analysed: " + library.error);
  EXPECT_EQ(result.diagnosis->evidence["library"], k_fl_library);
  EXPECT_EQ(result.actual["matched"], Strings{k_fl_library});
}

// An unreadable library leaves its own verdict open, not another's fault.
TEST(LinkageJudge, ADefiniteFaultOfAnotherMatchedLibraryStillFails) {
  auto env = host_env();
  auto unreadable = torch_fl_library(k_site + "/torch_fl/lib/libaaa.so");
  unreadable.error = "not fully resolved: the closure's bound of 1024 objects was reached";
  env.linkage.libraries.push_back(unreadable);
  env.linkage.libraries.push_back(torch_fl_library());
  const auto result = judge_one(
      "- {id: c, kind: linkage, library: '{site}/torch_fl/lib/*.so', "
      "must_not_need: [libtorch_cuda.so]}",
      env);
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  EXPECT_EQ(cause_of(result), "forbidden_needed");
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->evidence["library"], k_fl_library);
}

// A container's site dirs are named from inside it in the contract: the
// library read at ROOT/opt/envs/e/... is matched as /opt/envs/e/...
TEST(LinkageJudge, AContainerEnvsLibraryIsMatchedAsTheEnvSeesIt) {
  auto env = host_env();
  env.env.system_root = "/srv/image";
  env.env.prefix = "/srv/image/opt/envs/e";
  env.static_facts.site_packages = {"/srv/image" + k_site};
  const std::string read_at = "/srv/image" + k_fl_library;
  env.linkage.libraries.push_back(torch_fl_library(read_at));
  const auto result = judge_one(k_no_cuda + "}", env);
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  EXPECT_EQ(cause_of(result), "forbidden_needed");
  EXPECT_EQ(result.actual["matched"], Strings{read_at});
  // The agent's own path to it is not a path inside the container.
  const auto host_path = judge_one(
      "- {id: c, kind: linkage, library: '" + read_at + "', must_not_need: [libtorch_cuda.so]}",
      env);
  EXPECT_EQ(host_path.actual["matched"], Strings{});
}

// A files check says whether the library must exist; linkage judges only
// the libraries there are, all of which were analysed here.
TEST(LinkageJudge, NoMatchingLibraryIsNotALinkageFault) {
  auto env = host_env();
  env.linkage.libraries.push_back(torch_fl_library(k_site + "/other/libother.so"));
  const auto result = judge_one(k_no_cuda + "}", env);
  EXPECT_EQ(result.status, CheckStatus::pass) << shown(result);
  EXPECT_EQ(result.actual["matched"], Strings{});
}

// {prefix} and {site} are matched literally (the env's values have their
// glob characters escaped, as the probes escape them): an env at
// /opt/envs/e[1] still matches its own libraries, and a forbidden need is seen.
TEST(LinkageJudge, AnEnvWhosePrefixHoldsGlobCharactersIsStillMatched) {
  const std::string prefix = "/opt/envs/e[1]";
  const std::string site = prefix + "/lib/python3.11/site-packages";
  auto env = host_env();
  env.env.prefix = prefix;
  env.static_facts.site_packages = {site};
  env.linkage.libraries.push_back(torch_fl_library(site + "/torch_fl/lib/libtorch_fl.so"));
  const auto result = judge_one(k_no_cuda + "}", env);
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  EXPECT_EQ(cause_of(result), "forbidden_needed");
}

// No library matched while libraries past the per-env limit were skipped
// (LinkageFacts::skipped): the one named may be among them, so the check is
// an error, never a pass without the facts.
TEST(LinkageJudge, LibrariesBeyondThePerEnvLimitAreNotJudgedAbsent) {
  auto env = host_env();
  env.linkage.skipped = 12;
  const auto result = judge_one(k_no_cuda + "}", env);
  EXPECT_EQ(result.status, CheckStatus::error) << shown(result);

  // One library read and clean says nothing of a matching one never read.
  env.linkage.libraries.push_back(torch_fl_library());
  const auto one_read = judge_one(k_no_cuda + ", must_need: [libc10.so], transitive: false}", env);
  EXPECT_EQ(one_read.status, CheckStatus::error) << shown(one_read);
  EXPECT_EQ(one_read.actual["matched"], Strings{k_fl_library});
}

}  // namespace
}  // namespace envcontract
