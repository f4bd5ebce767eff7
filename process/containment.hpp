#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

// Keeping every descendant of a probe in reach, whatever it does: setsid,
// double fork, a fork bomb. Each probe gets cgroups of its own where the
// kernel offers them (cgroup v2, delegated to the agent by its unit, and the
// v1 pids and memory controllers on hybrid hosts); the kernel then counts
// and kills the whole tree. Where no cgroup can be made, descendants are
// found by a marker in their environment.
namespace envcontract::process {

// Per probe; 0 leaves a limit alone. Defaults in docs/security.md.
struct ResourceLimits {
  std::uint64_t memory_bytes = 8ULL << 30;  // RLIMIT_DATA, and memory.max where a cgroup has it
  std::uint64_t cpu_seconds = 900;          // RLIMIT_CPU: a runaway loop, not a slow import
  std::uint64_t open_files = 4096;          // RLIMIT_NOFILE
  std::uint64_t processes = 512;            // pids.max; RLIMIT_NPROC (per user) without cgroups
};

// The cgroups one probe runs in. The child starts in the v2 one where the
// kernel can (start_dir(), clone3's CLONE_INTO_CGROUP) and joins the others
// between fork and exec by writing "0" into each descriptor of join_fds()
// (all of them, the v2 one first, when it could not start there).
class ProbeCgroup {
 public:
  // Null when this host gives the agent no cgroup it may create (then
  // find_marked_processes is the fallback).
  static std::unique_ptr<ProbeCgroup> create(const ResourceLimits& limits);
  ~ProbeCgroup();
  ProbeCgroup(const ProbeCgroup&) = delete;
  ProbeCgroup& operator=(const ProbeCgroup&) = delete;

  const std::vector<int>& join_fds() const { return m_join_fds; }
  // The v2 cgroup's directory (O_PATH) for CLONE_INTO_CGROUP, or -1; when
  // the child starts there, join_fds()[0] is the one it need not write.
  int start_dir() const { return m_start_dir; }
  // Whether the process count is bounded by a pids controller.
  bool limits_processes() const { return m_limits_processes; }
  // Every process in the group now.
  std::vector<pid_t> members() const;
  // Kills every member (cgroup.kill, else SIGKILL rounds until empty) and
  // returns the pids it saw, so the caller can reap its adopted ones.
  std::vector<pid_t> kill_all();
  // Gives up the group with a member that cannot be killed (asleep in the
  // kernel): the destructor then neither kills nor waits, and the caller
  // removes the returned directories once that member has ended.
  std::vector<std::string> release();

 private:
  ProbeCgroup() = default;
  std::vector<std::string> m_dirs;  // v2 first when there is one
  std::vector<int> m_join_fds;
  int m_start_dir = -1;
  bool m_has_kill = false;
  bool m_limits_processes = false;
};

// What the host offers, for the report of the agent's own state and docs:
// "cgroup v2 (kill, pids, memory)", "cgroup v1 pids", "none: environment marker".
std::string containment_description();

// Processes whose environment holds `marker` (NAME=VALUE): the fallback
// when there is no cgroup. A process that clears its environment escapes
// this; docs/security.md says so.
std::vector<pid_t> find_marked_processes(const std::string& marker);
// The same among the processes in the pid namespace of `member` only (a
// container's): the namespace is compared first, by its link, which reads
// nothing of a process's memory, so a process elsewhere on the host whose
// environment is slow to read (mapped from a filesystem that does not
// answer) is never read, whatever it put in its environment.
std::vector<pid_t> find_marked_processes_in(const std::string& marker, pid_t member);

// The first-started of `pids` whose /proc/PID is owned by `uid` (the
// process's effective uid, while it is dumpable) and that `also` accepts
// (every one when it is empty); 0 when there is none. Which of the
// processes carrying a marker is the command itself, not a shell or client
// around it.
pid_t first_started_of(const std::vector<pid_t>& pids, uid_t uid,
                       const std::function<bool(pid_t)>& also = {});

// Waits (bounded) for each of `pids` to be gone, reaping those that became
// our children (the agent is their subreaper), so no zombie is left.
void reap_adopted(std::vector<pid_t> pids);

}  // namespace envcontract::process
