// contracts/env_facts.cpp: the lookups judges share over one env's facts (EnvFactsView), and
// the helpers that show facts as evidence.
#include "contracts/env_facts.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace envcontract::contracts {
namespace {

using facts::Activation;
using Strings = std::vector<std::string>;

constexpr const char* k_prefix = "/opt/conda/envs/xpu";
constexpr const char* k_site = "/opt/conda/envs/xpu/lib/python3.10/site-packages";
constexpr const char* k_user_site = "/home/alice/.local/lib/python3.10/site-packages";

// A conda env whose search path has its own site dir, then the user site.
facts::EnvFacts conda_env() {
  facts::EnvFacts env;
  env.env.name = "xpu";
  env.env.prefix = k_prefix;
  env.env.python = std::string(k_prefix) + "/bin/python";
  env.env.python_version = "3.10.13";
  env.static_facts.site_packages = {k_site, k_user_site};
  env.activation.bare = {{"PATH", "/usr/bin:/bin"}};
  env.activation.activated = {{"PATH", std::string(k_prefix) + "/bin:/usr/bin:/bin"},
                              {"CONDA_PREFIX", k_prefix},
                              {"XPU_HOME", "/opt/kunlunxin/xre"}};
  return env;
}

facts::StageResult stage(const std::string& name, Activation activation,
                         std::vector<facts::ProbeRecord> records = {}) {
  facts::StageResult result;
  result.stage = name;
  result.activation = activation;
  result.status = facts::StageStatus::ok;
  result.records = std::move(records);
  return result;
}

facts::ProbeRecord record(const std::string& type, const std::string& module = "") {
  facts::ProbeRecord probe_record;
  probe_record.type = type;
  probe_record.module = module;
  return probe_record;
}

facts::ProbeRecord search_path_reporting(std::optional<std::string> version) {
  auto search_path = record("search_path");
  search_path.version = std::move(version);
  return search_path;
}

TEST(EnvFactsView, SiteDirsAreTheStaticFactsInSysPathOrder) {
  const auto env = conda_env();
  const EnvFactsView view(env);
  EXPECT_EQ(view.prefix(), k_prefix);
  EXPECT_EQ(view.python_version(), "3.10.13");
  EXPECT_EQ(view.site(), k_site);
  EXPECT_EQ(view.sites(), (Strings{k_site, k_user_site}));
}

// Judges take the first expansion of a {site} pattern: there is always one,
// under the env's prefix, even when the search path could not be read.
TEST(EnvFactsView, WithoutKnownSiteDirsThereIsStillOneUnderThePrefix) {
  auto env = conda_env();
  env.static_facts.site_packages.clear();
  const EnvFactsView view(env);
  ASSERT_EQ(view.sites().size(), 1U);
  EXPECT_EQ(view.sites().front(), view.site());
  EXPECT_TRUE(view.site().starts_with(std::string(k_prefix) + "/")) << view.site();
  EXPECT_EQ(view.expand_all("{site}/torch/lib").size(), 1U);
}

TEST(EnvFactsView, SeenByEnvDropsTheSystemRootItLiesIn) {
  auto env = conda_env();
  EXPECT_EQ(EnvFactsView(env).seen_by_env("/opt/conda/bin/python"), "/opt/conda/bin/python")
      << "an env of the host sees paths as the agent does";

  const std::string root = "/var/lib/containers/storage/overlay/3f2a/merged";
  env.env.system_root = root;
  const EnvFactsView view(env);
  EXPECT_EQ(view.seen_by_env(root + "/opt/conda/bin/python"), "/opt/conda/bin/python");
  EXPECT_EQ(view.seen_by_env(root), "/");
  EXPECT_EQ(view.seen_by_env("/etc/passwd"), "/etc/passwd") << "outside the root: unchanged";
  EXPECT_EQ(view.seen_by_env(root + "-old/opt/x"), root + "-old/opt/x")
      << "a sibling whose name starts like the root is not under it";

  env.env.system_root = root + "/";
  EXPECT_EQ(EnvFactsView(env).seen_by_env(root + "/usr/lib"), "/usr/lib");
}

TEST(EnvFactsView, EnvironmentIsTheActivatedOrTheBareOne) {
  const auto env = conda_env();
  const EnvFactsView view(env);
  EXPECT_EQ(view.environment(Activation::activated).at("CONDA_PREFIX"), k_prefix);
  EXPECT_FALSE(view.environment(Activation::bare).contains("CONDA_PREFIX"));
  EXPECT_EQ(view.environment(Activation::bare).at("PATH"), "/usr/bin:/bin");
}

TEST(EnvFactsView, BareLinkageIsEmptyUnlessActivationChangesTheLibraryPath) {
  auto env = conda_env();
  facts::LibraryLinkage torch_lib;
  torch_lib.path = std::string(k_site) + "/torch/lib/libtorch_cpu.so";
  env.linkage.libraries = {torch_lib};
  {
    const EnvFactsView view(env);
    ASSERT_EQ(view.libraries().size(), 1U);
    EXPECT_EQ(view.libraries(Activation::activated).front().path, torch_lib.path);
    EXPECT_TRUE(view.libraries(Activation::bare).empty());
  }
  facts::LibraryLinkage bare_lib;
  bare_lib.path = std::string(k_site) + "/torch/lib/libc10.so";
  env.bare_linkage = facts::LinkageFacts{};
  env.bare_linkage->libraries = {bare_lib};
  const EnvFactsView view(env);
  ASSERT_EQ(view.libraries(Activation::bare).size(), 1U);
  EXPECT_EQ(view.libraries(Activation::bare).front().path, bare_lib.path);
  EXPECT_EQ(view.libraries().front().path, torch_lib.path);
}

TEST(EnvFactsView, AStageIsFoundByItsNameAndActivation) {
  auto env = conda_env();
  EXPECT_FALSE(EnvFactsView(env).has_dynamic_facts());
  EXPECT_EQ(EnvFactsView(env).stage("imports"), nullptr) << "dynamic probes did not run";

  env.dynamic = facts::DynamicFacts{};
  env.dynamic->stages = {stage("identity", Activation::bare),
                         stage("imports", Activation::bare, {record("import", "bare")}),
                         stage("imports", Activation::activated, {record("import", "activated")}),
                         stage("devices:gpus", Activation::activated)};
  const EnvFactsView view(env);
  EXPECT_TRUE(view.has_dynamic_facts());
  const auto* activated = view.stage("imports");
  ASSERT_NE(activated, nullptr);
  EXPECT_EQ(activated->activation, Activation::activated);
  EXPECT_EQ(activated->records.front().module, "activated");
  const auto* bare = view.stage("imports", Activation::bare);
  ASSERT_NE(bare, nullptr);
  EXPECT_EQ(bare->records.front().module, "bare");
  EXPECT_EQ(view.stage("identity"), nullptr) << "only its bare run is recorded";
  EXPECT_NE(view.stage("devices:gpus"), nullptr);
  EXPECT_EQ(view.stage("devices"), nullptr) << "stages are named whole";
}

TEST(EnvFactsView, AnActivationArtifactIsFoundByItsStage) {
  auto env = conda_env();
  EXPECT_EQ(EnvFactsView(env).activation_artifact("imports"), nullptr);
  env.dynamic = facts::DynamicFacts{};
  env.dynamic->artifacts = {{"imports", facts::StageStatus::failed, facts::StageStatus::ok,
                             "works only when activated: import torch_xmlir"}};
  const EnvFactsView view(env);
  const auto* artifact = view.activation_artifact("imports");
  ASSERT_NE(artifact, nullptr);
  EXPECT_EQ(artifact->bare, facts::StageStatus::failed);
  EXPECT_EQ(artifact->activated, facts::StageStatus::ok);
  EXPECT_EQ(view.activation_artifact("identity"), nullptr);
}

// The version the activated interpreter reported of itself, from its first
// search_path record that has one.
TEST(EnvFactsView, TheInterpreterVersionIsTheActivatedInterpretersOwn) {
  auto env = conda_env();
  EXPECT_EQ(EnvFactsView(env).interpreter_version(), "");
  env.dynamic = facts::DynamicFacts{};
  env.dynamic->stages = {
      stage("identity", Activation::bare, {search_path_reporting("3.12.1")}),
      stage("identity", Activation::activated,
            {record("import", "torch"), search_path_reporting(std::nullopt),
             search_path_reporting("")}),
      stage("imports", Activation::activated, {search_path_reporting("3.10.13")})};
  EXPECT_EQ(EnvFactsView(env).interpreter_version(), "3.10.13");
  env.dynamic->stages.pop_back();
  EXPECT_EQ(EnvFactsView(env).interpreter_version(), "")
      << "a bare run's interpreter is not the activated one's";
}

TEST(EnvFactsView, PatternsExpandOncePerSiteDirWhenTheyNameOne) {
  const auto env = conda_env();
  const EnvFactsView view(env);
  EXPECT_EQ(view.expand_all("{site}/torch/lib/libtorch.so"),
            (Strings{std::string(k_site) + "/torch/lib/libtorch.so",
                     std::string(k_user_site) + "/torch/lib/libtorch.so"}));
  EXPECT_EQ(view.expand_all("{prefix}/lib/libxpurt.so*"),
            (Strings{std::string(k_prefix) + "/lib/libxpurt.so*"}));
  EXPECT_EQ(view.expand_all("/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
            (Strings{"/usr/lib/x86_64-linux-gnu/libcuda.so.1"}));
}

// ${VAR} is the activated environment's: what the env's processes get.
TEST(EnvFactsView, VariablesComeFromTheActivatedEnvironment) {
  const auto env = conda_env();
  const EnvFactsView view(env);
  EXPECT_EQ(view.expand_all("${XPU_HOME}/so"), (Strings{"/opt/kunlunxin/xre/so"}));
  EXPECT_EQ(view.expand_all("${CONDA_PREFIX}/lib"), (Strings{std::string(k_prefix) + "/lib"}));
  EXPECT_EQ(view.unset_variables("${XPU_HOME}/so:${CUDA_HOME}/lib64:${LD_LIBRARY_PATH}"),
            (Strings{"CUDA_HOME", "LD_LIBRARY_PATH"}));
  EXPECT_TRUE(view.unset_variables("{prefix}/lib").empty());

  const auto anchors = view.anchors();
  EXPECT_EQ(anchors.prefix, k_prefix);
  EXPECT_EQ(anchors.sites, view.sites());
  EXPECT_EQ(anchors.variables, env.activation.activated);
}

// An env of a container's rootfs: {prefix} and {site} are read under the
// root on the host, but what the env's processes report names them without
// it, and so must the patterns compared with that.
TEST(EnvFactsView, PatternsAsTheEnvSeesThemDropTheSystemRoot) {
  const std::string root = "/var/lib/docker/overlay2/9c1e/merged";
  auto env = conda_env();
  env.env.system_root = root;
  env.env.prefix = root + k_prefix;
  env.static_facts.site_packages = {root + k_site};
  const EnvFactsView view(env);
  EXPECT_EQ(view.expand_all("{site}/torch"), (Strings{root + k_site + "/torch"}))
      << "the agent reads under the root";
  EXPECT_EQ(view.expand_all_as_env_sees("{site}/torch"), (Strings{std::string(k_site) + "/torch"}));
  EXPECT_EQ(view.expand_all_as_env_sees("{prefix}/lib:${XPU_HOME}/so"),
            (Strings{std::string(k_prefix) + "/lib:/opt/kunlunxin/xre/so"}));
  EXPECT_EQ(EnvFactsView(conda_env()).expand_all_as_env_sees("{site}/torch"),
            EnvFactsView(conda_env()).expand_all("{site}/torch"))
      << "an env of the host sees what the agent reads";
}

TEST(EnvFactsView, FindRecordMatchesTheTypeAndTheWholeModuleName) {
  const auto imports = stage("imports", Activation::activated,
                             {record("search_path"), record("import", "torch.cuda"),
                              record("import", "torch"), record("import", "torch_xmlir")});
  const auto* any_import = find_record(imports, "import");
  ASSERT_NE(any_import, nullptr);
  EXPECT_EQ(any_import->module, "torch.cuda") << "the first of its type";
  const auto* torch = find_record(imports, "import", "torch");
  ASSERT_NE(torch, nullptr);
  EXPECT_EQ(torch->module, "torch");
  EXPECT_EQ(find_record(imports, "import", "numpy"), nullptr);
  EXPECT_EQ(find_record(imports, "smoke"), nullptr);
  EXPECT_EQ(find_record(imports, "search_path", "torch"), nullptr);
}

TEST(EnvFactsView, OptionalValuesAreShownAsPythonAndJsonWouldShowThem) {
  EXPECT_EQ(python_text(std::nullopt), "None");
  EXPECT_EQ(python_text(std::string("12.9")), "'12.9'");
  EXPECT_EQ(python_text(std::string("")), "''") << "an empty string is not None";
  EXPECT_TRUE(optional_json(std::nullopt).is_null());
  EXPECT_EQ(optional_json(std::string("6.2.41133")), Json("6.2.41133"));
  EXPECT_EQ(optional_json(std::string("")), Json("")) << "an empty string is not null";
}

}  // namespace
}  // namespace envcontract::contracts
