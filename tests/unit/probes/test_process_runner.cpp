// The process runner against real processes that exit, crash, hang, flood
// their output and leave descendants behind.
#include "probes/process_runner.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <stdexcept>
#include <thread>

#include "tests/support/processes.hpp"

namespace envcontract::probes {
namespace {

using namespace std::chrono_literals;

ProcessResult sh(const std::string& script, ProcessLimits limits = {},
                 const TimeoutHook& hook = {}) {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.environment = {{"PATH", "/usr/bin:/bin"}};
  return run_process(spec, limits, hook);
}

TEST(ProcessRunner, CapturesExitCodeAndBothStreams) {
  const auto result = sh("echo out; echo err >&2; exit 3");
  EXPECT_EQ(result.outcome, ProcessResult::Outcome::exited);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.out, "out\n");
  EXPECT_EQ(result.err, "err\n");
  EXPECT_EQ(result.describe(), "exit 3");
}

TEST(ProcessRunner, NamesTheSignalOfACrash) {
  const auto aborted = sh("kill -ABRT $$");
  EXPECT_EQ(aborted.outcome, ProcessResult::Outcome::signaled);
  EXPECT_EQ(aborted.describe(), "killed by SIGABRT");
  const auto segfault = sh("kill -SEGV $$");
  EXPECT_EQ(segfault.describe(), "killed by SIGSEGV");
}

TEST(ProcessRunner, TimesOutAndCallsTheHookBeforeKilling) {
  ProcessLimits limits;
  limits.timeout = 300ms;
  pid_t sampled = 0;
  bool alive_when_sampled = false;
  const auto started = std::chrono::steady_clock::now();
  const auto result = sh("exec sleep 60", limits, [&](pid_t pid) {
    sampled = pid;
    alive_when_sampled = testing::process_running(pid);
  });
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_EQ(result.outcome, ProcessResult::Outcome::timed_out);
  EXPECT_EQ(result.signal, SIGKILL);
  EXPECT_TRUE(alive_when_sampled);
  EXPECT_GT(sampled, 0);
  EXPECT_FALSE(testing::process_running(sampled));
}

TEST(ProcessRunner, AHookThatThrowsLeavesNoProcessAndNoZombie) {
  ASSERT_TRUE(become_subreaper());
  ProcessSpec spec;
  // A descendant in a session of its own, out of the group's reach.
  spec.argv = {"/bin/sh", "-c", "setsid sleep 60 & exec sleep 60"};
  spec.environment = {{"PATH", "/usr/bin:/bin"}, {"ENVCONTRACT_THROWING_HOOK", "1"}};
  ProcessLimits limits;
  limits.timeout = 300ms;
  pid_t leader = 0;
  EXPECT_THROW(run_process(spec, limits,
                           [&](pid_t pid) {
                             leader = pid;
                             throw std::runtime_error("the hook failed");
                           }),
               std::runtime_error);
  ASSERT_GT(leader, 0);
  EXPECT_FALSE(testing::process_running(leader));
  // Reaped, not a zombie: it is no longer our child at all.
  EXPECT_EQ(::waitpid(leader, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
  EXPECT_TRUE(testing::processes_with_environment("ENVCONTRACT_THROWING_HOOK=1").empty());
}

TEST(ProcessRunner, ACancellationEndsTheTreeWithinAPoll) {
  ASSERT_TRUE(become_subreaper());
  Cancellation cancellation;
  ProcessLimits limits;
  limits.timeout = 60s;
  limits.cancellation = &cancellation;
  std::thread canceller([&] {
    std::this_thread::sleep_for(300ms);
    cancellation.cancel("the agent is stopping");
    cancellation.cancel("a later reason is not kept");
  });
  const auto started = std::chrono::steady_clock::now();
  const auto result = sh("(trap '' TERM; exec sleep 60) & echo $!; exec sleep 60", limits);
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_EQ(result.outcome, ProcessResult::Outcome::cancelled);
  EXPECT_EQ(result.cancel_reason, "the agent is stopping");
  EXPECT_TRUE(result.describe().starts_with("stopped after ")) << result.describe();
  EXPECT_TRUE(result.describe().ends_with(" ms: the agent is stopping")) << result.describe();
  // On a loaded machine the shell may not have printed the pid yet.
  if (!result.out.empty()) {
    const pid_t grandchild = std::stoi(result.out);
    EXPECT_FALSE(std::filesystem::exists("/proc/" + std::to_string(grandchild)));
  }
  // Once cancelled, nothing more starts.
  const auto after = sh("echo never", limits);
  EXPECT_EQ(after.outcome, ProcessResult::Outcome::cancelled);
  EXPECT_EQ(after.out, "");
}

TEST(ProcessRunner, KillsADescendantThatIgnoresTermAndHoldsThePipe) {
  // As the agent does: orphans become ours, so we can reap them.
  ASSERT_TRUE(become_subreaper());
  // The child leaves a grandchild that ignores SIGTERM and keeps stdout open.
  const auto started = std::chrono::steady_clock::now();
  const auto result = sh("(trap '' TERM; exec sleep 60) & echo $!; exit 0");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_EQ(result.outcome, ProcessResult::Outcome::exited);
  const pid_t grandchild = std::stoi(result.out);
  // Killed with its group and reaped: not even a zombie is left.
  EXPECT_FALSE(std::filesystem::exists("/proc/" + std::to_string(grandchild)));
}

TEST(ProcessRunner, BoundsAFlood) {
  ProcessLimits limits;
  limits.max_output_bytes = 64 * 1024;
  const auto result = sh("head -c 100000000 /dev/zero", limits);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out_bytes, 100'000'000U);
  EXPECT_LT(result.out.size(), 64U * 1024 + 100);
  EXPECT_NE(result.out.find("bytes omitted"), std::string::npos);
}

TEST(ProcessRunner, PassesArgumentsAndEnvironmentVerbatim) {
  ProcessSpec spec;
  spec.argv = {"/usr/bin/printf", "%s|", "it's", "$(touch /tmp/pwned)", "a b", "ü"};
  spec.environment = {{"ONLY", "this"}};
  EXPECT_EQ(run_process(spec, {}).out, "it's|$(touch /tmp/pwned)|a b|ü|");
  spec.argv = {"/usr/bin/env"};
  EXPECT_EQ(run_process(spec, {}).out, "ONLY=this\n");
}

TEST(ProcessRunner, LeaksNoDescriptorIntoTheChild) {
  // A descriptor of ours without close-on-exec, as a careless library leaves one.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const auto result = sh("ls /proc/self/fd");
  ::close(fds[0]);
  ::close(fds[1]);
  // 0, 1, 2 and the directory ls itself opened.
  EXPECT_EQ(result.out, "0\n1\n2\n3\n");
}

TEST(ProcessRunner, WritesStdin) {
  ProcessSpec spec;
  spec.argv = {"/bin/cat"};
  spec.stdin_data = "fed through stdin";
  EXPECT_EQ(run_process(spec, {}).out, "fed through stdin");
}

TEST(ProcessRunner, AChildThatIgnoresItsStdinDoesNotKillUs) {
  ProcessSpec spec;
  spec.argv = {"/bin/true"};
  spec.stdin_data = std::string(4 * 1024 * 1024, 'x');  // far beyond a pipe's buffer
  EXPECT_TRUE(run_process(spec, {}).succeeded());
  // And the child does not inherit our ignored SIGPIPE.
  ProcessSpec check;
  check.argv = {"/bin/sh", "-c", "grep SigIgn /proc/self/status"};
  EXPECT_EQ(run_process(check, {}).out, "SigIgn:\t0000000000000000\n");
}

TEST(ProcessRunner, ExitZeroWithNoOutput) {
  const auto result = sh("exit 0");
  EXPECT_TRUE(result.succeeded());
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.out_bytes, 0U);
}

TEST(ProcessRunner, ReportsWhatCannotStart) {
  ProcessSpec spec;
  spec.argv = {"/nonexistent/python"};
  const auto result = run_process(spec, {});
  EXPECT_EQ(result.outcome, ProcessResult::Outcome::failed_to_start);
  EXPECT_EQ(result.describe(), "failed to start: /nonexistent/python: No such file or directory");
}

}  // namespace
}  // namespace envcontract::probes
