#include "probes/hang_diagnosis.hpp"

#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "process/proc_stat.hpp"
#include "process/process_runner.hpp"
#include "process/small_files.hpp"

namespace envcontract::probes {
namespace fs = std::filesystem;

namespace {

// /proc files say size 0 and are short: read up to 4 KiB of what they hold.
constexpr process::FileLimits k_proc_file{"/proc file", 4096, true, 0};

constexpr double k_spinning_cpu_percent = 50.0;
constexpr double k_runnable_cpu_percent = 10.0;
constexpr const char* k_eu_stack = "/usr/bin/eu-stack";
// Where Debian's -dbgsym packages install debug files; only root writes there.
constexpr const char* k_system_debug_directory = "/usr/lib/debug";

struct RawSample {
  std::string name;
  char state = '?';
  unsigned long long cpu_ticks = 0;
};

// A task's name, state and CPU time (utime + stime, fields 14 and 15).
std::optional<RawSample> read_task_stat(const fs::path& task) {
  const auto stat = process::read_proc_stat(task / "stat");
  if (!stat || stat->fields.size() < 13) {
    return std::nullopt;
  }
  RawSample sample;
  sample.name = stat->name;
  sample.state = stat->field(3).empty() ? '?' : stat->field(3)[0];
  sample.cpu_ticks = std::strtoull(stat->field(14).c_str(), nullptr, 10) +
                     std::strtoull(stat->field(15).c_str(), nullptr, 10);
  return sample;
}

std::map<pid_t, RawSample> sample_tasks(pid_t pid) {
  std::map<pid_t, RawSample> samples;
  std::error_code error;
  const fs::path tasks = "/proc/" + std::to_string(pid) + "/task";
  for (fs::directory_iterator it(tasks, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    if (auto sample = read_task_stat(it->path())) {
      samples.emplace(static_cast<pid_t>(std::stol(name)), std::move(*sample));
    }
  }
  return samples;
}

std::string read_wchan(pid_t pid, pid_t tid) {
  const auto text =
      process::read_file_bounded(
          "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/wchan", k_proc_file)
          .text;
  const std::string wchan = process::trim(text.value_or(""));
  return wchan == "0" ? "" : wchan;
}

// "futex_do_wait", "futex_wait_queue_me" -> "futex wait": the words a reader knows.
std::string wait_kind(const ThreadSample& thread) {
  if (thread.wchan.find("futex") != std::string::npos) {
    return "futex wait";
  }
  if (thread.wchan.find("nanosleep") != std::string::npos ||
      thread.wchan.find("hrtimer") != std::string::npos) {
    return "sleep";
  }
  if (thread.wchan.find("poll") != std::string::npos ||
      thread.wchan.find("select") != std::string::npos ||
      thread.wchan.find("epoll") != std::string::npos) {
    return "poll";
  }
  if (thread.wchan.find("pipe") != std::string::npos ||
      thread.wchan.find("read") != std::string::npos) {
    return "read";
  }
  if (thread.state == 'D') {
    return "uninterruptible I/O";
  }
  return thread.wchan.empty() ? "sleep" : thread.wchan;
}

std::string where(const std::vector<StackFrame>& stack) {
  for (const auto& frame : stack) {
    if (!frame.function.empty()) {
      return frame.function + (frame.library.empty() ? "" : " (" + frame.library + ")");
    }
  }
  return stack.empty() ? "" : "an unknown function (" + stack.front().library + ")";
}

std::string thread_count_text(std::size_t count) {
  return std::to_string(count) + (count == 1 ? " thread" : " threads");
}

// Signals the process `pidfd` pins when there is one (a pid the process runner
// does not hold could be another process's by now), else `pid`.
bool send_signal(pid_t pid, int pidfd, int signal_number) {
#ifdef SYS_pidfd_send_signal
  if (pidfd >= 0) {
    return ::syscall(SYS_pidfd_send_signal, pidfd, signal_number, nullptr, 0) == 0;
  }
#endif
  return pidfd < 0 && ::kill(pid, signal_number) == 0;
}

// Whether the process `pidfd` pins has ended (its pidfd reads as ready).
bool has_ended(int pidfd) {
  pollfd watch{pidfd, POLLIN, 0};
  return pidfd >= 0 && ::poll(&watch, 1, 0) > 0;
}

void sample_python_stacks(pid_t pid, int pidfd, const StackReader& read, HangDiagnosis& diagnosis) {
  // The probe program creates the file when it registers its SIGUSR1
  // handler; before that, SIGUSR1 would simply kill the process.
  if (!read || !read() || !send_signal(pid, pidfd, SIGUSR1)) {
    return;
  }
  // faulthandler writes from its signal handler; give it a moment.
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    const auto text = read();
    if (text && !text->empty() && text->back() == '\n') {
      diagnosis.python_stacks = *text;
      return;
    }
  }
  diagnosis.python_stacks = read().value_or("");
}

// Whether this process holds CAP_SYS_PTRACE to hand on (root in a
// container without it does not): without it, the sampler attaches as the
// env's user alone, which works where Yama's ptrace_scope is 0.
bool holds_ptrace_capability() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  return ::syscall(SYS_capget, &header, data) == 0 &&
         (data[0].effective & (1U << CAP_SYS_PTRACE)) != 0;
}

// eu-stack opens every file the hung process maps, and the separate debug
// file each one names in its .gnu_debuglink: paths the env's owner chooses.
// So it runs as that owner (`sampler`), keeping only CAP_SYS_PTRACE to
// attach, and looks for debug files in the system's own debug directory
// alone (a debuglink is never followed beside the library, where the owner
// could leave a FIFO, a device node or a link to root's files). Its
// environment names no debuginfod server: nothing is fetched.
void sample_native_stack(pid_t pid, const std::optional<process::Credentials>& sampler,
                         HangDiagnosis& diagnosis) {
  if (::access(k_eu_stack, X_OK) != 0) {
    diagnosis.native_stack_problem = "eu-stack is not installed (apt install elfutils)";
    return;
  }
  process::ProcessSpec spec;
  spec.argv = {k_eu_stack,
               std::string("--debuginfo-path=") + k_system_debug_directory,
               "-m",
               "-n",
               "32",
               "-p",
               std::to_string(pid)};
  spec.environment = {{"PATH", "/usr/bin:/bin"}, {"LANG", "C.UTF-8"}};
  spec.credentials = sampler;
  if (spec.credentials && holds_ptrace_capability()) {
    spec.credentials->keep_ptrace = true;
  }
  process::ProcessLimits limits;
  limits.timeout = std::chrono::seconds(15);
  const auto result = process::run_process(spec, limits);
  diagnosis.native_stack = parse_eu_stack(result.out, diagnosis.busiest_tid);
  if (diagnosis.native_stack.empty()) {
    diagnosis.native_stack_problem =
        "eu-stack " + result.describe() + ": " + process::trim(result.err);
  }
}

}  // namespace

std::vector<StackFrame> parse_eu_stack(const std::string& output, pid_t tid) {
  std::vector<StackFrame> frames;
  std::istringstream lines(output);
  bool in_thread = false;
  const std::string header = "TID " + std::to_string(tid) + ":";
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("TID ")) {
      in_thread = line == header;
      continue;
    }
    if (!in_thread || !line.starts_with("#")) {
      continue;
    }
    // "#0  0x00007f8bab6081d3 xpu_wait - /path/libxpurt.so.1"
    std::istringstream fields(line);
    std::string index;
    std::string address;
    fields >> index >> address;
    std::string rest;
    std::getline(fields, rest);
    rest = process::trim(rest);
    StackFrame frame;
    const auto dash = rest.rfind(" - ");
    if (dash != std::string::npos) {
      frame.function = process::trim(rest.substr(0, dash));
      frame.library = fs::path(process::trim(rest.substr(dash + 3))).filename().string();
    } else if (rest.starts_with("- ")) {
      frame.library = fs::path(process::trim(rest.substr(2))).filename().string();
    } else {
      frame.function = rest;
    }
    frames.push_back(std::move(frame));
  }
  return frames;
}

// Busy on its own, or runnable and busy as far as a loaded machine lets it:
// a spinning thread on a host whose cores are all taken gets less than half
// a core, but it never sleeps.
bool is_spinning(const ThreadSample& thread) {
  return thread.cpu_percent >= k_spinning_cpu_percent ||
         (thread.state == 'R' && thread.cpu_percent >= k_runnable_cpu_percent);
}

void classify_hang(HangDiagnosis& diagnosis) {
  const auto& threads = diagnosis.threads;
  std::vector<const ThreadSample*> spinning;
  bool in_io = false;
  for (const auto& thread : threads) {
    if (is_spinning(thread)) {
      spinning.push_back(&thread);
    }
    in_io = in_io || thread.state == 'D';
  }
  diagnosis.classification = !spinning.empty() ? "spin" : in_io ? "io" : "blocked";

  // Group the threads that are not spinning by what they wait in.
  std::map<std::string, std::size_t> waiting;
  for (const auto& thread : threads) {
    if (!is_spinning(thread)) {
      ++waiting[wait_kind(thread)];
    }
  }
  std::vector<std::pair<std::string, std::size_t>> groups(waiting.begin(), waiting.end());
  std::sort(groups.begin(), groups.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string rest;
  for (const auto& [kind, count] : groups) {
    rest += (rest.empty() ? "" : ", ") + std::to_string(count) +
            (kind == "futex wait" ? " parked in futex wait" : " in " + kind);
  }
  const std::string location = where(diagnosis.native_stack);
  if (diagnosis.classification == "spin") {
    double top = 0;
    for (const auto* thread : spinning) {
      top = std::max(top, thread->cpu_percent);
    }
    diagnosis.summary =
        std::to_string(spinning.size()) + " of " + thread_count_text(threads.size()) +
        " running at ~" + std::to_string(static_cast<int>(std::lround(top))) + "% CPU" +
        (location.empty() ? "" : " in " + location) + (rest.empty() ? "" : "; " + rest);
  } else {
    diagnosis.summary = "all " + thread_count_text(threads.size()) + " asleep: " + rest +
                        (location.empty() ? "" : "; main thread in " + location);
  }
}

HangDiagnosis diagnose_hang(pid_t pid, const StackReader& read_python_stacks,
                            const std::optional<process::Credentials>& sampler,
                            std::chrono::milliseconds interval, int pidfd) {
  HangDiagnosis diagnosis;
  const auto first = sample_tasks(pid);
  const auto started = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(interval);
  const auto second = sample_tasks(pid);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double ticks_per_second = static_cast<double>(::sysconf(_SC_CLK_TCK));
  double busiest = -1;
  for (const auto& [tid, sample] : second) {
    ThreadSample thread;
    thread.tid = tid;
    thread.name = sample.name;
    thread.state = sample.state;
    const auto before = first.find(tid);
    if (before != first.end() && seconds > 0) {
      const double ticks = static_cast<double>(sample.cpu_ticks - before->second.cpu_ticks);
      thread.cpu_percent = 100.0 * ticks / ticks_per_second / seconds;
    }
    thread.wchan = read_wchan(pid, tid);
    if (thread.cpu_percent > busiest) {
      busiest = thread.cpu_percent;
      diagnosis.busiest_tid = tid;
    }
    diagnosis.threads.push_back(std::move(thread));
  }
  // With nobody busy, the main thread is the one whose stack explains the wait.
  const auto busiest_thread =
      std::find_if(diagnosis.threads.begin(), diagnosis.threads.end(),
                   [&](const ThreadSample& thread) { return thread.tid == diagnosis.busiest_tid; });
  if (busiest_thread == diagnosis.threads.end() || !is_spinning(*busiest_thread)) {
    diagnosis.busiest_tid = pid;
  }
  // Native first: it only pauses the process, the signal may end it.
  sample_native_stack(pid, sampler, diagnosis);
  if (has_ended(pidfd)) {
    // Its pid may be another process's by now: nothing sampled is the stage's.
    HangDiagnosis ended;
    ended.summary = "the process running the stage ended while it was sampled";
    return ended;
  }
  sample_python_stacks(pid, pidfd, read_python_stacks, diagnosis);
  classify_hang(diagnosis);
  return diagnosis;
}

}  // namespace envcontract::probes
