// Exec prefixes: the argv each runtime's preset builds, and what crosses
// into the container through one (a real process run through a real prefix).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include "discovery/exec_prefix.hpp"
#include "discovery/python_env.hpp"
#include "process/scratch_directory.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::discovery {
namespace {

namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

// The words of `argv` before the bootstrap bash that every prefix runs.
Strings prefix_words(const process::ProcessSpec& spec) {
  Strings words;
  for (const auto& word : spec.argv) {
    if (word == "/bin/bash") {
      break;
    }
    words.push_back(word);
  }
  return words;
}

process::ProcessSpec inside_spec() {
  process::ProcessSpec inside;
  inside.argv = {"/opt/venvs/app/bin/python", "/tmp/envcontract-probe-x/probe.py"};
  inside.environment = {{"PATH", "/opt/venvs/app/bin:/usr/bin"},
                        {"HF_TOKEN", "hf_secret_value"},
                        {"LD_LIBRARY_PATH", "/opt/vendor/lib"}};
  inside.working_dir = "/opt/venvs/app";
  inside.credentials = process::Credentials{1000, 1001, {1001, 27}};
  return inside;
}

TEST(ExecPrefix, DockerAndPodmanRunAsTheAgentAndSwitchToTheEnvsUserInside) {
  for (const auto& prefix : {docker_exec_prefix("trainer", "/usr/bin/docker", "trainer-0"),
                             podman_exec_prefix("trainer", "/usr/bin/podman", "trainer-0")}) {
    const auto outer = through_prefix(prefix, inside_spec());
    // The image's own BASH_ENV or SHELLOPTS=xtrace would run a file, or print
    // the exports that carry the env's values, before the bootstrap runs.
    EXPECT_EQ(prefix_words(outer),
              (Strings{prefix.argv.front(), "exec", "-i", "--user", "1000:1001", "-e",
                       "BASH_ENV=", "-e", "ENV=", "-e", "SHELLOPTS=", "-e", "BASHOPTS=", "-e",
                       "PS4=", "-e", "ENVCONTRACT_PROBE", "--", "trainer-0"}));
    EXPECT_TRUE(prefix.runtime_client);
    // Its command is started by the runtime, not as the client's child: the
    // limits travel to the bootstrap inside, which sets them there.
    EXPECT_TRUE(outer.tree_outside);
    ASSERT_LT(outer.limits_word, outer.argv.size());
    EXPECT_EQ(outer.argv[outer.limits_word], "");
    // The client reaches the daemon's socket as the agent; the user switch
    // is the runtime's, inside.
    EXPECT_FALSE(outer.credentials.has_value());
  }
}

TEST(ExecPrefix, NsenterEntersTheContainersNamespacesAsTheEnvsUser) {
  const auto outer =
      through_prefix(nsenter_exec_prefix("trainer", "/usr/bin/nsenter", 4242), inside_spec());
  EXPECT_EQ(prefix_words(outer),
            (Strings{"/usr/bin/nsenter", "--target", "4242", "--mount", "--pid", "--uts", "--ipc",
                     "--net", "--setgid", "1001", "--setuid", "1000", "--"}));
  EXPECT_FALSE(outer.credentials.has_value());
}

TEST(ExecPrefix, ACommandLineWithoutUserPlaceholdersRunsAsTheEnvsUser) {
  const auto outer = through_prefix(
      generic_exec_prefix("box", {"/usr/bin/bwrap", "--ro-bind", "/srv/box", "/"}), inside_spec());
  ASSERT_TRUE(outer.credentials.has_value());
  EXPECT_EQ(outer.credentials->uid, 1000U);
  EXPECT_EQ(outer.credentials->groups, (std::vector<gid_t>{1001, 27}));
  // Naming {uid} is not enough to run as the agent: the configuration says so.
  EXPECT_FALSE(generic_exec_prefix("box", {"/usr/bin/x", "--user={uid}"}).switches_user);
  EXPECT_TRUE(generic_exec_prefix("box", {"/usr/bin/x", "--user={uid}"}, true).switches_user);
  EXPECT_FALSE(generic_exec_prefix("box", {"/usr/bin/x"}, true).switches_user);
}

// Nothing of the env's environment is in the prefix's argv (which `ps`
// shows every user) or in the prefix's own environment (which could point a
// root docker client elsewhere): it travels on stdin.
TEST(ExecPrefix, TheEnvsVariablesTravelOnStdinNeverInTheArgvOrThePrefixsEnvironment) {
  const auto outer = through_prefix(docker_exec_prefix("t", "/usr/bin/docker", "c"), inside_spec());
  for (const auto& word : outer.argv) {
    EXPECT_EQ(word.find("hf_secret_value"), std::string::npos) << word;
    EXPECT_EQ(word.find("/opt/vendor/lib"), std::string::npos) << word;
  }
  for (const auto& [name, value] : outer.environment) {
    EXPECT_NE(name, "HF_TOKEN");
    EXPECT_NE(name, "LD_LIBRARY_PATH");
    EXPECT_EQ(value.find("/opt/venvs"), std::string::npos) << name;
  }
  EXPECT_NE(outer.stdin_data.find(std::string("HF_TOKEN=hf_secret_value") + '\0'),
            std::string::npos);
  EXPECT_EQ(outer.working_dir, "/");
}

// Through a real prefix (env(1), which changes nothing), the command gets
// exactly its environment, whatever the values hold, its working directory,
// and the rest of its stdin.
TEST(ExecPrefix, TheCommandGetsExactlyItsEnvironmentDirectoryAndStdin) {
  testing::TempDir dir;
  process::ProcessSpec inside;
  inside.argv = {"/bin/bash", "-c", "env -0; printf '\\n--cwd %s\\n--stdin ' \"$PWD\"; cat"};
  inside.environment = {{"PATH", "/usr/bin:/bin"},
                        {"SPACED", "two words and = signs"},
                        {"MULTILINE", "first\nsecond"},
                        {"UNICODE", "gr\xc3\xbc\xc3\x9f"},
                        {"EMPTY", ""}};
  inside.working_dir = dir.path();
  inside.stdin_data = "payload after the environment";
  auto outer = through_prefix(generic_exec_prefix("t", {"/usr/bin/env"}), inside);
  outer.environment["ENVCONTRACT_PROBE"] = "marker";
  const auto result = process::run_process(outer, {});
  ASSERT_TRUE(result.succeeded()) << result.describe() << result.err;
  const auto cut = result.out.find("\n--cwd ");
  ASSERT_NE(cut, std::string::npos) << result.out;
  std::map<std::string, std::string> seen;
  std::size_t start = 0;
  const std::string dump = result.out.substr(0, cut);
  while (start < dump.size()) {
    const auto end = dump.find('\0', start);
    const std::string entry = dump.substr(start, end - start);
    seen[entry.substr(0, entry.find('='))] = entry.substr(entry.find('=') + 1);
    start = end == std::string::npos ? dump.size() : end + 1;
  }
  seen.erase("_");  // bash's own: the command it ran
  seen.erase("PWD");
  seen.erase("SHLVL");
  // The process runner's kill marker (set below as the runner sets it where
  // there is no cgroup) is kept, so that a time-out still finds the
  // command's descendants.
  EXPECT_EQ(seen.erase("ENVCONTRACT_PROBE"), 1U);
  std::map<std::string, std::string> wanted(inside.environment.begin(), inside.environment.end());
  EXPECT_EQ(seen, wanted);
  EXPECT_NE(result.out.find("\n--cwd " + dir.path().string() + "\n"), std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("--stdin payload after the environment"), std::string::npos)
      << result.out;
}

// The scratch directory a container's process is handed lies in the
// container's own /tmp, named as the container sees it, and a /tmp that
// leads out of the container is not followed out.
TEST(ScratchDirectoryInsideARoot, LiesInTheRootsTmpAndNeverFollowsItOut) {
  testing::TempDir dir;
  const auto root = dir.path() / "rootfs";
  fs::create_directories(root / "tmp");
  {
    process::ScratchDirectory scratch("envcontract-probe", std::nullopt, root);
    ASSERT_TRUE(scratch.ok());
    const auto named = scratch.file("probe.py");
    EXPECT_TRUE(named.string().starts_with("/tmp/envcontract-probe-")) << named;
    ASSERT_TRUE(scratch.write("probe.py", "print(1)\n"));
    EXPECT_TRUE(fs::exists(root / named.relative_path()));
    EXPECT_EQ(scratch.read("probe.py", 100).value_or(""), "print(1)\n");
  }
  EXPECT_TRUE(fs::is_empty(root / "tmp")) << "removed with the object";

  // /tmp -> an absolute link to a host directory, as a hostile container
  // could make it: resolved inside the root, it names a path the root does
  // not have, so no directory is made at all.
  fs::remove(root / "tmp");
  const auto outside = dir.path() / "outside";
  fs::create_directories(outside);
  fs::create_symlink(outside, root / "tmp");
  {
    process::ScratchDirectory scratch("envcontract-probe", std::nullopt, root);
    EXPECT_FALSE(scratch.ok());
  }
  EXPECT_TRUE(fs::is_empty(outside)) << "nothing made outside the container";
}

// A container's process's root (/proc/PID/root) holds the scratch directory
// only while that PID is still the process chosen (its start time the
// same): a PID reused by another process leads into another tree.
TEST(ScratchDirectoryInsideARoot, ThroughAProcessOnlyWhileItsPidIsThatProcess) {
  pid_t child = 0;
  char sleep_program[] = "/bin/sleep";
  char seconds[] = "30";
  char* argv[] = {sleep_program, seconds, nullptr};
  ASSERT_EQ(::posix_spawn(&child, argv[0], nullptr, nullptr, argv, environ), 0);
  const std::uint64_t started = process::process_start_time(child);
  ASSERT_GT(started, 0U);
  const fs::path root = "/proc/" + std::to_string(child) + "/root";
  {
    process::ScratchDirectory scratch("envcontract-probe", std::nullopt, root, {child, started});
    EXPECT_TRUE(scratch.ok()) << scratch.error();
    EXPECT_TRUE(scratch.write("probe.py", "print(1)\n")) << scratch.error();
  }
  {
    process::ScratchDirectory scratch("envcontract-probe", std::nullopt, root,
                                      {child, started + 1});
    EXPECT_FALSE(scratch.ok());
    EXPECT_NE(scratch.error().find("has ended since the scan began"), std::string::npos)
        << scratch.error();
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(process::process_start_time(child), 0U) << "gone";
  process::ScratchDirectory gone("envcontract-probe", std::nullopt, root, {child, started});
  EXPECT_FALSE(gone.ok());
}

// Paths between the agent's names and the container's: only an env with an
// exec prefix is translated, and only what lies under its root.
TEST(ExecPrefix, PathsAreNamedAsTheContainerAndTheAgentSeeThem) {
  facts::PythonEnv host_env;
  host_env.system_root = "/srv/rootfs";  // a --root scan: its code runs on the host
  EXPECT_EQ(seen_by_env(host_env, "/srv/rootfs/opt/x"), "/srv/rootfs/opt/x");
  EXPECT_EQ(seen_by_agent(host_env, "/opt/x"), "/opt/x");

  facts::PythonEnv env = host_env;
  env.exec = generic_exec_prefix("box", {"/usr/bin/bwrap"});
  EXPECT_EQ(seen_by_env(env, "/srv/rootfs/opt/x"), "/opt/x");
  EXPECT_EQ(seen_by_env(env, "/srv/rootfs"), "/");
  EXPECT_EQ(seen_by_env(env, "/srv/rootfsx/opt"), "/srv/rootfsx/opt") << "not under the root";
  EXPECT_EQ(seen_by_env(env, "/etc/passwd"), "/etc/passwd");
  EXPECT_EQ(seen_by_agent(env, "/opt/x"), "/srv/rootfs/opt/x");
  EXPECT_EQ(seen_by_agent(env, "/opt/../../etc/shadow"), "/srv/rootfs/etc/shadow")
      << "'..' never climbs above the root";
  EXPECT_EQ(seen_by_agent(env, "relative/path"), "relative/path");
  EXPECT_EQ(seen_by_agent(env, ""), "");
}

// Root through nsenter or a command line is the host's root, outside the
// container's seccomp profile and device cgroup: never. Through the
// runtime's own exec it is the container's root, confined as the container is.
TEST(ExecPrefix, RootNeverRunsThroughAPrefixThatLeavesTheContainersConfinement) {
  facts::PythonEnv env;
  env.system_root = "/srv/rootfs";
  env.run_as.uid = 0;
  for (const auto& prefix : {nsenter_exec_prefix("box", "/usr/bin/nsenter", 42),
                             generic_exec_prefix("box", {"/usr/bin/bwrap"})}) {
    env.exec = prefix;
    const auto refusal = code_refusal(env);
    ASSERT_TRUE(refusal.has_value()) << prefix.argv.front();
    EXPECT_EQ(refusal->kind, CodeRefusal::Kind::unconfined_root);
    // People are told which prefix and which container, and what to do.
    EXPECT_NE(refusal->text.find("would run as root through " + prefix.argv.front() +
                                 ", outside container box's confinement"),
              std::string::npos)
        << refusal->text;
  }
  env.exec = docker_exec_prefix("box", "/usr/bin/docker", "box");
  EXPECT_FALSE(code_refusal(env).has_value());
  env.run_as.uid = 1000;
  env.exec = nsenter_exec_prefix("box", "/usr/bin/nsenter", 42);
  EXPECT_FALSE(code_refusal(env).has_value());
}

}  // namespace
}  // namespace envcontract::discovery
