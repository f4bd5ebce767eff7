// Runs a process to its end, bounded in time, output and resources, with
// every descendant in reach. Started by spawn.cpp; waited for by our own
// event loop (Boost.Asio), not Boost.Process (its wait_for is broken in
// 1.74: boostorg/process #69, #107).
#include "process/process_runner.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "process/output_capture.hpp"
#include "process/small_files.hpp"
#include "process/spawn.hpp"

namespace envcontract::process {
namespace asio = boost::asio;

namespace {

using Clock = std::chrono::steady_clock;
// How often we look for the child's exit: fast at first, so short commands
// return at once, then backing off to a low steady cost.
constexpr std::chrono::milliseconds k_first_poll{1};
constexpr std::chrono::milliseconds k_max_poll{20};

// Processes left behind unkillable (see run_process), at most: each holds a
// task and a waiting thread of the agent. Counted per user the processes
// ran as too, so that one user's envs on filesystems that never answer stop
// that user's probes, not everyone's.
constexpr int k_max_left_behind = 64;
constexpr int k_max_left_behind_per_user = 8;

class LeftBehind {
 public:
  // "" when a process of `uid` may start, else why not.
  std::string refusal(uid_t uid) const {
    std::lock_guard lock(m_mutex);
    if (m_total >= k_max_left_behind) {
      return std::to_string(m_total) +
             " processes of this agent are left behind, unkillable (asleep on filesystems that "
             "do not answer): no more are started until they end";
    }
    const auto found = m_per_user.find(uid);
    if (found != m_per_user.end() && found->second >= k_max_left_behind_per_user) {
      return std::to_string(found->second) + " processes run as uid " + std::to_string(uid) +
             " are left behind, unkillable (asleep on filesystems that do not answer): no more "
             "are started as that user until they end";
    }
    return {};
  }
  void add(uid_t uid) {
    std::lock_guard lock(m_mutex);
    ++m_total;
    ++m_per_user[uid];
  }
  void remove(uid_t uid) {
    std::lock_guard lock(m_mutex);
    --m_total;
    if (--m_per_user[uid] == 0) {
      m_per_user.erase(uid);
    }
  }

 private:
  mutable std::mutex m_mutex;
  int m_total = 0;
  std::map<uid_t, int> m_per_user;
};

// Never destroyed: a detached waiting thread may end after main returns.
LeftBehind& g_left_behind = *new LeftBehind;
// Where no cgroup holds a probe's processes, this variable in their
// environment tells them apart.
constexpr const char* k_marker_variable = k_probe_marker;

// What the child does between fork and exec, prepared by the parent: the
// child must not allocate.
struct ChildSetup {
  pid_t agent = 0;
  std::vector<int> join_fds;  // cgroup.procs of the probe's cgroups
  std::array<std::pair<int, rlim_t>, 4> limits{};
  std::size_t limit_count = 0;
  const Credentials* credentials = nullptr;
  // Entered after the change of user, so the kernel checks the user's
  // rights on the way there: a directory of the env's (its prefix) may be
  // swapped for a link into a tree only root may enter.
  const char* working_dir = "/";
  // Killed when the thread that started it ends (PR_SET_PDEATHSIG, which
  // follows the thread, not the process): not for a process that outlives
  // the call that started it.
  bool dies_with_starter = true;
};

// Leaves the child with a message on its stderr (which we capture) and the
// exit status a shell gives a command it cannot run.
[[noreturn]] void fail_child(const char* what) {
  constexpr char prefix[] = "envcontract: cannot start the process: ";
  [[maybe_unused]] auto ignored = ::write(2, prefix, sizeof prefix - 1);
  ignored = ::write(2, what, std::strlen(what));
  ignored = ::write(2, "\n", 1);
  ::_exit(126);
}

// From here on the child holds no capability in any set and can never gain
// one: setuid to a non-zero uid clears the permitted, effective and ambient
// sets, the inheritable set is cleared by hand, the bounding set is emptied
// while we still may, and no_new_privs makes setuid binaries and file
// capabilities inert for everything it execs. With `keep_ptrace`, the one
// exception is CAP_SYS_PTRACE (process_runner.hpp says why): kept through
// setresuid by PR_SET_KEEPCAPS, then made effective, inheritable and
// ambient, the only form in which a capability survives execve under
// no_new_privs.
void drop_to(const Credentials& credentials) {
  for (int capability = 0; capability < 64; ++capability) {
    if (credentials.keep_ptrace && capability == CAP_SYS_PTRACE) {
      continue;
    }
    if (::prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0 && errno != EINVAL) {
      fail_child("dropping the capability bounding set");
    }
  }
  if (credentials.keep_ptrace && ::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) {
    fail_child("keeping CAP_SYS_PTRACE");
  }
  // Raw system calls: this process has one thread, and glibc's wrappers are
  // not async-signal-safe.
  if (::syscall(SYS_setgroups, credentials.groups.size(), credentials.groups.data()) != 0) {
    fail_child("setgroups");
  }
  if (::syscall(SYS_setresgid, credentials.gid, credentials.gid, credentials.gid) != 0) {
    fail_child("setresgid");
  }
  if (::syscall(SYS_setresuid, credentials.uid, credentials.uid, credentials.uid) != 0) {
    fail_child("setresuid");
  }
  uid_t real = 0, effective = 0, saved = 0;
  if (::getresuid(&real, &effective, &saved) != 0 || real != credentials.uid ||
      effective != credentials.uid || saved != credentials.uid) {
    fail_child("the user did not change");
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (credentials.keep_ptrace) {
    constexpr std::uint32_t ptrace_bit = 1U << CAP_SYS_PTRACE;  // in the first 32
    data[0] = {ptrace_bit, ptrace_bit, ptrace_bit};
  }
  if (::syscall(SYS_capset, &header, data) != 0) {
    fail_child("clearing capabilities");
  }
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  if (credentials.keep_ptrace) {
    ::prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_PTRACE, 0, 0) != 0) {
      fail_child("raising CAP_SYS_PTRACE as ambient");
    }
  }
}

// Runs in the child between fork and exec: only async-signal-safe calls.
// A group of its own lets us kill every descendant at once. (No descriptor
// of ours but the three reaches the env's code: spawn.cpp sees to that.)
void prepare_child(const ChildSetup& setup, bool in_cgroup) {
  // A session of its own (and so a process group of its own): no
  // controlling terminal, so env code cannot read from or type into the
  // terminal of an operator running `envcontractd scan`.
  ::setsid();
  // Into the probe's cgroups while still root: writing "0" moves the writer.
  // Started in the v2 one already (the first), it joins only the others.
  for (std::size_t i = in_cgroup ? 1 : 0; i < setup.join_fds.size(); ++i) {
    if (::write(setup.join_fds[i], "0", 1) != 1) {
      fail_child("joining its cgroup");
    }
  }
  for (std::size_t i = 0; i < setup.limit_count; ++i) {
    const auto [resource, value] = setup.limits[i];
    rlimit limit{};
    ::getrlimit(resource, &limit);
    // Only ever lower: an operator's tighter limit stays. The CPU limit's
    // hard value is a little above the soft one, so SIGXCPU comes first.
    const rlim_t hard = resource == RLIMIT_CPU ? value + 5 : value;
    limit.rlim_max = std::min(limit.rlim_max, hard);
    limit.rlim_cur = std::min(limit.rlim_max, value);
    if (::setrlimit(resource, &limit) != 0) {
      fail_child("setting resource limits");
    }
  }
  if (setup.credentials != nullptr) {
    drop_to(*setup.credentials);
  }
  if (::chdir(setup.working_dir) != 0) {
    fail_child("entering its working directory");
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    fail_child("no_new_privs");
  }
  // In its own group, the child is out of reach of a signal to the agent's
  // group: if the agent dies (kill -9, a crash) mid-probe, the kernel kills
  // the child rather than leaving a hung probe spinning for ever. Our own
  // kill covers the child's descendants; this covers the child when we are
  // gone. Set after the change of user, which clears it. The agent may have
  // died before prctl: then leave at once.
  if (setup.dies_with_starter) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  }
  if (::getppid() != setup.agent) {
    ::_exit(127);
  }
  // The agent ignores SIGPIPE and SIGXFSZ and may block signals in its
  // threads; the env's code gets the defaults a shell would give it.
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGXFSZ, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

ChildSetup child_setup(const ProcessSpec& spec, const ResourceLimits& resources,
                       const ProbeCgroup* cgroup) {
  ChildSetup setup;
  setup.agent = ::getpid();
  if (cgroup != nullptr) {
    setup.join_fds = cgroup->join_fds();
  }
  auto add = [&](int resource, std::uint64_t value) {
    if (value > 0) {
      setup.limits[setup.limit_count++] = {resource, static_cast<rlim_t>(value)};
    }
  };
  // RLIMIT_DATA, not RLIMIT_AS: device runtimes reserve terabytes of address
  // space they never touch (CUDA's unified memory), which RLIMIT_AS would
  // refuse; RLIMIT_DATA counts what is really writable.
  add(RLIMIT_DATA, resources.memory_bytes);
  add(RLIMIT_CPU, resources.cpu_seconds);
  add(RLIMIT_NOFILE, resources.open_files);
  // RLIMIT_NPROC counts every process of the user, not the probe's: only a
  // fallback, generous, where no pids cgroup bounds the tree.
  if (spec.credentials && spec.credentials->uid != 0 &&
      (cgroup == nullptr || !cgroup->limits_processes())) {
    add(RLIMIT_NPROC, resources.processes * 8);
  }
  setup.credentials = spec.credentials ? &*spec.credentials : nullptr;
  setup.working_dir = spec.working_dir.empty() ? "/" : spec.working_dir.c_str();
  return setup;
}

}  // namespace

std::string probe_marker_of(pid_t pid) {
  constexpr FileLimits k_environ{"process environment", 1024 * 1024, false, 0};
  const auto environ =
      read_file_bounded("/proc/" + std::to_string(pid) + "/environ", k_environ).text;
  const std::string needle = std::string(k_marker_variable) + "=";
  std::size_t at = 0;
  while (environ && at < environ->size()) {
    const std::size_t end = std::min(environ->find('\0', at), environ->size());
    if (environ->compare(at, needle.size(), needle) == 0) {
      return environ->substr(at, end - at);
    }
    at = end + 1;
  }
  return "";
}

std::string limits_for_bootstrap(const ResourceLimits& resources, bool limit_processes) {
  std::string words;
  const auto add = [&](char flag, std::uint64_t soft, std::uint64_t hard) {
    if (soft > 0) {
      words += (words.empty() ? "" : " ") + std::string(1, flag) + ":" + std::to_string(soft) +
               ":" + std::to_string(hard);
    }
  };
  // As prepare_child sets them on a child of ours (bash counts data in KiB).
  const std::uint64_t data_kib =
      resources.memory_bytes == 0 ? 0 : std::max<std::uint64_t>(1, resources.memory_bytes / 1024);
  add('d', data_kib, data_kib);
  add('t', resources.cpu_seconds, resources.cpu_seconds == 0 ? 0 : resources.cpu_seconds + 5);
  add('n', resources.open_files, resources.open_files);
  if (limit_processes) {
    // The container's cgroup bounds its pids, not ours: RLIMIT_NPROC, per
    // user as ever, generous.
    add('u', resources.processes * 8, resources.processes * 8);
  }
  return words;
}

namespace {

// Reads a pipe to its end into a capture.
class PipeReader {
 public:
  // `on_end` runs when the pipe reaches its end: a hint to look at the child now.
  PipeReader(asio::posix::stream_descriptor& pipe, OutputCapture& capture,
             std::function<void()> on_end)
      : m_pipe(pipe), m_capture(capture), m_on_end(std::move(on_end)) {}

  void start() {
    m_pipe.async_read_some(asio::buffer(m_buffer),
                           [this](const boost::system::error_code& error, std::size_t size) {
                             m_capture.append(std::string_view(m_buffer.data(), size));
                             if (error) {
                               m_open = false;
                               m_on_end();
                               return;
                             }
                             start();
                           });
  }
  bool open() const { return m_open; }
  void close() {
    boost::system::error_code ignored;
    m_pipe.close(ignored);
  }

 private:
  asio::posix::stream_descriptor& m_pipe;
  OutputCapture& m_capture;
  std::function<void()> m_on_end;
  std::array<char, 65536> m_buffer{};
  bool m_open = true;
};

// "NAME=value" for each variable, as execve takes them.
std::vector<std::string> environment_strings(const Environment& environment) {
  std::vector<std::string> strings;
  strings.reserve(environment.size());
  for (const auto& [name, value] : environment) {
    strings.push_back(name + "=" + value);
  }
  return strings;
}

// The child's preparation, between its start and execve.
class PreparedChild final : public ChildPreparation {
 public:
  explicit PreparedChild(const ChildSetup& setup) : m_setup(setup) {}
  void prepare(bool in_cgroup) const override { prepare_child(m_setup, in_cgroup); }

 private:
  const ChildSetup& m_setup;
};

// A pipe for the child's stdio: the child's end, and ours for asio. Both
// close-on-exec, so no other child started meanwhile inherits them.
struct StdioPipe {
  UniqueFd child_end;
  UniqueFd our_end;
};

std::optional<StdioPipe> stdio_pipe(bool child_reads) {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) {
    return std::nullopt;
  }
  UniqueFd read_end(ends[0]);
  UniqueFd write_end(ends[1]);
  return child_reads ? StdioPipe{std::move(read_end), std::move(write_end)}
                     : StdioPipe{std::move(write_end), std::move(read_end)};
}

// Runs `cleanup` when the scope is left by an exception, not otherwise.
template <typename Cleanup>
class OnUnwind {
 public:
  explicit OnUnwind(Cleanup cleanup) : m_cleanup(std::move(cleanup)) {}
  OnUnwind(const OnUnwind&) = delete;
  OnUnwind& operator=(const OnUnwind&) = delete;
  ~OnUnwind() {
    if (std::uncaught_exceptions() > m_exceptions) {
      try {
        m_cleanup();
      } catch (...) {
        // A second exception while one unwinds would end the agent: the
        // first one is what the caller hears of.
      }
    }
  }

 private:
  Cleanup m_cleanup;
  int m_exceptions = std::uncaught_exceptions();
};

// Writing stdin to a child that already exited raises SIGPIPE, whose default
// action would kill the agent: ignored (the write then fails with EPIPE).
void ignore_sigpipe() {
  static std::once_flag once;
  std::call_once(once, [] { ::signal(SIGPIPE, SIG_IGN); });
}

// Reaps our child `pid` once it has ended, waiting at most `limit` (a child
// asleep where SIGKILL does not reach is not waited for).
void reap_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (::waitpid(pid, nullptr, WNOHANG) == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Reaps what is left of the child's process group once it was killed: the
// orphans that became our children because we are a subreaper. Bounded: a
// member that escaped the group is not ours to wait for.
void reap_group(pid_t group) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(200);
  while (Clock::now() < deadline) {
    const pid_t reaped = ::waitpid(-group, nullptr, WNOHANG);
    if (reaped < 0) {
      return;  // ECHILD: no child of ours is left in the group
    }
    if (reaped == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

// A process left behind: its pid, and a pidfd of it where the kernel has them.
struct LeftProcess {
  pid_t pid = -1;
  UniqueFd pidfd;
};

// Whether `pidfd`'s process has ended (its pidfd is readable from then on).
bool has_ended(const UniqueFd& pidfd) {
  pollfd ready{pidfd.get(), POLLIN, 0};
  return ::poll(&ready, 1, 0) == 1 && (ready.revents & POLLIN) != 0;
}

// Waits, as long as it takes, for a process left behind to end, and reaps
// it once it is our child (it may become ours later: when its parent ends,
// the agent, a subreaper, inherits it). Through its pidfd: a pid freed and
// given to another process is neither waited for nor reaped.
void wait_for_end(const LeftProcess& process) {
  const int pidfd = process.pidfd.get();
  for (;;) {
    if (process.pidfd) {
      siginfo_t info{};
      if (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info, WEXITED) == 0) {
        return;  // ours, reaped
      }
      const int wait_error = errno;
      if (wait_error == EINTR) {
        continue;
      }
      // No P_PIDFD (Linux 5.3): once it has ended, reap it by pid if it is
      // ours (a zombie of ours keeps its pid).
      if (wait_error != ECHILD && has_ended(process.pidfd) &&
          ::waitpid(process.pid, nullptr, WNOHANG) == process.pid) {
        return;
      }
      // Not our child: gone once its own parent reaped it. Where signals
      // through pidfds are refused, ended and not ours is as far as we see.
      if (::syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) != 0 &&
          (errno == ESRCH || (has_ended(process.pidfd) &&
                              ::waitpid(process.pid, nullptr, WNOHANG) < 0 && errno == ECHILD))) {
        return;
      }
    } else {
      // No pidfds (Linux before 5.3): by pid, as well as it can be done.
      if (::waitpid(process.pid, nullptr, 0) == process.pid) {
        return;
      }
      if (errno == EINTR) {
        continue;
      }
      if (::kill(process.pid, 0) != 0 && errno == ESRCH) {
        return;
      }
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

}  // namespace

AttachedProcess start_attached(const ProcessSpec& spec, const ResourceLimits& resources) {
  AttachedProcess process;
  if (spec.argv.empty()) {
    process.error = "no command given";
    return process;
  }
  ignore_sigpipe();
  auto out_ends = stdio_pipe(false);
  auto err_ends = stdio_pipe(false);
  auto in_ends = stdio_pipe(true);
  if (!out_ends || !err_ends || !in_ends) {
    process.error = std::string("pipe2: ") + std::strerror(errno);
    return process;
  }
  ProcessSpec limited = spec;
  if (spec.tree_outside && spec.limits_word < spec.argv.size()) {
    limited.argv[spec.limits_word] = limits_for_bootstrap(resources, spec.unprivileged_inside);
  }
  static std::atomic<unsigned> next_marker{0};
  const std::string value =
      std::to_string(::getpid()) + "-s" + std::to_string(next_marker.fetch_add(1));
  limited.environment[k_marker_variable] = value;
  process.marker = std::string(k_marker_variable) + "=" + value;
  // A tree outside ours gets its limits inside; one of ours gets them here.
  ChildSetup setup =
      child_setup(spec, spec.tree_outside ? ResourceLimits{0, 0, 0, 0} : resources, nullptr);
  // It outlives the thread that starts it; should the agent die, its stdin
  // ends, and with it the session.
  setup.dies_with_starter = false;
  auto spawned = spawn_process(
      limited.argv, environment_strings(limited.environment),
      ChildStdio{in_ends->child_end.get(), out_ends->child_end.get(), err_ends->child_end.get()},
      -1, PreparedChild(setup));
  if (spawned.pid < 0) {
    process.error = spawned.error;
    return process;
  }
  process.pid = spawned.pid;
  process.in = std::move(in_ends->our_end);
  process.out = std::move(out_ends->our_end);
  process.err = std::move(err_ends->our_end);
  return process;
}

void end_attached(AttachedProcess& process, const ProcessSpec& spec,
                  std::chrono::milliseconds grace) {
  if (process.pid <= 0) {
    return;
  }
  process.in.reset();
  ::kill(process.pid, SIGKILL);
  ::killpg(process.pid, SIGKILL);
  std::vector<pid_t> killed;
  const auto marked = spec.tree_outside && spec.inside_process > 0
                          ? find_marked_processes_in(process.marker, spec.inside_process)
                          : find_marked_processes(process.marker);
  for (const pid_t each : marked) {
    if (each != process.pid) {
      ::kill(each, SIGKILL);
      killed.push_back(each);
    }
  }
  reap_within(process.pid, grace);
  if (::waitpid(process.pid, nullptr, WNOHANG) == 0) {
    // Asleep where SIGKILL does not reach yet: reaped whenever it ends.
    std::thread([pid = process.pid] {
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }).detach();
  }
  reap_adopted(std::move(killed));
  process.pid = -1;
  process.out.reset();
  process.err.reset();
}

bool become_subreaper() {
  return ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
}

void open_missing_standard_streams() {
  for (int fd = 0; fd < 3; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      // The lowest free number: this one.
      if (const int opened = ::open("/dev/null", O_RDWR); opened >= 0 && opened != fd) {
        ::close(opened);
      }
    }
  }
}

std::string signal_name(int signal) {
  const char* abbreviation = sigabbrev_np(signal);
  return abbreviation ? std::string("SIG") + abbreviation : "signal " + std::to_string(signal);
}

std::string ProcessResult::left_behind_text() const {
  return left_behind ? " (and could not be killed: it sleeps in the kernel on a request that a "
                       "filesystem's server took and never answered; left behind)"
                     : "";
}

void ProcessResult::take_output(const OutputCapture& out_capture,
                                const OutputCapture& err_capture) {
  out = out_capture.text();
  err = err_capture.text();
  out_bytes = out_capture.total_bytes();
  err_bytes = err_capture.total_bytes();
}

std::string ProcessResult::describe() const {
  switch (outcome) {
    case Outcome::exited:
      return "exit " + std::to_string(exit_code);
    case Outcome::signaled:
      return "killed by " + signal_name(signal);
    case Outcome::timed_out:
      return "timed out after " + std::to_string(duration.count()) + " ms" + left_behind_text();
    case Outcome::cancelled:
      return "stopped after " + std::to_string(duration.count()) + " ms: " + cancel_reason +
             left_behind_text();
    case Outcome::failed_to_start:
      break;
  }
  return "failed to start: " + error;
}

namespace {

// Processes that a SIGKILL did not end (asleep on a filesystem that does
// not answer): killed already, and nothing more will end them. Reaped
// whenever they end (their filesystem answers or goes), their cgroup
// directories removed then, on a thread of their own; counted meanwhile
// against `runs_as`, so that no more of that user's are started behind them.
void leave_behind(const std::vector<pid_t>& stuck, std::vector<std::string> dirs, uid_t runs_as) {
  // Each one pinned by a pidfd, opened while its pid is still its own: the
  // leader is our child, not reaped; the others were members of the probe's
  // cgroup a moment ago and, killed, end only by leaving it.
  std::vector<LeftProcess> left;
  for (const pid_t each : stuck) {
    UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, each, 0)));
    if (!pidfd && errno == ESRCH) {
      continue;  // ended (and reaped) since it was listed
    }
    left.push_back({each, std::move(pidfd)});
  }
  g_left_behind.add(runs_as);
  const OnUnwind uncount([runs_as] { g_left_behind.remove(runs_as); });
  std::thread([left = std::move(left), dirs = std::move(dirs), runs_as] {
    for (const auto& each : left) {
      wait_for_end(each);
    }
    for (const auto& dir : dirs) {
      for (int attempt = 0; attempt < 200 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY;
           ++attempt) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    g_left_behind.remove(runs_as);
  }).detach();
}

// How a process that ran its program ended, from its wait `status`.
// `cancelled`: the cancellation that stopped it, or null.
void conclude(ProcessResult& result, int status, bool timed_out, const Cancellation* cancelled) {
  if (timed_out) {
    result.outcome = ProcessResult::Outcome::timed_out;
    result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
  } else if (cancelled != nullptr) {
    result.outcome = ProcessResult::Outcome::cancelled;
    result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
    result.cancel_reason = cancelled->reason();
  } else if (WIFSIGNALED(status)) {
    result.outcome = ProcessResult::Outcome::signaled;
    result.signal = WTERMSIG(status);
  } else {
    result.outcome = ProcessResult::Outcome::exited;
    result.exit_code = WEXITSTATUS(status);
    // Our own setup in the child failed (fail_child): the command never ran,
    // which is not the command failing (a directory its user may not enter
    // is no drift of the env).
    constexpr std::string_view setup_failed = "envcontract: cannot start the process: ";
    if (result.exit_code == 126 && result.err.starts_with(setup_failed)) {
      result.outcome = ProcessResult::Outcome::failed_to_start;
      const auto line = result.err.substr(setup_failed.size());
      result.error = line.substr(0, line.find('\n'));
    }
  }
}

}  // namespace

// One function from the spawn to the reaping, on purpose: the child's pid is
// ours only until it is reaped, and every step here (ending its group, the
// hook sampling its stacks, reaping it and what it left) relies on where in
// that life the child is: end_group, the unwinding guard and the event loop
// share that state, and split they would each have to be told it.
ProcessResult run_process(const ProcessSpec& spec, const ProcessLimits& limits,
                          const TimeoutHook& on_timeout) {
  ProcessResult result;
  const auto started = Clock::now();
  if (spec.argv.empty()) {
    result.error = "no command given";
    return result;
  }
  if (limits.cancellation != nullptr && limits.cancellation->cancelled()) {
    result.outcome = ProcessResult::Outcome::cancelled;
    result.cancel_reason = limits.cancellation->reason();
    return result;
  }
  const uid_t runs_as = spec.credentials ? spec.credentials->uid : ::geteuid();
  if (auto refusal = g_left_behind.refusal(runs_as); !refusal.empty()) {
    result.error = std::move(refusal);
    return result;
  }
  ignore_sigpipe();

  asio::io_context io;
  // The child's stdout, stderr and stdin; ours pass to the stream
  // descriptors, the child's are closed as soon as it has started.
  auto out_ends = stdio_pipe(false);
  auto err_ends = stdio_pipe(false);
  auto in_ends = stdio_pipe(true);
  if (!out_ends || !err_ends || !in_ends) {
    result.error = std::string("pipe2: ") + std::strerror(errno);
    return result;
  }
  asio::posix::stream_descriptor out_pipe(io);
  asio::posix::stream_descriptor err_pipe(io);
  asio::posix::stream_descriptor in_pipe(io);
  for (const auto& [ends, ours] : {std::pair{&out_ends, &out_pipe}, std::pair{&err_ends, &err_pipe},
                                   std::pair{&in_ends, &in_pipe}}) {
    ours->assign((*ends)->our_end.get());  // takes it only when it succeeds
    (*ends)->our_end.release();
  }
  // Every descendant stays in reach: in a cgroup of its own where the host
  // gives us one, else marked in its environment.
  const auto cgroup = ProbeCgroup::create(limits.resources);
  Environment environment = spec.environment;
  std::string marker;
  ProcessSpec limited_inside;
  const ProcessSpec* started_spec = &spec;
  if (spec.tree_outside && spec.limits_word < spec.argv.size()) {
    limited_inside = spec;
    limited_inside.argv[spec.limits_word] =
        limits_for_bootstrap(limits.resources, spec.unprivileged_inside);
    started_spec = &limited_inside;
  }
  if (!cgroup || spec.tree_outside) {
    static std::atomic<unsigned> next_marker{0};
    const std::string value =
        std::to_string(::getpid()) + "-" + std::to_string(next_marker.fetch_add(1));
    environment[k_marker_variable] = value;
    marker = std::string(k_marker_variable) + "=" + value;
  }
  // A client whose command runs elsewhere gets no rlimits: they are the
  // command's, set inside.
  const ChildSetup setup = child_setup(
      spec, spec.tree_outside ? ResourceLimits{0, 0, 0, 0} : limits.resources, cgroup.get());
  const auto spawned = spawn_process(
      started_spec->argv, environment_strings(environment),
      ChildStdio{in_ends->child_end.get(), out_ends->child_end.get(), err_ends->child_end.get()},
      cgroup ? cgroup->start_dir() : -1, PreparedChild(setup));
  for (auto* ends : {&out_ends, &err_ends, &in_ends}) {
    (*ends)->child_end.reset();
  }
  if (spawned.pid < 0) {
    result.error = spawned.error;
    return result;
  }
  const pid_t pid = spawned.pid;

  // The process group, then whatever left it (setsid, double fork).
  std::vector<pid_t> escaped;
  auto end_group = [&] {
    // The child itself first: until it has called setsid it is in no group
    // of its own, and until it has joined its cgroups (when it could not
    // start in one) no cgroup holds it. Its pid is still its own: it is our
    // child, not yet reaped.
    ::kill(pid, SIGKILL);
    ::killpg(pid, SIGKILL);
    auto killed = cgroup ? cgroup->kill_all() : std::vector<pid_t>{};
    if (!marker.empty()) {
      // Where no cgroup of ours holds them: the container's own cgroup.
      const auto marked_ones = spec.tree_outside && spec.inside_process > 0
                                   ? find_marked_processes_in(marker, spec.inside_process)
                                   : find_marked_processes(marker);
      for (const pid_t marked : marked_ones) {
        ::kill(marked, SIGKILL);
        killed.push_back(marked);
      }
    }
    for (const pid_t other : killed) {
      escaped.push_back(other);
    }
  };
  // Whatever throws from here on (the time-out hook, an allocation) leaves
  // no probe running and no zombie behind it: the tree is ended and reaped
  // as the exception passes, within the same bounds as a normal end.
  bool ending_normally = false;  // from here the leader may be reaped: its pid is no longer ours
  const OnUnwind end_on_unwind([&] {
    if (ending_normally) {
      return;
    }
    end_group();
    reap_within(pid, std::chrono::seconds(5));
    std::erase(escaped, pid);
    reap_adopted(std::move(escaped));
  });

  asio::steady_timer tick(io);
  OutputCapture out_capture(limits.max_output_bytes);
  OutputCapture err_capture(limits.max_output_bytes);
  // A closed pipe usually means the child is exiting: look now, not at the next poll.
  auto look_now = [&tick] { tick.cancel(); };
  PipeReader out_reader(out_pipe, out_capture, look_now);
  PipeReader err_reader(err_pipe, err_capture, look_now);
  // The child's end wakes the loop at once (its pidfd becomes readable): a
  // child closes its pipes a moment before it can be reaped, and the poll
  // after that would cost up to k_max_poll per process. Without pidfd_open
  // (Linux before 5.3, or a filter that refuses it) the polls notice it.
  asio::posix::stream_descriptor exit_watch(io);
  boost::system::error_code ignored_close;
  if (UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))); pidfd) {
    exit_watch.assign(pidfd.get());
    pidfd.release();
    exit_watch.async_wait(asio::posix::stream_descriptor::wait_read,
                          [&](const boost::system::error_code& error) {
                            if (!error) {
                              look_now();
                            }
                          });
  }
  out_reader.start();
  err_reader.start();
  if (spec.stdin_data.empty()) {
    in_pipe.close();
  } else {
    asio::async_write(in_pipe, asio::buffer(spec.stdin_data),
                      [&](const boost::system::error_code&, std::size_t) { in_pipe.close(); });
  }

  bool exited = false;
  bool timed_out = false;
  bool cancelled = false;
  int status = 0;
  Clock::time_point drain_deadline = Clock::time_point::max();
  const auto fixed_deadline = started + limits.timeout;
  const auto deadline_now = [&] { return limits.deadline ? limits.deadline() : fixed_deadline; };
  std::chrono::milliseconds poll = k_first_poll;
  bool finished = false;
  // A process asleep in the kernel on a request that a filesystem's server
  // has taken and never answers (FUSE) is not ended even by SIGKILL: past
  // this grace after the kill it is left behind rather than waited for.
  constexpr std::chrono::seconds k_unkillable_grace{5};
  Clock::time_point killed_at = Clock::time_point::max();
  Clock::time_point stopped_at = Clock::time_point::max();  // when the timeout or cancel came
  bool left_behind = false;

  std::function<void()> on_tick = [&] {
    if (!exited) {
      // Seen exited but not reaped (WNOWAIT): while the leader is a zombie
      // its pid, the group's id, cannot be given to another process, so
      // killpg below and after the drain reaches the probe's group and no
      // one else's. It is reaped once its group is ended.
      siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == pid) {
        exited = true;
        // How it ended, as waitpid would say it: taken here, so that the
        // reaping below cannot lose it.
        status = info.si_code == CLD_EXITED   ? (info.si_status & 0xff) << 8
                 : info.si_code == CLD_DUMPED ? (info.si_status & 0x7f) | 0x80
                                              : info.si_status & 0x7f;
        end_group();  // descendants left in its group die with it
        drain_deadline = Clock::now() + limits.drain_grace;
      } else if (!timed_out && !cancelled && Clock::now() >= deadline_now()) {
        timed_out = true;
        stopped_at = Clock::now();
        // A child still before execve runs no env code yet: nothing of the
        // env's to sample (it is a copy of the agent).
        if (on_timeout && !still_starting(spawned.start_report)) {
          on_timeout(pid);
        }
        end_group();
        killed_at = Clock::now();
      } else if (limits.cancellation != nullptr && limits.cancellation->cancelled() && !timed_out &&
                 !cancelled) {
        cancelled = true;
        stopped_at = Clock::now();
        end_group();
        killed_at = Clock::now();
      } else if (killed_at != Clock::time_point::max() &&
                 Clock::now() >= killed_at + k_unkillable_grace) {
        left_behind = true;
        finished = true;
        out_reader.close();
        err_reader.close();
        in_pipe.close();
        exit_watch.close(ignored_close);
        return;
      }
    }
    const bool output_done = !out_reader.open() && !err_reader.open();
    if (exited && (output_done || Clock::now() >= drain_deadline)) {
      // Whatever still holds the pipes escaped the group; stop listening.
      finished = true;
      out_reader.close();
      err_reader.close();
      in_pipe.close();
      exit_watch.close(ignored_close);
      return;
    }
    tick.expires_after(poll);
    poll = std::min(poll * 2, k_max_poll);
    tick.async_wait([&](const boost::system::error_code&) {
      // Expired or cancelled by look_now: either way, look again.
      if (!finished) {
        on_tick();
      }
    });
  };
  on_tick();
  io.run();
  ending_normally = true;
  std::vector<pid_t> stuck;
  if (left_behind) {
    stuck.push_back(pid);
  } else {
    end_group();
    if (exited) {
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    reap_group(pid);
    // The leader is reaped: its pid may already be another process's.
    std::erase(escaped, pid);
    // They were re-parented to us (the agent is their subreaper): no zombie is left.
    reap_adopted(std::move(escaped));
    // A descendant asleep where SIGKILL does not reach (bash's child on a
    // FUSE request) outlives the group: left behind the same way.
    if (cgroup) {
      stuck = cgroup->members();
    }
  }
  if (!stuck.empty()) {
    result.left_behind = true;
    leave_behind(stuck, cgroup ? cgroup->release() : std::vector<std::string>(), runs_as);
  }

  // A timed-out or cancelled process took until it was told to stop; the
  // killing and any grace after it are not its time.
  result.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
      (stopped_at != Clock::time_point::max() ? stopped_at : Clock::now()) - started);
  result.take_output(out_capture, err_capture);
  // The child never ran the program (it is not there, not executable...):
  // that, even when the time-out or a cancellation came as it failed.
  const auto failure = exited && !left_behind ? start_failure(spawned.start_report) : std::nullopt;
  if (failure) {
    result.error = describe(*failure, spec.argv[0]);
    if (failure->step == StartFailure::Step::execve) {
      result.exec_error = failure->error;
    }
  } else {
    conclude(result, status, timed_out, cancelled ? limits.cancellation : nullptr);
  }
  return result;
}

}  // namespace envcontract::process
