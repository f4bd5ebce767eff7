#include "process/stall_guard.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "common/time_text.hpp"
#include "process/proc_stat.hpp"
#include "process/read_dependencies.hpp"

namespace envcontract::process {
namespace {

// Abandoned readers are threads; past this many blocked at once, no more
// units are started (each keeps a stack and a task of the agent's cgroup).
constexpr std::size_t k_max_blocked = facts::k_max_blocked_readers;

struct Job {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  bool abandoned = false;
  std::exception_ptr error;
  std::string last_path;
  pid_t thread_id = 0;
  std::string started_at;
  std::string key;
  Cancellation cancellation;  // the job's own: outlives whoever waited for it
};

struct Registry {
  std::mutex mutex;
  std::condition_variable released;
  // By unit: two scans (the agent's, a provisioning job's) may each leave one.
  std::multimap<std::string, std::shared_ptr<Job>> blocked;
};

// Never destroyed: an abandoned reader may wake while the process exits.
Registry& registry() {
  static auto* instance = new Registry;
  return *instance;
}

thread_local Job* t_job = nullptr;

std::string first_line_of(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string system_call_name(long number) {
  switch (number) {
#define ENVCONTRACT_CALL(name) \
  case SYS_##name:             \
    return #name;
#ifdef SYS_open
    ENVCONTRACT_CALL(open)
#endif
#ifdef SYS_stat
    ENVCONTRACT_CALL(stat)
#endif
#ifdef SYS_lstat
    ENVCONTRACT_CALL(lstat)
#endif
#ifdef SYS_readlink
    ENVCONTRACT_CALL(readlink)
#endif
#ifdef SYS_access
    ENVCONTRACT_CALL(access)
#endif
    ENVCONTRACT_CALL(openat)
#ifdef SYS_openat2
    ENVCONTRACT_CALL(openat2)
#endif
    ENVCONTRACT_CALL(mkdirat)
    ENVCONTRACT_CALL(unlinkat)
    ENVCONTRACT_CALL(newfstatat)
    ENVCONTRACT_CALL(statx)
    ENVCONTRACT_CALL(fstat)
    ENVCONTRACT_CALL(getdents64)
    ENVCONTRACT_CALL(read)
    ENVCONTRACT_CALL(pread64)
    ENVCONTRACT_CALL(readlinkat)
    ENVCONTRACT_CALL(faccessat)
    ENVCONTRACT_CALL(faccessat2)
    ENVCONTRACT_CALL(mmap)
    ENVCONTRACT_CALL(close)
#undef ENVCONTRACT_CALL
    default:
      return "system call " + std::to_string(number);
  }
}

// Where the thread sleeps: /proc/self/task/TID/{stat,syscall,wchan}.
void describe_blocked_thread(pid_t thread_id, Stall& stall) {
  const std::string task = "/proc/self/task/" + std::to_string(thread_id);
  if (const auto stat = read_proc_stat(task + "/stat")) {
    stall.running = stat->field(3) == "R";
  }
  const std::string call = first_line_of(task + "/syscall");
  if (!call.empty() && call != "running" && call.front() != '-') {
    try {
      stall.system_call = system_call_name(std::stol(call.substr(0, call.find(' '))));
    } catch (const std::exception&) {
    }
  }
  const std::string wchan = first_line_of(task + "/wchan");
  if (!wchan.empty() && wchan != "0") {
    stall.kernel_wait = wchan;
  }
}

}  // namespace

std::optional<Stall> run_bounded(const std::string& key, const std::string& what,
                                 std::chrono::milliseconds deadline, const Cancellation* outside,
                                 std::function<void(const Cancellation&)> work,
                                 std::chrono::milliseconds cancel_grace) {
  if (deadline.count() <= 0) {
    static const Cancellation never;
    work(outside != nullptr ? *outside : never);
    return std::nullopt;
  }
  auto& known = registry();
  {
    std::lock_guard lock(known.mutex);
    const auto earlier = known.blocked.find(key);
    if (earlier != known.blocked.end()) {
      Stall stall;
      stall.what = what;
      stall.from_earlier = true;
      stall.deadline = deadline;
      std::lock_guard job_lock(earlier->second->mutex);
      stall.since = earlier->second->started_at;
      stall.last_path = earlier->second->last_path;
      describe_blocked_thread(earlier->second->thread_id, stall);
      return stall;
    }
    if (known.blocked.size() >= k_max_blocked) {
      Stall stall;
      stall.what = what;
      stall.too_many = true;
      return stall;
    }
  }
  auto job = std::make_shared<Job>();
  job->key = key;
  job->started_at = common::now_rfc3339();
  std::thread([job, work = std::move(work)]() mutable {
    {
      std::lock_guard lock(job->mutex);
      job->thread_id = static_cast<pid_t>(::syscall(SYS_gettid));
    }
    t_job = job.get();
    std::exception_ptr error;
    try {
      work(job->cancellation);
    } catch (...) {
      error = std::current_exception();
    }
    t_job = nullptr;
    // What the work holds (caches, the env's state) goes before the job
    // leaves the registry: once it has left, the process may exit.
    work = nullptr;
    bool abandoned = false;
    {
      std::lock_guard lock(job->mutex);
      job->done = true;
      job->error = error;
      abandoned = job->abandoned;
    }
    job->finished.notify_all();
    if (abandoned) {
      auto& readers = registry();
      {
        std::lock_guard lock(readers.mutex);
        auto [first, last] = readers.blocked.equal_range(job->key);
        for (; first != last; ++first) {
          if (first->second == job) {
            readers.blocked.erase(first);
            break;
          }
        }
      }
      readers.released.notify_all();
    }
  }).detach();

  auto end = std::chrono::steady_clock::now() + deadline;
  bool cut = false;
  std::unique_lock lock(job->mutex);
  while (!job->done && std::chrono::steady_clock::now() < end) {
    if (!cut && outside != nullptr && outside->cancelled()) {
      // The work stops at its next step; one blocked in the kernel is not
      // waited for past a short grace (the agent is stopping).
      job->cancellation.cancel(outside->reason());
      cut = true;
      end = std::min(end, std::chrono::steady_clock::now() + cancel_grace);
    }
    job->finished.wait_for(lock, std::chrono::milliseconds(50));
  }
  if (job->done) {
    if (job->error) {
      std::rethrow_exception(job->error);
    }
    return std::nullopt;
  }
  job->abandoned = true;
  Stall stall;
  stall.what = what;
  stall.deadline = deadline;
  stall.cut_short = cut ? outside->reason() : "";
  stall.since = job->started_at;
  stall.last_path = job->last_path;
  describe_blocked_thread(job->thread_id, stall);
  job->cancellation.cancel(stall.message());
  {
    std::lock_guard registry_lock(known.mutex);
    known.blocked.emplace(key, job);
  }
  return stall;
}

void note_reading(const std::filesystem::path& path) {
  // What an env's facts were read from is also what they depend on.
  record_read(path);
  if (t_job != nullptr) {
    std::lock_guard lock(t_job->mutex);
    t_job->last_path = path.string();
  }
}

std::size_t blocked_readers() {
  auto& known = registry();
  std::lock_guard lock(known.mutex);
  return known.blocked.size();
}

bool wait_for_blocked_readers(std::chrono::milliseconds timeout) {
  auto& known = registry();
  std::unique_lock lock(known.mutex);
  return known.released.wait_for(lock, timeout, [&] { return known.blocked.empty(); });
}

}  // namespace envcontract::process
