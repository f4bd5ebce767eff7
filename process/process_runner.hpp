#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "facts/activation.hpp"
#include "process/cancellation.hpp"
#include "process/containment.hpp"
#include "process/output_capture.hpp"
#include "process/unique_fd.hpp"

// The one place that starts processes (through spawn.hpp).
namespace envcontract::process {

using facts::Environment;

// The PATH of the commands the agent runs for itself and of a bare
// activation: the system's own directories, as Debian gives root.
inline constexpr const char* k_system_path =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// The user a child runs as. The agent (root) switches to it between fork
// and exec: supplementary groups, gid, uid, then no capability left in any
// set, the bounding set emptied and no_new_privs, so nothing the child
// execs can gain privileges back.
struct Credentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  // Keeps CAP_SYS_PTRACE, and nothing else, through the change of user (in
  // the bounding, permitted, effective, inheritable and ambient sets, so it
  // survives execve under no_new_privs). For the stack sampler only: it must
  // attach to a hung process of this user where Yama's ptrace_scope forbids
  // a non-ancestor, while every file it opens is checked against this
  // user's rights, never root's. A process of the same user cannot attach
  // to it in turn: the kernel refuses a tracer whose capabilities are not a
  // superset of its target's. The agent must hold the capability itself.
  bool keep_ptrace = false;
};

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is an absolute path; no shell is involved
  Environment environment;        // the complete environment: nothing is inherited
  std::filesystem::path working_dir = "/";
  std::string stdin_data;  // written to the child's stdin, which is then closed
  // Unset: the agent's own credentials, still with no_new_privs. Env code
  // always runs with credentials set (process/run_as.hpp decides whose).
  std::optional<Credentials> credentials;
  // The command runs outside this process's tree: a container engine's
  // client (docker exec, podman exec) has its daemon or monitor start it,
  // in the container's cgroup, with the container's limits. Then the
  // resource limits are not set on the client (runc could not set the
  // container's own on the command: "error setting rlimit") but written into
  // argv[limits_word], for the exec bootstrap to set inside
  // (discovery/exec_prefix.cpp), and the command's processes are found, to be
  // killed with the rest, by the marker in their environment
  // (ENVCONTRACT_PROBE, which the client passes in).
  bool tree_outside = false;
  std::size_t limits_word = 0;
  // Whether the command inside runs as a user other than root (its process
  // count is then bounded by RLIMIT_NPROC: the container's cgroup is not ours).
  bool unprivileged_inside = false;
  // Its container's process (its pid namespace): only processes in that
  // namespace are looked at for the marker, never the whole host's.
  pid_t inside_process = 0;
};

// The name of the variable that marks a probe's processes where no cgroup of
// ours holds them, and the marker of the process `pid` ("" when it has none).
inline constexpr const char* k_probe_marker = "ENVCONTRACT_PROBE";
// The variable that names the exec session a process was started by
// (discovery/exec_session.hpp): at the session's end, what carries it (a
// request taken after the session was given up) is ended. Like the
// marker, the agent's, never a fact of the env's.
inline constexpr const char* k_session_marker = "ENVCONTRACT_SESSION";
std::string probe_marker_of(pid_t pid);

// The limits as the exec bootstrap sets them inside a container: words of
// "FLAG:SOFT:HARD" for bash's ulimit (d in KiB, t, n, u), lowered only.
std::string limits_for_bootstrap(const ResourceLimits& resources, bool limit_processes);

struct ProcessLimits {
  std::chrono::milliseconds timeout{30'000};
  // Per stream; beyond it, the first and last halves are kept.
  std::size_t max_output_bytes = 1024 * 1024;
  // After the child itself has exited (or was killed), how long to keep
  // reading output held open by processes that escaped its process group.
  std::chrono::milliseconds drain_grace{500};
  // Per process tree: rlimits, and cgroup limits where the host gives us cgroups.
  ResourceLimits resources;
  // When set and cancelled, the process tree is killed at the next poll.
  const Cancellation* cancellation = nullptr;
  // When set, asked at every poll for the time by which the process must
  // have ended, instead of its start plus `timeout`: a process that runs
  // several steps, each with a time-out of its own, moves it as each starts.
  std::function<std::chrono::steady_clock::time_point()> deadline;
};

struct ProcessResult {
  enum class Outcome { exited, signaled, timed_out, cancelled, failed_to_start };
  Outcome outcome = Outcome::failed_to_start;
  int exit_code = -1;  // for exited
  int signal = 0;      // for signaled (and timed_out: the signal that ended it)
  std::string out;
  std::string err;
  std::size_t out_bytes = 0;  // total written, including what was dropped
  std::size_t err_bytes = 0;
  std::chrono::milliseconds duration{0};
  std::string error;  // for failed_to_start: why
  // For failed_to_start at the program's own exec: its errno (ENOENT: no
  // such file, or no ELF interpreter; ENOEXEC: not an executable; EACCES...).
  // 0 when the start failed before it (our own setup) or did not fail.
  int exec_error = 0;

  bool succeeded() const { return outcome == Outcome::exited && exit_code == 0; }
  std::string cancel_reason;  // for cancelled: Cancellation::reason()
  // Timed out or cancelled, killed, and still not gone after a grace: asleep
  // in the kernel where SIGKILL does not reach (a FUSE request taken by a
  // server that never answers). Not waited for; reaped by a thread of its own when it ends.
  bool left_behind = false;
  std::string left_behind_text() const;  // " (and could not be killed: ...)" or ""
  // "exit 0", "killed by SIGSEGV", "timed out after 30s", "stopped: ...", "failed to start: ..."
  std::string describe() const;
  // Its stdout and stderr, as captured (head and tail within the bound).
  void take_output(const OutputCapture& out_capture, const OutputCapture& err_capture);
};

// Called with the child's pid when the timeout expires, before the process
// group is killed: the moment to sample a hung process. Not called for a
// child that has not run its program yet (blocked before execve: it is a
// copy of the agent, with nothing of the env's to sample). Should it throw,
// the process tree is ended and reaped before the exception leaves
// run_process.
using TimeoutHook = std::function<void(pid_t)>;

// Runs a process in a process group and cgroup of its own, with bounded
// output capture and a timeout driven by our own event loop (Boost.Process
// 1.74's wait_for is unreliable). When the child exits, times out or is
// killed, every descendant is killed, including those that left the process
// group with setsid (through the cgroup, or an environment marker where the
// host has no cgroup for us), and reaped. Descriptors of ours never leak
// into the child.
ProcessResult run_process(const ProcessSpec& spec, const ProcessLimits& limits,
                          const TimeoutHook& on_timeout = {});

// A process that runs beside its caller instead of to its end in one call
// (an engine's exec session, discovery/exec_session.hpp): started as
// run_process starts one (its own session and credentials, a tree outside
// ours marked in its environment, the limits set inside by the exec
// bootstrap), with our ends of its stdio left open.
struct AttachedProcess {
  pid_t pid = -1;
  UniqueFd in;   // its stdin: what the caller writes
  UniqueFd out;  // its stdout and stderr: what the caller reads
  UniqueFd err;
  std::string marker;  // "ENVCONTRACT_PROBE=VALUE", which every process of its tree carries
  std::string error;   // when pid is -1: why it could not start
};
AttachedProcess start_attached(const ProcessSpec& spec, const ResourceLimits& resources);

// Ends `process`: it and every process that carries its marker (among those
// in the pid namespace of `spec.inside_process` when set) are killed, and it
// is reaped, waiting `grace` at most.
void end_attached(AttachedProcess& process, const ProcessSpec& spec,
                  std::chrono::milliseconds grace = std::chrono::seconds(5));

// Makes this process the reaper of its descendants' orphans (Linux
// PR_SET_CHILD_SUBREAPER), so the grandchildren run_process kills are reaped
// here instead of waiting as zombies for init. The agent calls it at start.
bool become_subreaper();

// Opens /dev/null on whichever of descriptors 0, 1 and 2 is closed, as a
// supervisor may start a daemon: else the next file or socket opened takes
// that number, and a log line meant for stderr lands in it.
void open_missing_standard_streams();

// "SIGSEGV" for 11, "signal 64" when unnamed.
std::string signal_name(int signal);

}  // namespace envcontract::process
