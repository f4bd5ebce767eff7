// Activation runs the env's real scripts in a clean bash and records both
// environments.
#include "probes/activation.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>

#include <fstream>

#include "discovery/discovery.hpp"
#include "probes/host_facts.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::probes {
namespace {

namespace fs = std::filesystem;
using testing::demo_host;

PythonEnv env_at(const fs::path& prefix) {
  const auto env = discovery::describe_prefix(prefix);
  EXPECT_TRUE(env.has_value()) << prefix;
  return env.value_or(PythonEnv{});
}

// A conda env whose activate.d holds `script`.
PythonEnv conda_env_with_script(const testing::TempDir& dir, const std::string& name,
                                const std::string& script) {
  const fs::path prefix = dir.path() / name;
  fs::create_directories(prefix / "conda-meta");
  fs::create_directories(prefix / "bin");
  fs::create_symlink("/bin/true", prefix / "bin" / "python");
  dir.write(name + "/etc/conda/activate.d/vendor.sh", script);
  return env_at(prefix);
}

TEST(Activation, CondaActivateDSetsTheVendorLibraryPath) {
  const auto env = env_at(demo_host() / "miniconda3/envs/torch-fl-activate");
  const auto activation = activate(env);
  ASSERT_EQ(activation.problem, "");
  const std::string xpu_root = (demo_host() / "usr/local/xpu").string();
  EXPECT_EQ(activation.activated.at("XPU_ROOT"), xpu_root);
  EXPECT_TRUE(activation.activated.at("LD_LIBRARY_PATH").starts_with(xpu_root + "/lib:"));
  EXPECT_EQ(activation.activated.at("CONDA_PREFIX"), env.prefix.string());
  EXPECT_EQ(activation.activated.at("CONDA_DEFAULT_ENV"), "torch-fl-activate");
  EXPECT_TRUE(activation.activated.at("PATH").starts_with((env.prefix / "bin").string() + ":"));
  EXPECT_FALSE(activation.bare.contains("LD_LIBRARY_PATH"));
  EXPECT_FALSE(activation.bare.contains("CONDA_PREFIX"));
  ASSERT_EQ(activation.scripts.size(), 1U);
  EXPECT_EQ(activation.scripts[0].filename(), "xpu_env.sh");
}

TEST(Activation, VenvActivateScript) {
  const auto env = env_at(demo_host() / "venvs/xpu210v");
  const auto activation = activate(env);
  ASSERT_EQ(activation.problem, "");
  EXPECT_EQ(activation.activated.at("VIRTUAL_ENV"), env.prefix.string());
  EXPECT_TRUE(activation.activated.at("PATH").starts_with((env.prefix / "bin").string()));
}

TEST(Activation, TheAgentsOwnEnvironmentNeverLeaks) {
  ::setenv("ENVCONTRACT_TEST_SECRET", "hunter2", 1);
  const auto env = env_at(demo_host() / "miniconda3/envs/torch-fl-cpu");
  const auto activation = activate(env);
  ::unsetenv("ENVCONTRACT_TEST_SECRET");
  EXPECT_FALSE(activation.activated.contains("ENVCONTRACT_TEST_SECRET"));
  EXPECT_FALSE(activation.bare.contains("ENVCONTRACT_TEST_SECRET"));
  // HOME, USER and LOGNAME are those of the user the env's code runs as:
  // the env is root's, so a uid of its own, which has no home.
  EXPECT_EQ(env.run_as.user, std::to_string(env.run_as.uid));
  EXPECT_EQ(activation.bare.at("HOME"), "/nonexistent");
  EXPECT_EQ(activation.bare.at("USER"), env.run_as.user);
  EXPECT_EQ(activation.bare.at("LOGNAME"), env.run_as.user);
  // A user named by configuration: that user's.
  const auto as_nobody =
      discovery::describe_prefix(env.prefix, process::RunAsPolicy("nobody")).value();
  const passwd* nobody = ::getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  const auto activated_as_nobody = activate(as_nobody);
  EXPECT_EQ(activated_as_nobody.bare.at("HOME"), nobody->pw_dir);
  EXPECT_EQ(activated_as_nobody.bare.at("USER"), "nobody");
  EXPECT_EQ(activated_as_nobody.bare.at("LOGNAME"), "nobody");
}

TEST(Activation, ScriptOutputCannotCorruptTheEnvironment) {
  testing::TempDir dir;
  const auto env = conda_env_with_script(
      dir, "noisy", "echo 'FAKE=injected'; printf 'X=1\\0Y=2\\0'; export REAL=\"a\nb=c\"\n");
  const auto activation = activate(env);
  ASSERT_EQ(activation.problem, "");
  EXPECT_FALSE(activation.activated.contains("FAKE"));
  EXPECT_FALSE(activation.activated.contains("X"));
  EXPECT_EQ(activation.activated.at("REAL"), "a\nb=c");
  EXPECT_NE(activation.script_output.find("FAKE=injected"), std::string::npos);
}

TEST(Activation, PrefixWithShellMetacharactersIsOnlyData) {
  testing::TempDir dir;
  const auto env =
      conda_env_with_script(dir, "it's $(touch pwned) ü", "export SEEN_PREFIX=\"$CONDA_PREFIX\"\n");
  const auto activation = activate(env);
  ASSERT_EQ(activation.problem, "");
  EXPECT_EQ(activation.activated.at("SEEN_PREFIX"), env.prefix.string());
  EXPECT_FALSE(fs::exists(env.prefix / "pwned"));
  EXPECT_FALSE(fs::exists(dir.path() / "pwned"));
}

TEST(Activation, FailingAndHangingScriptsAreProblems) {
  testing::TempDir dir;
  const auto failing = conda_env_with_script(dir, "failing", "echo broken >&2; exit 3\n");
  const auto failed = activate(failing);
  // How it failed is the problem; what it printed is kept apart, for the
  // local verbs only (a `set -x` trace would show every value it sets).
  EXPECT_EQ(failed.problem, "activation exit 3");
  EXPECT_EQ(failed.problem_output, "broken");
  EXPECT_EQ(failed.activated, failed.bare);

  const auto hanging = conda_env_with_script(dir, "hanging", "sleep 60\n");
  const auto hung = activate(hanging, std::chrono::milliseconds(300));
  EXPECT_TRUE(hung.problem.starts_with("activation timed out")) << hung.problem;
}

// An activate.d script is the env's code: it runs under the limits the
// agent's configuration gives probes (probe_limits), not the defaults.
TEST(Activation, ScriptsRunUnderTheConfiguredProbeLimits) {
  testing::TempDir dir;
  const auto env = conda_env_with_script(
      dir, "limited", "export SEEN_NOFILE=\"$(ulimit -n)\" SEEN_DATA=\"$(ulimit -d)\"\n");
  process::ResourceLimits limits;
  limits.open_files = 123;
  limits.memory_bytes = 300ULL << 20;
  const auto direct = activate(env, std::chrono::seconds(30), nullptr, limits);
  ASSERT_EQ(direct.problem, "");
  EXPECT_EQ(direct.activated.at("SEEN_NOFILE"), "123");
  EXPECT_EQ(direct.activated.at("SEEN_DATA"), std::to_string(300 * 1024));  // in KiB

  ActivationCache cache;
  EXPECT_EQ(cache.get(env, nullptr, limits).activated.at("SEEN_NOFILE"), "123");

  // And through a host's facts, as a scan reads them.
  HostFactsOptions options;
  options.discovery.prefixes = {env.prefix};
  options.probe_limits = limits;
  const auto host = gather_host_facts(options, std::make_shared<FactCaches>());
  ASSERT_EQ(host.envs.size(), 1U);
  EXPECT_EQ(host.envs[0].activation.activated.at("SEEN_NOFILE"), "123");
}

TEST(Activation, CondaEnvVarsAreAppliedBeforeActivateD) {
  testing::TempDir dir;
  const auto env = conda_env_with_script(dir, "vars", "export SEEN=\"$FROM_STATE\"\n");
  dir.write("vars/conda-meta/state", R"({"env_vars": {"FROM_STATE": "state-value"}})");
  dir.write("vars/etc/conda/env_vars.d/vendor.json", R"({"FROM_JSON": "json-value"})");
  const auto activation = activate(env);
  ASSERT_EQ(activation.problem, "");
  EXPECT_EQ(activation.activated.at("SEEN"), "state-value");
  EXPECT_EQ(activation.activated.at("FROM_JSON"), "json-value");
}

TEST(Activation, CacheReusesUntilAScriptChanges) {
  testing::TempDir dir;
  const auto env = conda_env_with_script(dir, "cached", "export VERSION=1\n");
  ActivationCache cache;
  EXPECT_EQ(cache.get(env).activated.at("VERSION"), "1");
  EXPECT_EQ(cache.get(env).activated.at("VERSION"), "1");
  EXPECT_EQ(cache.activations_run(), 1U);
  dir.write("cached/etc/conda/activate.d/vendor.sh", "export VERSION=22\n");
  EXPECT_EQ(cache.get(env).activated.at("VERSION"), "22");
  EXPECT_EQ(cache.activations_run(), 2U);
  dir.write("cached/etc/conda/activate.d/zz-more.sh", "export MORE=yes\n");
  EXPECT_EQ(cache.get(env).activated.at("MORE"), "yes");
  EXPECT_EQ(cache.activations_run(), 3U);
  // Rewritten in place to the same size, its modification time put back
  // (as tar or rsync -t leave it): still run again.
  const auto script = dir.path() / "cached/etc/conda/activate.d/vendor.sh";
  struct stat before {};
  ASSERT_EQ(::stat(script.c_str(), &before), 0);
  std::ofstream(script, std::ios::in | std::ios::out | std::ios::binary) << "export VERSION=33\n";
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, script.c_str(), times, 0), 0);
  EXPECT_EQ(cache.get(env).activated.at("VERSION"), "33");
  EXPECT_EQ(cache.activations_run(), 4U);
}

TEST(Activation, ChangesListWhatActivationDid) {
  const auto changes =
      environment_changes({{"A", "1"}, {"B", "2"}}, {{"A", "1"}, {"B", "3"}, {"C", "4"}});
  ASSERT_EQ(changes.size(), 2U);
  EXPECT_EQ(changes[0].name, "B");
  EXPECT_EQ(changes[0].before, "2");
  EXPECT_EQ(changes[0].after, "3");
  EXPECT_EQ(changes[1].name, "C");
  EXPECT_EQ(changes[1].before, "");
}

}  // namespace
}  // namespace envcontract::probes
