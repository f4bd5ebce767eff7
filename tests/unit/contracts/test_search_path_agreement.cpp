// contracts/search_path_agreement.cpp: where the interpreter imported each module from against
// where the env's files say `import` finds it, and its version against the files'.
#include "contracts/search_path_agreement.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace envcontract::contracts {
namespace {

using facts::Activation;

// A venv of Debian's system Python with system site packages: its own
// site-packages first, then Debian's dist-packages (sys.path order).
constexpr const char* k_prefix = "/home/alice/venvs/ml";
constexpr const char* k_venv_site = "/home/alice/venvs/ml/lib/python3.11/site-packages";
constexpr const char* k_local_dist = "/usr/local/lib/python3.11/dist-packages";
constexpr const char* k_debian_dist = "/usr/lib/python3/dist-packages";
constexpr const char* k_stdlib = "/usr/lib/python3.11";

struct Module {
  std::string name;
  std::string real;  // the package dir or module file, links resolved
};

facts::EnvFacts env_with(const std::vector<Module>& modules) {
  facts::EnvFacts env;
  env.env.name = "ml";
  env.env.prefix = k_prefix;
  env.env.kind = facts::EnvKind::venv;
  env.env.python = std::string(k_prefix) + "/bin/python";
  env.env.python_version = "3.11.2";
  auto& path = env.static_facts.search_path;
  path.stdlib = k_stdlib;
  path.base_prefix = "/usr";
  path.debian_layout = true;
  for (const char* site : {k_venv_site, k_local_dist, k_debian_dist}) {
    path.entries.push_back({site, "site-packages", true});
    env.static_facts.site_packages.emplace_back(site);
  }
  for (const auto& module : modules) {
    env.static_facts.module_files.add(module.name, module.real, module.real);
  }
  env.static_facts.module_files.finish();
  return env;
}

facts::ProbeRecord imported(const std::string& module, std::optional<std::string> realpath) {
  facts::ProbeRecord record;
  record.type = "import";
  record.module = module;
  record.ok = true;
  record.file = realpath;
  record.realpath = std::move(realpath);
  return record;
}

facts::ProbeRecord search_path_record(const std::string& version,
                                      std::vector<std::string> entries) {
  facts::ProbeRecord record;
  record.type = "search_path";
  record.version = version;
  record.entries = std::move(entries);
  return record;
}

facts::StageResult stage(const std::string& name, Activation activation,
                         std::vector<facts::ProbeRecord> records) {
  facts::StageResult result;
  result.stage = name;
  result.activation = activation;
  result.status = facts::StageStatus::ok;
  result.records = std::move(records);
  return result;
}

void add_stage(facts::EnvFacts& env, facts::StageResult result) {
  if (!env.dynamic) {
    env.dynamic = facts::DynamicFacts{};
  }
  env.dynamic->stages.push_back(std::move(result));
}

std::optional<CheckResult> agreement(const facts::EnvFacts& env) {
  return search_path_agreement(EnvFactsView(env));
}

const std::string k_numpy = std::string(k_venv_site) + "/numpy";

TEST(SearchPathAgreement, WithoutDynamicFactsThereIsNothingToCompare) {
  EXPECT_FALSE(agreement(env_with({{"numpy", k_numpy}})));
}

TEST(SearchPathAgreement, AnImportFromWhereTheFilesSayAgrees) {
  auto env = env_with({{"numpy", k_numpy}, {"six", std::string(k_debian_dist) + "/six.py"}});
  add_stage(env, stage("imports", Activation::activated,
                       {imported("numpy", k_numpy + "/__init__.py"),
                        imported("six", std::string(k_debian_dist) + "/six.py")}));
  EXPECT_FALSE(agreement(env));
}

// The classic: a venv with system site packages whose interpreter imports
// Debian's python3-numpy while the files say the venv's own copy.
TEST(SearchPathAgreement, AnImportOfAnotherCopyIsAnErrorNamingBothPaths) {
  auto env = env_with({{"numpy", k_numpy}});
  const std::vector<std::string> sys_path = {"/usr/lib/python311.zip", k_stdlib, k_debian_dist,
                                             k_venv_site};
  const std::string debian_numpy = std::string(k_debian_dist) + "/numpy/__init__.py";
  add_stage(env, stage("imports", Activation::activated,
                       {search_path_record("3.11.2", sys_path), imported("numpy", debian_numpy)}));
  const auto result = agreement(env);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->id, "env:search-path");
  EXPECT_EQ(result->kind, "env_search_path");
  EXPECT_EQ(result->severity, Severity::required);
  EXPECT_EQ(result->status, CheckStatus::error) << "never a silent pick of one side";
  ASSERT_TRUE(result->diagnosis);
  EXPECT_EQ(result->diagnosis->cause, "facts_disagree");
  ASSERT_EQ(result->actual.size(), 1U);
  EXPECT_EQ(result->actual[0]["module"], "numpy");
  EXPECT_EQ(result->actual[0]["interpreter"], debian_numpy);
  EXPECT_EQ(result->actual[0]["files"], k_numpy);
  EXPECT_EQ(result->actual[0]["activation"], "activated");
  const auto& evidence = result->diagnosis->evidence;
  EXPECT_EQ(evidence["disagreements"], result->actual);
  EXPECT_EQ(evidence["interpreter_sys_path"], Json(sys_path));
  EXPECT_TRUE(evidence["static_search_path"].is_object());
}

// The static search path is the activated one's: a bare run (no
// activate.d, no PYTHONPATH from it) may rightly import something else.
TEST(SearchPathAgreement, OnlyImportsMadeUnderActivationCompare) {
  auto env = env_with({{"numpy", k_numpy}});
  add_stage(env, stage("imports", Activation::bare,
                       {imported("numpy", std::string(k_debian_dist) + "/numpy/__init__.py")}));
  EXPECT_FALSE(agreement(env));
  add_stage(env, stage("imports", Activation::activated,
                       {imported("numpy", std::string(k_debian_dist) + "/numpy/__init__.py")}));
  const auto activated = agreement(env);
  ASSERT_TRUE(activated) << "the same import made activated does count";
  EXPECT_EQ(activated->actual.size(), 1U);
}

// "numpy.linalg" lives in numpy's directory: compared by its top-level package.
TEST(SearchPathAgreement, ASubmoduleIsComparedByItsTopLevelPackage) {
  auto env = env_with({{"numpy", k_numpy}, {"yaml", std::string(k_venv_site) + "/yaml"}});
  add_stage(env, stage("imports", Activation::activated,
                       {imported("numpy.linalg", k_numpy + "/linalg/__init__.py"),
                        imported("yaml.loader", std::string(k_debian_dist) + "/yaml/loader.py")}));
  const auto result = agreement(env);
  ASSERT_TRUE(result);
  ASSERT_EQ(result->actual.size(), 1U);
  EXPECT_EQ(result->actual[0]["module"], "yaml");
}

// "numpy_old" beside "numpy" is not inside it.
TEST(SearchPathAgreement, ACopyWhosePathOnlyStartsLikeTheIndexedOneDisagrees) {
  auto env = env_with({{"numpy", k_numpy}, {"six", std::string(k_venv_site) + "/six.py"}});
  add_stage(env, stage("imports", Activation::activated,
                       {imported("numpy", k_numpy + "_old/__init__.py"),
                        imported("six", std::string(k_venv_site) + "/six.pyc")}));
  const auto result = agreement(env);
  ASSERT_TRUE(result);
  ASSERT_EQ(result->actual.size(), 2U);
  EXPECT_EQ(result->actual[0]["module"], "numpy");
  EXPECT_EQ(result->actual[1]["module"], "six");
}

// Both sides name files with links resolved: a venv whose numpy is a link
// into a shared pool agrees with the pool's path.
TEST(SearchPathAgreement, RealPathsAreCompared) {
  auto env = env_with({});
  env.static_facts.module_files = {};
  env.static_facts.module_files.add("numpy", k_numpy, "/srv/pool/numpy-1.26.4/numpy");
  env.static_facts.module_files.finish();
  add_stage(env, stage("imports", Activation::activated,
                       {imported("numpy", "/srv/pool/numpy-1.26.4/numpy/__init__.py")}));
  EXPECT_FALSE(agreement(env));
}

TEST(SearchPathAgreement, EachModuleIsListedOnce) {
  auto env = env_with({{"numpy", k_numpy}});
  const std::string elsewhere = "/tmp/numpy/__init__.py";
  add_stage(env, stage("imports", Activation::activated, {imported("numpy", elsewhere)}));
  add_stage(env, stage("smoke:first-op", Activation::activated,
                       {imported("numpy", elsewhere), imported("numpy.fft", elsewhere)}));
  const auto result = agreement(env);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->actual.size(), 1U);
}

// Built-in modules and namespace packages have no __file__: nothing to compare.
TEST(SearchPathAgreement, AnImportWithoutAFileIsNotCompared) {
  auto env = env_with({{"numpy", k_numpy}});
  add_stage(env, stage("imports", Activation::activated,
                       {imported("sys", std::nullopt), imported("google", std::nullopt)}));
  EXPECT_FALSE(agreement(env));
}

// Modules the files never indexed: the standard library proper (and its
// lib-dynload) is where they may come from; a site dir kept under it is not
// the standard library.
TEST(SearchPathAgreement, AnUnindexedModuleAgreesOnlyFromTheStandardLibraryProper) {
  auto env = env_with({});
  add_stage(env,
            stage("imports", Activation::activated,
                  {imported("json", std::string(k_stdlib) + "/json/__init__.py"),
                   imported("_ssl", std::string(k_stdlib) +
                                        "/lib-dynload/_ssl.cpython-311-x86_64-linux-gnu.so")}));
  EXPECT_FALSE(agreement(env));

  for (const std::string& elsewhere :
       {std::string(k_stdlib) + "/dist-packages/apt/__init__.py",
        std::string(k_stdlib) + "/site-packages/apt/__init__.py",
        std::string(k_stdlib) + "-extra/apt/__init__.py", std::string("/tmp/apt/__init__.py")}) {
    auto other = env_with({});
    add_stage(other, stage("imports", Activation::activated, {imported("apt", elsewhere)}));
    const auto result = agreement(other);
    ASSERT_TRUE(result) << elsewhere;
    ASSERT_EQ(result->actual.size(), 1U);
    EXPECT_TRUE(result->actual[0]["files"].is_null()) << "the files lead nowhere";
    EXPECT_EQ(result->actual[0]["interpreter"], elsewhere);
  }
}

// A base the facts could not find is noted in the facts already: its
// modules are not held against the env.
TEST(SearchPathAgreement, WithoutAKnownStandardLibraryAnUnindexedModuleIsNotHeldAgainstTheEnv) {
  auto env = env_with({});
  env.static_facts.search_path.stdlib.clear();
  add_stage(env, stage("imports", Activation::activated,
                       {imported("json", "/opt/python3.11/lib/python3.11/json/__init__.py")}));
  EXPECT_FALSE(agreement(env));
}

TEST(SearchPathAgreement, AnotherPatchReleaseIsTheSamePython) {
  auto env = env_with({});
  env.env.python_version = "3.11";  // only lib/python3.11 told it
  add_stage(env,
            stage("imports", Activation::activated, {search_path_record("3.11.9", {k_stdlib})}));
  EXPECT_FALSE(agreement(env));
  env.env.python_version = "3.11.2";
  EXPECT_FALSE(agreement(env));
}

// A bin/python that is another Python reads other site dirs: that outranks
// any module's disagreement, which follows from it.
TEST(SearchPathAgreement, AnInterpreterOfAnotherPythonIsReportedFirst) {
  auto env = env_with({{"numpy", k_numpy}});
  env.env.python_version = "3.10.12";
  add_stage(env, stage("imports", Activation::activated,
                       {search_path_record("3.11.2", {k_stdlib}),
                        imported("numpy", std::string(k_debian_dist) + "/numpy/__init__.py")}));
  const auto result = agreement(env);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->id, "env:search-path");
  EXPECT_EQ(result->status, CheckStatus::error);
  EXPECT_EQ(result->actual, (Json{{"interpreter", "3.11.2"}, {"files", "3.10.12"}}));
  ASSERT_TRUE(result->diagnosis);
  EXPECT_EQ(result->diagnosis->cause, "facts_disagree");
  EXPECT_EQ(result->diagnosis->evidence["interpreter_python"], "3.11.2");
  EXPECT_EQ(result->diagnosis->evidence["files_python"], "3.10.12");
  EXPECT_EQ(result->diagnosis->evidence["python"], std::string(k_prefix) + "/bin/python");
}

// The version a bare run reported is not the activated interpreter's.
TEST(SearchPathAgreement, OnlyTheActivatedInterpretersVersionCounts) {
  auto env = env_with({});
  add_stage(env, stage("imports", Activation::bare, {search_path_record("3.12.1", {})}));
  EXPECT_FALSE(agreement(env));
  add_stage(env, stage("imports", Activation::activated, {search_path_record("3.12.1", {})}));
  const auto activated = agreement(env);
  ASSERT_TRUE(activated);
  EXPECT_EQ(activated->actual["interpreter"], "3.12.1");
}

}  // namespace
}  // namespace envcontract::contracts
