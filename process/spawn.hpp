#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "process/unique_fd.hpp"

// Starting a program the way the process runner needs, which Boost.Process
// 1.74 cannot: in its cgroup v2 from its first instruction (clone3 with
// CLONE_INTO_CGROUP). Moving a process into a cgroup afterwards takes the
// kernel's global lock of cgroup migrations, which waits for an RCU grace
// period after a quiet spell: up to 23 ms per process here, 70-90 ms of a
// 16-env scan's 650. Where the kernel cannot (before 5.7, a seccomp filter,
// no cgroup v2), a plain fork, and the child joins by itself.
namespace envcontract::process {

// What the child's stdin, stdout and stderr become (the child's ends of
// pipes the caller made, O_CLOEXEC).
struct ChildStdio {
  int in = -1;
  int out = -1;
  int err = -1;
};

// Runs in the child before execve, once its stdio is in place: only
// async-signal-safe calls, no allocation (the child is a copy of one thread
// of a process whose other threads may hold malloc's locks). `in_cgroup`
// says whether the child already runs in the cgroup it was asked to start
// in. On failure it ends the child itself.
struct ChildPreparation {
  virtual ~ChildPreparation() = default;
  virtual void prepare(bool in_cgroup) const = 0;
};

struct Spawned {
  pid_t pid = -1;
  std::string error;       // when pid is -1: what failed, in words
  bool in_cgroup = false;  // started in `cgroup_dir`'s cgroup
  // Our end of the child's start report: it ends without a word once the
  // program runs (execve closes the child's end), or carries a
  // StartFailure. Read it with `start_failure` once the child has ended.
  UniqueFd start_report;
};

// Why a child never ran its program; it then exits with status 127.
struct StartFailure {
  enum class Step : int { stdio, execve };
  Step step = Step::execve;
  int error = 0;  // errno
};

// Starts `argv[0]` with `argv` and `environment` ("NAME=value" each).
// `cgroup_dir` >= 0 (a descriptor of a cgroup v2 directory) asks for the
// child to start there. Returns as soon as the child exists, not once it
// runs its program: between the two the child may block for good (its
// working directory or its program on a filesystem that does not answer),
// so the caller bounds that wait along with the rest of the child's life.
Spawned spawn_process(const std::vector<std::string>& argv,
                      const std::vector<std::string>& environment, ChildStdio stdio, int cgroup_dir,
                      const ChildPreparation& preparation);

// What a child that has ended reported on `start_report`: nothing when it
// ran its program. Never blocks (the child's end is closed once it ended).
std::optional<StartFailure> start_failure(const UniqueFd& start_report);

// Whether the child is still before execve (neither running its program
// nor ended): the child's end of `start_report` is still open.
bool still_starting(const UniqueFd& start_report);

// "PROGRAM: No such file or directory", as a shell says it.
std::string describe(const StartFailure& failure, const std::string& program);

}  // namespace envcontract::process
