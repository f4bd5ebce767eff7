#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

// Starting a program the way the process runner needs, which Boost.Process
// 1.74 cannot: in its cgroup v2 from its first instruction (clone3 with
// CLONE_INTO_CGROUP). Moving a process into a cgroup afterwards takes the
// kernel's global lock of cgroup migrations, which waits for an RCU grace
// period after a quiet spell: up to 23 ms per process here, 70-90 ms of a
// 16-env scan's 650. Where the kernel cannot (before 5.7, a seccomp filter,
// no cgroup v2), a plain fork, and the child joins by itself.
namespace envcontract::probes {

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
};

// Starts `argv[0]` with `argv` and `environment` ("NAME=value" each).
// `cgroup_dir` >= 0 (a descriptor of a cgroup v2 directory) asks for the
// child to start there. Returns once the child has run execve, or has
// failed to: then its errno is in `error` and the child is reaped.
Spawned spawn_process(const std::vector<std::string>& argv,
                      const std::vector<std::string>& environment, ChildStdio stdio, int cgroup_dir,
                      const ChildPreparation& preparation);

}  // namespace envcontract::probes
