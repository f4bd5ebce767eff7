// contracts/judges_system.cpp: what an env's processes get from the system
// (libraries the loader resolves, device nodes, tools on PATH, the C
// library), judged from the facts probes gathered, never from this host.
#include <gtest/gtest.h>

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

facts::EnvFacts env_facts() {
  facts::EnvFacts env;
  env.env.name = "e";
  env.env.prefix = "/opt/envs/e";
  env.activation.bare = {{"PATH", "/usr/bin:/bin"}};
  env.activation.activated = {{"PATH", "/opt/envs/e/bin:/opt/xre/bin:/usr/bin:/bin"}};
  return env;
}

facts::LibraryLookup found(const std::string& name, const std::string& path,
                           const std::string& via) {
  facts::LibraryLookup lookup;
  lookup.name = name;
  lookup.path = path;
  lookup.found_via = via;
  return lookup;
}

// ---- libraries -------------------------------------------------------------

TEST(SystemJudges, LibrariesPassWhenTheLoaderFindsWhatMustBeThereOnly) {
  auto env = env_facts();
  env.library_lookups.push_back(
      found("libxpurt.so.1", "/usr/local/xpu/lib/libxpurt.so.1", "LD_LIBRARY_PATH"));
  env.library_lookups.push_back(found("libcuda.so.1", "", ""));
  const auto result = judge_one(
      "- {id: c, kind: libraries, present: [libxpurt.so.1], absent: [libcuda.so.1]}", env);
  EXPECT_EQ(result.status, CheckStatus::pass) << shown(result);
  EXPECT_EQ(result.actual["libxpurt.so.1"], "/usr/local/xpu/lib/libxpurt.so.1");
  EXPECT_TRUE(result.actual["libcuda.so.1"].is_null());
}

// The near miss (another soname version) is the usual cause: named first.
TEST(SystemJudges, AMissingLibraryFailsNamingAnotherVersionTheLoaderCouldSee) {
  auto env = env_facts();
  auto lookup = found("libxpurt.so.2", "", "");
  lookup.searched = {"/usr/local/xpu/lib (LD_LIBRARY_PATH)", "ld.so.cache"};
  lookup.other_versions = {"/usr/local/xpu/lib/libxpurt.so.1"};
  env.library_lookups.push_back(lookup);
  const auto result = judge_one("- {id: c, kind: libraries, present: [libxpurt.so.2]}", env);
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  EXPECT_EQ(cause_of(result), "missing_library");
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary,
            "libxpurt.so.2 cannot be found by the env's loader; a different version exists: "
            "/usr/local/xpu/lib/libxpurt.so.1");
  EXPECT_EQ(result.diagnosis->evidence["searched"], lookup.searched);
  EXPECT_EQ(result.diagnosis->evidence["other_versions"],
            Strings{"/usr/local/xpu/lib/libxpurt.so.1"});
  EXPECT_TRUE(result.actual["libxpurt.so.2"].is_null());
}

TEST(SystemJudges, AForbiddenLibraryTheLoaderFindsFailsSayingHow) {
  auto env = env_facts();
  env.library_lookups.push_back(
      found("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "ld.so.cache"));
  const auto result = judge_one("- {id: c, kind: libraries, absent: [libcuda.so.1]}", env);
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  EXPECT_EQ(cause_of(result), "forbidden_library");
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary,
            "libcuda.so.1 is found at /usr/lib/x86_64-linux-gnu/libcuda.so.1 (through "
            "ld.so.cache); the contract forbids it");
  EXPECT_EQ(result.diagnosis->evidence["found_via"], "ld.so.cache");
}

// A search a bound cut short neither found nor missed the library: no
// verdict for `present`, and none for `absent` either.
TEST(SystemJudges, ALookupCutShortIsNeitherPresentNorAbsent) {
  auto env = env_facts();
  auto lookup = found("libbkcl.so", "", "");
  lookup.incomplete = "the search list exceeded 1024 directories";
  env.library_lookups.push_back(lookup);
  const auto judged = testing::judge_checks(
      "- {id: present, kind: libraries, present: [libbkcl.so]}\n"
      "- {id: absent, kind: libraries, absent: [libbkcl.so]}\n",
      env);
  EXPECT_EQ(judged.verdict, EnvVerdict::error);
  for (const char* id : {"present", "absent"}) {
    const auto result = check_of(judged, id);
    EXPECT_EQ(result.status, CheckStatus::error) << shown(result);
    EXPECT_EQ(cause_of(result), "probe_error") << id;
    ASSERT_TRUE(result.diagnosis);
    EXPECT_EQ(result.diagnosis->summary,
              "where the loader finds libbkcl.so is unknown: the search list exceeded 1024 "
              "directories");
  }
}

// No lookup is no evidence that the library is absent.
TEST(SystemJudges, ALibraryThatWasNotLookedUpIsAnErrorNotAbsent) {
  const auto result = judge_one("- {id: c, kind: libraries, absent: [libcuda.so.1]}", env_facts());
  EXPECT_EQ(result.status, CheckStatus::error) << shown(result);
  EXPECT_EQ(cause_of(result), "probe_error");
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary, "where the loader finds libcuda.so.1 was not looked up");
}

// ---- device_nodes ----------------------------------------------------------

TEST(SystemJudges, FewerDeviceNodesThanTheContractWantsFailWithTheCount) {
  auto env = env_facts();
  env.device_nodes.push_back({"/dev/davinci[0-9]*", {"/dev/davinci0", "/dev/davinci1"}});
  const std::string rule =
      "- {id: c, kind: device_nodes, glob: '/dev/davinci[0-9]*', count: '>= 8'}";
  const auto result = judge_one(rule, env);
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  EXPECT_EQ(cause_of(result), "missing_device_nodes");
  EXPECT_EQ(result.actual, 2);
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary,
            "/dev/davinci[0-9]* matches 2 device nodes, the contract wants >= 8");
  EXPECT_EQ(result.diagnosis->evidence["count"], 2);
  env.device_nodes.front().matches = {"/dev/davinci0", "/dev/davinci1", "/dev/davinci2",
                                      "/dev/davinci3", "/dev/davinci4", "/dev/davinci5",
                                      "/dev/davinci6", "/dev/davinci7"};
  EXPECT_EQ(judge_one(rule, env).status, CheckStatus::pass);
}

// "none of these devices" holds only when they were looked for.
TEST(SystemJudges, DeviceNodesNotLookedForAreAnErrorEvenWhenTheContractWantsNone) {
  const std::string rule = "- {id: c, kind: device_nodes, glob: '/dev/nvidia*', count: '== 0'}";
  const auto unasked = judge_one(rule, env_facts());
  EXPECT_EQ(unasked.status, CheckStatus::error) << shown(unasked);
  EXPECT_EQ(cause_of(unasked), "probe_error");
  ASSERT_TRUE(unasked.diagnosis);
  EXPECT_EQ(unasked.diagnosis->summary, "/dev/nvidia* was not looked for on this host");
  auto env = env_facts();
  env.device_nodes.push_back({"/dev/nvidia*", {}});
  const auto none = judge_one(rule, env);
  EXPECT_EQ(none.status, CheckStatus::pass) << shown(none);
  EXPECT_EQ(none.actual, 0);
}

// ---- tools -----------------------------------------------------------------

TEST(SystemJudges, AToolMissingFromTheActivatedPathFailsShowingThatPath) {
  auto env = env_facts();
  env.tools.push_back({"bash", "/usr/bin/bash"});
  env.tools.push_back({"xpu-smi", ""});
  const auto result = judge_one("- {id: c, kind: tools, on_path: [bash, xpu-smi]}", env);
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  EXPECT_EQ(cause_of(result), "missing_tool");
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary, "xpu-smi is not on the PATH of the activated env");
  EXPECT_EQ(result.diagnosis->evidence["tool"], "xpu-smi");
  EXPECT_EQ(result.diagnosis->evidence["PATH"], "/opt/envs/e/bin:/opt/xre/bin:/usr/bin:/bin");
  EXPECT_EQ(result.actual["bash"], "/usr/bin/bash");
  EXPECT_TRUE(result.actual["xpu-smi"].is_null());
}

// One tool found does not vouch for another that was not looked up.
TEST(SystemJudges, AToolNotLookedUpIsAnErrorWhateverTheOthers) {
  auto env = env_facts();
  env.tools.push_back({"bash", "/usr/bin/bash"});
  const auto result = judge_one("- {id: c, kind: tools, on_path: [bash, xpu-smi]}", env);
  EXPECT_EQ(result.status, CheckStatus::error) << shown(result);
  EXPECT_EQ(cause_of(result), "probe_error");
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary, "xpu-smi was not looked up in this env");
}

// When activation failed, tools were looked up on the bare PATH (recorded
// as the activated one): a tool activation puts on PATH is unknown, never
// missing (the same for `libraries`, looked up under that environment).
TEST(SystemJudges, AToolLookedUpAfterActivationFailedIsUnknownNotMissing) {
  auto env = env_facts();
  env.activation.problem = "activation exited with status 1";
  env.activation.activated = env.activation.bare;
  env.tools.push_back({"xpu-smi", ""});
  const auto judged = testing::judge_checks("- {id: c, kind: tools, on_path: [xpu-smi]}", env);
  EXPECT_EQ(check_of(judged, "c").status, CheckStatus::error) << shown(check_of(judged, "c"));
  EXPECT_EQ(judged.verdict, EnvVerdict::error);
}

// A forbidden library the loader finds through its cache or its default
// directories is found whatever activation puts before them: a fault even
// when activation failed. One found on the (bare) LD_LIBRARY_PATH is not.
TEST(SystemJudges, AForbiddenLibraryOfTheCacheFailsEvenWhenActivationFailed) {
  auto env = env_facts();
  env.activation.problem = "activation exited with status 1";
  env.activation.activated = env.activation.bare;
  env.library_lookups.push_back(
      found("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "ld.so.cache"));
  const auto cached = judge_one("- {id: c, kind: libraries, absent: [libcuda.so.1]}", env);
  EXPECT_EQ(cached.status, CheckStatus::fail) << shown(cached);
  EXPECT_EQ(cause_of(cached), "forbidden_library");

  env.library_lookups.back().found_via = "LD_LIBRARY_PATH";
  const auto on_path = judge_one("- {id: c, kind: libraries, absent: [libcuda.so.1]}", env);
  EXPECT_EQ(on_path.status, CheckStatus::error) << shown(on_path);
}

// ---- glibc -----------------------------------------------------------------

// Versions compare number by number: 2.9 is older than 2.17, though it
// sorts after it as text.
TEST(SystemJudges, AnOlderGlibcFailsComparedNumerically) {
  auto env = env_facts();
  env.glibc.version = "2.9";
  env.glibc.path = "/lib/x86_64-linux-gnu/libc.so.6";
  const auto result = judge_one("- {id: c, kind: glibc, min_version: '2.17'}", env);
  EXPECT_EQ(result.status, CheckStatus::fail) << shown(result);
  EXPECT_EQ(cause_of(result), "glibc_too_old");
  EXPECT_EQ(result.actual, "2.9");
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary,
            "glibc 2.9 (/lib/x86_64-linux-gnu/libc.so.6), the contract wants >= 2.17");
  EXPECT_EQ(result.diagnosis->evidence["path"], "/lib/x86_64-linux-gnu/libc.so.6");
  env.glibc.version = "2.17";
  EXPECT_EQ(judge_one("- {id: c, kind: glibc, min_version: '2.17'}", env).status,
            CheckStatus::pass);
  env.glibc.version = "2.39";
  EXPECT_EQ(judge_one("- {id: c, kind: glibc, min_version: '2.17'}", env).status,
            CheckStatus::pass);
}

// An unknown C library is neither new enough nor too old.
TEST(SystemJudges, AnUnknownGlibcIsAnErrorSayingWhy) {
  auto env = env_facts();
  env.glibc.problem = "libc.so.6 cannot be found by the env's loader";
  const auto result = judge_one("- {id: c, kind: glibc, min_version: '2.17'}", env);
  EXPECT_EQ(result.status, CheckStatus::error) << shown(result);
  EXPECT_EQ(cause_of(result), "probe_error");
  EXPECT_TRUE(result.actual.is_null());
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->summary,
            "the C library's version is unknown: libc.so.6 cannot be found by the env's loader");
  EXPECT_EQ(result.diagnosis->evidence["glibc"]["problem"],
            "libc.so.6 cannot be found by the env's loader");
}

}  // namespace
}  // namespace envcontract
