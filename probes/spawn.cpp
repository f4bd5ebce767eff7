#include "probes/spawn.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace envcontract::probes {
namespace {

std::vector<char*> pointers_to(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (const auto& text : strings) {
    pointers.push_back(const_cast<char*>(text.c_str()));
  }
  pointers.push_back(nullptr);
  return pointers;
}

// The child's side, from its first instruction to execve: async-signal-safe
// calls only. An execve that fails writes its errno to `report`.
[[noreturn]] void become(char* const* argv, char* const* envp, ChildStdio stdio, int report,
                         bool in_cgroup, const ChildPreparation& preparation) {
  // dup2 clears O_CLOEXEC on the copy: these three survive execve.
  if (::dup2(stdio.in, 0) < 0 || ::dup2(stdio.out, 1) < 0 || ::dup2(stdio.err, 2) < 0) {
    const int error = errno;
    [[maybe_unused]] auto ignored = ::write(report, &error, sizeof error);
    ::_exit(127);
  }
  preparation.prepare(in_cgroup);
  ::execve(argv[0], argv, envp);
  const int error = errno;
  [[maybe_unused]] auto ignored = ::write(report, &error, sizeof error);
  ::_exit(127);
}

// clone3 into `cgroup_dir`: the child's pid, 0 in the child, or -1.
pid_t clone_into(int cgroup_dir) {
  clone_args arguments{};
  arguments.flags = CLONE_INTO_CGROUP;
  arguments.exit_signal = SIGCHLD;
  arguments.cgroup = static_cast<decltype(arguments.cgroup)>(cgroup_dir);
  return static_cast<pid_t>(::syscall(SYS_clone3, &arguments, sizeof arguments));
}

}  // namespace

Spawned spawn_process(const std::vector<std::string>& argv,
                      const std::vector<std::string>& environment, ChildStdio stdio, int cgroup_dir,
                      const ChildPreparation& preparation) {
  Spawned spawned;
  if (argv.empty()) {
    spawned.error = "no command given";
    return spawned;
  }
  // Everything the child needs is made here: it must not allocate.
  const auto arguments = pointers_to(argv);
  const auto variables = pointers_to(environment);
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    spawned.error = std::string("pipe2: ") + std::strerror(errno);
    return spawned;
  }
  pid_t pid = -1;
  if (cgroup_dir >= 0) {
    // The raw system call leaves glibc unaware of the new process: the child
    // uses none of glibc's state (no locks, no cached thread id), as
    // become() and the preparations allow.
    pid = clone_into(cgroup_dir);
    if (pid == 0) {
      become(arguments.data(), variables.data(), stdio, report[1], true, preparation);
    }
    spawned.in_cgroup = pid > 0;
  }
  if (pid < 0) {
    pid = ::fork();
    if (pid == 0) {
      become(arguments.data(), variables.data(), stdio, report[1], false, preparation);
    }
  }
  const int fork_error = errno;
  ::close(report[1]);
  if (pid < 0) {
    ::close(report[0]);
    spawned.in_cgroup = false;
    spawned.error = std::string("fork: ") + std::strerror(fork_error);
    return spawned;
  }
  // The end of the report pipe without a word: execve succeeded (the pipe
  // closed with the child's other O_CLOEXEC descriptors).
  int child_error = 0;
  ssize_t got = 0;
  do {
    got = ::read(report[0], &child_error, sizeof child_error);
  } while (got < 0 && errno == EINTR);
  ::close(report[0]);
  if (got == static_cast<ssize_t>(sizeof child_error)) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    spawned.in_cgroup = false;
    spawned.error = std::strerror(child_error);
    return spawned;
  }
  spawned.pid = pid;
  return spawned;
}

}  // namespace envcontract::probes
