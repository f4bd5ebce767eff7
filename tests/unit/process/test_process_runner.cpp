// The process runner against real processes that exit, crash, hang, flood
// their output and leave descendants behind.
#include "process/process_runner.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/support/processes.hpp"

namespace envcontract::process {
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

// Runs `body` in a process of its own, so that it may close its stdio or
// filter its system calls without touching the test's: its exit status, or
// -1 when it was killed (SIGALRM: it hung).
int in_child_process(const std::function<int()>& body) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::alarm(20);
    int code = 98;
    try {
      code = body();
    } catch (...) {
      code = 99;
    }
    ::_exit(code);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#if defined(__x86_64__)
constexpr __u32 k_this_architecture = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr __u32 k_this_architecture = AUDIT_ARCH_AARCH64;
#else
#error "refuse_system_calls: name this architecture's AUDIT_ARCH"
#endif

// From here on the kernel answers ENOSYS to `calls`, for this process and
// its children, as an older kernel or a container's seccomp profile does.
bool refuse_system_calls(const std::vector<long>& calls) {
  // Only this architecture's numbers: a call made through another ABI is let through.
  std::vector<sock_filter> program{BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
                                   BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k_this_architecture, 1, 0),
                                   BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                                   BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr))};
  for (const long call : calls) {
    program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<__u32>(call), 0, 1));
    program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS));
  }
  program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  const sock_fprog filter{static_cast<unsigned short>(program.size()), program.data()};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter) == 0;
}

// Where the kernel has no close_range (before 5.11, or a seccomp profile
// refuses it), the agent's descriptors are found in /proc/self/fd, and
// without a listing every number below the agent's hard limit is marked:
// not the probe's lower limit, nor the agent's soft one, above which the
// agent's descriptors stay open.
TEST(ProcessRunner, LeaksNoDescriptorWhereTheKernelHasNoCloseRange) {
  struct Kernel {
    std::vector<long> refused;
    // The agent's limits once descriptor 900 is open: the listing must find
    // it above the hard limit, the sweep above the soft one.
    rlim_t soft;
    rlim_t hard;
    std::string what;
  };
  const std::vector<Kernel> kernels = {
      {{SYS_close_range}, 512, 512, "no close_range: /proc/self/fd is listed"},
      {{SYS_close_range, SYS_getdents64},
       512,
       1024,
       "and no listing: every number below the hard limit"}};
  for (const auto& kernel : kernels) {
    const int status = in_child_process([&kernel] {
      rlimit limit{};
      ::getrlimit(RLIMIT_NOFILE, &limit);
      limit.rlim_cur = std::max<rlim_t>(limit.rlim_cur, std::min<rlim_t>(limit.rlim_max, 1024));
      if (::setrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur < 1024) {
        return 3;
      }
      // Ours, without close-on-exec, far above the probe's limit of 64.
      const rlimit lowered{kernel.soft, kernel.hard};
      if (::dup2(STDERR_FILENO, 900) != 900 || ::setrlimit(RLIMIT_NOFILE, &lowered) != 0 ||
          !refuse_system_calls(kernel.refused)) {
        return 4;
      }
      ProcessSpec spec;
      spec.argv = {"/bin/sh", "-c", "if [ -e /proc/self/fd/900 ]; then echo leaked; fi; echo ran"};
      ProcessLimits limits;
      limits.resources.open_files = 64;
      const auto result = run_process(spec, limits);
      return result.out == "ran\n" ? 0 : result.out == "leaked\nran\n" ? 5 : 6;
    });
    EXPECT_EQ(status, 0) << kernel.what << ": 3, 4: could not set the test up; 5: descriptor "
                         << "900 reached the program; 6: it did not run";
  }
}

// Where the kernel will not start a child in its cgroup (clone3 refused),
// the child is forked and joins its cgroups, and starts its session, by
// itself: a time-out that comes before it has done either still ends it.
TEST(ProcessRunner, ATimeOutBeforeTheChildIsSetUpStillEndsIt) {
  const std::string marker = "ENVCONTRACT_TEST_EARLY_TIMEOUT=" + std::to_string(::getpid());
  const int status = in_child_process([&marker] {
    if (!refuse_system_calls({SYS_clone3})) {
      return 4;
    }
    ProcessSpec spec;
    spec.argv = {"/bin/sleep", "30"};
    spec.environment = {{"ENVCONTRACT_TEST_EARLY_TIMEOUT", marker.substr(marker.find('=') + 1)}};
    ProcessLimits limits;
    limits.timeout = 0ms;  // past at the first look, right after the fork
    const auto started = std::chrono::steady_clock::now();
    const auto result = run_process(spec, limits);
    const bool prompt = std::chrono::steady_clock::now() - started < 4s;
    return result.outcome == ProcessResult::Outcome::timed_out && !result.left_behind && prompt ? 0
                                                                                                : 5;
  });
  EXPECT_EQ(status, 0) << "4: could not refuse clone3; 5: not ended at once";
  // Nothing of it runs on. A wait with nothing to wait for: a child left
  // behind during its set-up shows the marker only once it has exec'd.
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(testing::processes_with_environment(marker).empty());
}

// An agent started with its stdin, stdout and stderr closed (as some
// supervisors start daemons) gets its own pipes at 0, 1 and 2: the child
// still gets each where it belongs.
TEST(ProcessRunner, AnAgentStartedWithoutStdioStillGivesTheChildIts3) {
  const int status = in_child_process([] {
    ::close(STDIN_FILENO);
    ::close(STDOUT_FILENO);
    ::close(STDERR_FILENO);
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", "read line; echo \"out $line\"; echo err >&2"};
    spec.stdin_data = "fed\n";
    const auto result = run_process(spec, {});
    return result.succeeded() && result.out == "out fed\n" && result.err == "err\n" ? 0 : 5;
  });
  EXPECT_EQ(status, 0) << "5: the child's output went astray";
}

// The agent itself takes /dev/null where its stdio is missing, leaving
// what is open alone.
TEST(ProcessRunner, OpensDevNullWhereStdioIsMissing) {
  const int status = in_child_process([] {
    const auto open_fds = [] {
      std::map<std::string, std::string> targets;  // descriptor -> what it is
      for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code gone;  // a descriptor closed since it was listed
        const auto target = std::filesystem::read_symlink(entry.path(), gone);
        if (!gone) {
          targets[entry.path().filename().string()] = target.string();
        }
      }
      return targets;
    };
    auto expected = open_fds();
    ::close(STDIN_FILENO);
    ::close(STDERR_FILENO);
    open_missing_standard_streams();
    expected["0"] = "/dev/null";
    expected["2"] = "/dev/null";
    return open_fds() == expected ? 0 : 5;
  });
  EXPECT_EQ(status, 0) << "5: the wrong descriptors were opened, or stdout changed";
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
}  // namespace envcontract::process
