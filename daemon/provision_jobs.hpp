#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <ostream>
#include <streambuf>
#include <string>
#include <thread>
#include <vector>

#include "common/result.hpp"
#include "process/cancellation.hpp"
#include "report/report.hpp"

// Provisions and promotions asked for over HTTP (POST /api/v1/provision,
// /promote). They take minutes, so a request only queues one: a thread of
// their own runs them one at a time, and GET /api/v1/provisions/{id} reads
// each one's progress while it runs.
namespace envcontract::daemon {

struct ProvisionJob {
  std::int64_t id = 0;
  std::string action;  // provision, promote
  std::string name;    // the new env (provision) or the link (promote)
  std::string env;     // promote: the env the link is to point to
  std::string requested_by;
  std::string state = "queued";    // queued, running, done
  int exit_code = -1;              // the verb's: 0 done, 1 refused or drifting, 2 failed
  std::vector<std::string> lines;  // what the verb printed, line by line (bounded)
  std::string queued_at;
  std::string finished_at;
};

report::Json to_json(const ProvisionJob& job);

// An output stream that hands each line it is given to `print` (a partial
// last line when it is destroyed): a verb's printing, as a job's lines.
class LineStream : public std::ostream {
 public:
  explicit LineStream(std::function<void(const std::string&)> print);
  ~LineStream() override;
  LineStream(const LineStream&) = delete;
  LineStream& operator=(const LineStream&) = delete;

 private:
  class Buffer : public std::streambuf {
   public:
    explicit Buffer(std::function<void(const std::string&)> print) : m_print(std::move(print)) {}
    void flush_line();

   protected:
    int_type overflow(int_type c) override;

   private:
    std::function<void(const std::string&)> m_print;
    std::string m_line;
  };
  Buffer m_buffer;
};

class ProvisionJobs {
 public:
  // Runs a job: the verb, printing through `print` (one call per line);
  // returns the verb's exit status. Called on the jobs' thread.
  using Runner = std::function<int(const ProvisionJob& job, const process::Cancellation& cancel,
                                   const std::function<void(const std::string&)>& print)>;

  explicit ProvisionJobs(Runner runner);
  ~ProvisionJobs();  // stops: cancels the running job and waits for it
  ProvisionJobs(const ProvisionJobs&) = delete;
  ProvisionJobs& operator=(const ProvisionJobs&) = delete;

  // Queues a job (its id, action, name, env and requested_by as given);
  // returns its id. At most `max_queued` wait: beyond, an error.
  common::Result<std::int64_t> submit(ProvisionJob job);
  std::optional<ProvisionJob> get(std::int64_t id) const;

  void stop();

  static constexpr std::size_t max_queued = 8;
  static constexpr std::size_t max_kept = 50;     // finished jobs kept for GET
  static constexpr std::size_t max_lines = 2000;  // per job; beyond, the oldest go

 private:
  void run();
  ProvisionJob* find(std::int64_t id);

  Runner m_runner;
  mutable std::mutex m_mutex;
  std::condition_variable m_wake;
  std::deque<ProvisionJob> m_jobs;  // oldest first: finished, running, queued
  std::int64_t m_next_id = 1;
  bool m_stopping = false;
  process::Cancellation m_cancel;
  std::thread m_thread;
};

}  // namespace envcontract::daemon
