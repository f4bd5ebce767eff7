// freshness/env_dependencies.cpp: what an env's facts were read from beyond
// the paths its readers noted, so that a change to any of them forgets them.
#include "freshness/env_dependencies.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "facts/path_pattern.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::freshness {
namespace {

namespace fs = std::filesystem;
using Paths = std::set<fs::path>;

// Read for every env whatever its facts: the loader's cache and the users
// and groups.
const Paths k_host_files = {"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/passwd", "/etc/group",
                            "/etc/nsswitch.conf"};

Paths with_host_files(Paths paths) {
  paths.insert(k_host_files.begin(), k_host_files.end());
  return paths;
}

process::ReadDependencies dependencies_of(const facts::EnvFacts& env,
                                          const std::vector<fs::path>& activation_inputs = {}) {
  process::ReadDependencies into;
  add_env_dependencies(env, activation_inputs, into);
  return into;
}

std::string shown(const Paths& paths) {
  std::string text;
  for (const auto& path : paths) {
    text += path.string() + " ";
  }
  return text;
}

facts::PathMatches matches_of(std::vector<std::string> expansions) {
  facts::PathMatches matches;
  matches.pattern = "as the contract wrote it";
  matches.expansions = std::move(expansions);
  return matches;
}

TEST(EnvDependencies, AnEnvOfNoFactsDependsOnTheHostFilesEveryEnvReads) {
  const auto read = dependencies_of(facts::EnvFacts{});
  EXPECT_TRUE(read.trees.empty());
  EXPECT_EQ(read.entries, Paths{"/etc/ld.so.conf.d"});
  EXPECT_EQ(read.paths, k_host_files);
  EXPECT_TRUE(read.files.empty());
  EXPECT_EQ(read.incomplete, "");
}

// The prefix and every directory import loads from are trees; the
// interpreter and an editable install's finder one path each.
TEST(EnvDependencies, ThePrefixAndSearchPathAreTreesAndTheInterpreterAPath) {
  facts::EnvFacts env;
  env.env.prefix = "/envs/torch";
  env.env.python = "/envs/torch/bin/python";
  auto& search = env.static_facts.search_path;
  search.entries.push_back({"/home/alice/src", "PYTHONPATH", false});
  search.entries.push_back({"/envs/torch/lib/python3.11/site-packages", "site-packages", true});
  search.editable.push_back(
      {"mypkg", "/home/alice/mypkg/src",
       "/envs/torch/lib/python3.11/site-packages/__editable___mypkg_finder.py"});
  search.unlisted.push_back("/home/alice/missing.zip");
  search.stdlib = "/opt/python3.11/lib/python3.11";
  env.static_facts.site_packages = {"/envs/torch/lib/python3.11/site-packages",
                                    "/home/alice/.local/lib/python3.11/site-packages"};

  const auto read = dependencies_of(env);
  EXPECT_EQ(read.trees, (Paths{"/envs/torch", "/home/alice/src",
                               "/envs/torch/lib/python3.11/site-packages", "/home/alice/mypkg/src",
                               "/home/alice/missing.zip", "/opt/python3.11/lib/python3.11",
                               "/home/alice/.local/lib/python3.11/site-packages"}));
  EXPECT_EQ(read.paths, with_host_files({"/envs/torch/bin/python",
                                         "/envs/torch/lib/python3.11/site-packages/"
                                         "__editable___mypkg_finder.py"}));
  EXPECT_EQ(read.entries, Paths{"/etc/ld.so.conf.d"});
}

// Relative and unknown ("") paths name nothing the watch could follow; the
// rest are kept as the watch keys them, normalised.
TEST(EnvDependencies, RelativePathsAreLeftOutAndAbsoluteOnesNormalised) {
  facts::EnvFacts env;
  env.env.prefix = "/envs/./torch/../torch";
  env.env.python = "bin/python";
  env.static_facts.search_path.entries.push_back({"src", "PYTHONPATH", false});
  env.static_facts.search_path.entries.push_back({"", "PYTHONPATH", false});
  env.static_facts.search_path.unlisted.push_back("/envs/torch/lib//python3.11/../x.zip");
  const auto read = dependencies_of(env, {"etc/conda/activate.d/a.sh"});
  EXPECT_EQ(read.trees, (Paths{"/envs/torch", "/envs/torch/lib/x.zip"}));
  EXPECT_EQ(read.paths, k_host_files);
}

TEST(EnvDependencies, ActivationInputsAndTheScriptsThatRanAreAPathEach) {
  facts::EnvFacts env;
  env.activation.scripts = {"/envs/torch/etc/conda/activate.d/10-cuda.sh",
                            "/opt/vendor/setvars.sh"};
  const auto read = dependencies_of(
      env, {"/envs/torch/etc/conda/activate.d/10-cuda.sh",
            "/envs/torch/etc/conda/env_vars.d/a.json", "/envs/torch/conda-meta/state"});
  EXPECT_EQ(read.paths,
            with_host_files({"/envs/torch/etc/conda/activate.d/10-cuda.sh",
                             "/envs/torch/etc/conda/env_vars.d/a.json",
                             "/envs/torch/conda-meta/state", "/opt/vendor/setvars.sh"}));
  EXPECT_TRUE(read.trees.empty());
}

// A file added to a PATH or LD_LIBRARY_PATH directory (bare or activated)
// changes what is found there: their entries are followed. Other variables
// name no directory searched, and empty or relative parts nothing.
TEST(EnvDependencies, PathAndLibraryPathDirectoriesBareOrActivatedAreEntries) {
  facts::EnvFacts env;
  env.activation.bare = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/home/alice"}};
  env.activation.activated = {
      {"PATH", "/envs/torch/bin::relative/bin:/usr/bin:/opt/x/../cuda/bin:"},
      {"LD_LIBRARY_PATH", "/opt/cuda/lib64:.:/envs/torch/lib"},
      {"PYTHONPATH", "/home/alice/src"}};
  const auto read = dependencies_of(env);
  EXPECT_EQ(read.entries, (Paths{"/usr/bin", "/bin", "/envs/torch/bin", "/opt/cuda/bin",
                                 "/opt/cuda/lib64", "/envs/torch/lib", "/etc/ld.so.conf.d"}));
  EXPECT_TRUE(read.trees.empty());
  EXPECT_EQ(read.paths, k_host_files);
}

// Where each expanded pattern looks: one path without wildcards, a
// directory's entries when only the last part has some, the tree of the
// literal part when a directory has some; a relative pattern nowhere.
TEST(EnvDependencies, ContractPatternsAreFollowedWhereTheGlobLooks) {
  facts::EnvFacts env;
  env.path_matches.push_back(matches_of({"/opt/cuda/lib64/libcudart.so.12"}));
  env.path_matches.push_back(matches_of({"/opt/intel/lib/libze_*.so", "/*.conf"}));
  env.path_matches.push_back(matches_of({"/opt/rocm-*/lib/libamdhip64.so"}));
  env.path_matches.push_back(matches_of({"/usr/lib/x86_64-linux-gnu/[a-c]*/libfoo.so"}));
  env.path_matches.push_back(matches_of({"relative/*.so", "nothing"}));
  const auto read = dependencies_of(env);
  EXPECT_EQ(read.paths, with_host_files({"/opt/cuda/lib64/libcudart.so.12"}));
  EXPECT_EQ(read.entries, (Paths{"/opt/intel/lib", "/", "/etc/ld.so.conf.d"}));
  EXPECT_EQ(read.trees, (Paths{"/opt", "/usr/lib/x86_64-linux-gnu"}));
}

// The expansions are written for glob(3) (the env's values escaped by
// expand_path_pattern(..., true)): the path followed is the one globbed, its
// escapes undone, so that a file created or removed there later forgets the
// kept facts ("\\" once escaped is one backslash of the real path).
TEST(EnvDependencies, APatternIsFollowedAtThePathTheGlobLooksAt) {
  facts::PathAnchors anchors;
  anchors.prefix = "/envs/torch";
  anchors.variables = {{"CUDA_HOME", "/opt/cu\\da"}};
  facts::EnvFacts env;
  env.path_matches.push_back(
      matches_of(facts::expand_path_pattern("${CUDA_HOME}/lib64/libcudart.so.12", anchors, true)));
  env.path_matches.push_back(
      matches_of(facts::expand_path_pattern("${CUDA_HOME}/lib64/libnv*.so", anchors, true)));
  const auto read = dependencies_of(env);
  // The paths the value names, as glob(3) matched them: one backslash.
  EXPECT_TRUE(read.paths.contains("/opt/cu\\da/lib64/libcudart.so.12"))
      << "followed instead: " << shown(read.paths);
  EXPECT_TRUE(read.entries.contains("/opt/cu\\da/lib64"))
      << "followed instead: " << shown(read.entries);
}

// A module file with other names (conda's hard links into its package
// cache) is followed by identity too; one with a single name, or that is no
// regular file, only through its directory's tree.
TEST(EnvDependencies, ModuleFilesWithOtherNamesAreFollowedAsFiles) {
  envcontract::testing::TempDir dir;
  const fs::path linked = dir.write("pkgs/numpy/__init__.py", "");
  fs::create_directories(dir.path() / "env/site/numpy");
  fs::create_hard_link(linked, dir.path() / "env/site/numpy/__init__.py");
  const fs::path single = dir.write("env/site/six.py", "");
  fs::create_directories(dir.path() / "env/site/pkg");

  facts::EnvFacts env;
  auto& modules = env.static_facts.module_files;
  modules.add("numpy", (dir.path() / "env/site/numpy/__init__.py").string(), linked.string());
  modules.add("six", single.string(), single.string());
  modules.add("pkg", (dir.path() / "env/site/pkg").string(),
              (dir.path() / "env/site/pkg").string());
  modules.finish();

  const auto read = dependencies_of(env);
  EXPECT_EQ(read.files, Paths{linked});
  EXPECT_EQ(read.trees, (Paths{dir.path() / "pkgs/numpy", dir.path() / "env/site"}));
  EXPECT_EQ(read.incomplete, "");
}

// Once the read is already incomplete its facts are never kept: no more of
// the watch's keys are spent on its modules' other names.
TEST(EnvDependencies, AnIncompleteReadFollowsNoMoreModuleFiles) {
  envcontract::testing::TempDir dir;
  const fs::path linked = dir.write("pkgs/numpy/__init__.py", "");
  fs::create_hard_link(linked, dir.path() / "other-name.py");
  facts::EnvFacts env;
  env.static_facts.module_files.add("numpy", linked.string(), linked.string());
  env.static_facts.module_files.finish();

  process::ReadDependencies read;
  read.incomplete = "more than 65536 paths";
  add_env_dependencies(env, {}, read);
  EXPECT_TRUE(read.files.empty());
  EXPECT_EQ(read.trees, Paths{dir.path() / "pkgs/numpy"});
  EXPECT_EQ(read.incomplete, "more than 65536 paths");
}

// What was noted before is kept: these are added to it.
TEST(EnvDependencies, WhatTheReadersNotedIsKept) {
  process::ReadDependencies read;
  read.paths.insert("/usr/lib/libstdc++.so.6");
  read.files.insert("/envs/torch/lib/libz.so.1");
  facts::EnvFacts env;
  env.env.prefix = "/envs/torch";
  add_env_dependencies(env, {}, read);
  EXPECT_EQ(read.paths, with_host_files({"/usr/lib/libstdc++.so.6"}));
  EXPECT_EQ(read.files, Paths{"/envs/torch/lib/libz.so.1"});
  EXPECT_EQ(read.trees, Paths{"/envs/torch"});
}

}  // namespace
}  // namespace envcontract::freshness
