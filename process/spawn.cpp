#include "process/spawn.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace envcontract::process {
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

// A copy of `fd` at 3 or above (close-on-exec) when it is 0, 1 or 2. An
// agent started with those closed gets its own pipes there: placing the
// child's three could then overwrite one with another, and dup2 of a
// descriptor onto itself would keep its close-on-exec flag.
int above_stdio(int fd) {
  return fd >= 0 && fd < 3 ? ::fcntl(fd, F_DUPFD_CLOEXEC, 3) : fd;
}

// Every descriptor from 3 up in a listing of /proc/self/fd, marked
// close-on-exec; false when there is no listing to read.
bool mark_listed_cloexec() {
  const int dir = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    return false;
  }
  alignas(dirent64) char buffer[4096];
  ssize_t got = 0;
  while ((got = ::getdents64(dir, buffer, sizeof buffer)) > 0) {
    for (ssize_t at = 0; at < got;) {
      const auto* entry = reinterpret_cast<const dirent64*>(buffer + at);
      at += entry->d_reclen;
      int fd = 0;
      const char* digit = entry->d_name;
      for (; *digit >= '0' && *digit <= '9' && fd <= (INT_MAX - 9) / 10; ++digit) {
        fd = fd * 10 + (*digit - '0');
      }
      if (*digit == '\0' && digit != entry->d_name && fd >= 3 && fd != dir) {
        ::fcntl(fd, F_SETFD, FD_CLOEXEC);
      }
    }
  }
  ::close(dir);
  return got == 0;
}

// Marks every descriptor from 3 up close-on-exec, so that none of the
// agent's pipes, sockets and files reaches the program (marked rather than
// closed: the report pipe must stay open until execve). In one call where
// the kernel can (close_range, Linux 5.11); else each one /proc lists; else
// every number below the agent's hard limit of open files (its soft limit
// may have been lowered after descriptors above it were opened, by the
// agent or whoever started it). Done before the preparation lowers limits.
void mark_inherited_cloexec() {
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0 || mark_listed_cloexec()) {
    return;
  }
  rlimit limit{};
  const rlim_t end = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_max < INT_MAX
                         ? limit.rlim_max
                         : static_cast<rlim_t>(INT_MAX);
  for (rlim_t fd = 3; fd < end; ++fd) {
    ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
  }
}

[[noreturn]] void report_failure(int report, StartFailure::Step step) {
  const StartFailure failure{step, errno};
  [[maybe_unused]] auto ignored = ::write(report, &failure, sizeof failure);
  ::_exit(127);
}

// The child's side, from its first instruction to execve: async-signal-safe
// calls only. What keeps it from running its program goes to `report`.
[[noreturn]] void become(char* const* argv, char* const* envp, ChildStdio stdio, int report,
                         bool in_cgroup, const ChildPreparation& preparation) {
  if (const int moved = above_stdio(report); moved >= 0) {
    report = moved;
  }
  const int in = above_stdio(stdio.in);
  const int out = above_stdio(stdio.out);
  const int err = above_stdio(stdio.err);
  // dup2 clears O_CLOEXEC on the copy: these three survive execve.
  if (in < 0 || out < 0 || err < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 ||
      ::dup2(err, 2) < 0) {
    report_failure(report, StartFailure::Step::stdio);
  }
  mark_inherited_cloexec();
  preparation.prepare(in_cgroup);
  ::execve(argv[0], argv, envp);
  report_failure(report, StartFailure::Step::execve);
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
  // Non-blocking on our side: read once the child has ended, it never waits.
  int report[2];
  if (::pipe2(report, O_CLOEXEC | O_NONBLOCK) != 0) {
    spawned.error = std::string("pipe2: ") + std::strerror(errno);
    return spawned;
  }
  UniqueFd ours(report[0]);
  UniqueFd childs(report[1]);
  pid_t pid = -1;
  if (cgroup_dir >= 0) {
    // The raw system call leaves glibc unaware of the new process: the child
    // uses none of glibc's state (no locks, no cached thread id), as
    // become() and the preparations allow.
    pid = clone_into(cgroup_dir);
    if (pid == 0) {
      become(arguments.data(), variables.data(), stdio, childs.get(), true, preparation);
    }
    spawned.in_cgroup = pid > 0;
  }
  if (pid < 0) {
    pid = ::fork();
    if (pid == 0) {
      become(arguments.data(), variables.data(), stdio, childs.get(), false, preparation);
    }
  }
  if (pid < 0) {
    spawned.in_cgroup = false;
    spawned.error = std::string("fork: ") + std::strerror(errno);
    return spawned;
  }
  spawned.pid = pid;
  spawned.start_report = std::move(ours);
  return spawned;
}

std::optional<StartFailure> start_failure(const UniqueFd& start_report) {
  StartFailure failure;
  ssize_t got = 0;
  do {
    got = ::read(start_report.get(), &failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  if (got != static_cast<ssize_t>(sizeof failure)) {
    return std::nullopt;
  }
  return failure;
}

bool still_starting(const UniqueFd& start_report) {
  // Readable (a failure written) or hung up (execve or the end closed the
  // child's end): past its start either way.
  pollfd report{start_report.get(), POLLIN, 0};
  return ::poll(&report, 1, 0) == 0;
}

std::string describe(const StartFailure& failure, const std::string& program) {
  const std::string error = std::strerror(failure.error);
  return failure.step == StartFailure::Step::stdio
             ? "setting up its stdin, stdout and stderr: " + error
             : program + ": " + error;
}

}  // namespace envcontract::process
