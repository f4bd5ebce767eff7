#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "daemon/gate_decision_record.hpp"
#include "daemon/scanner.hpp"

namespace envcontract::daemon {

struct AgentSnapshot;

// What a CI job's gate asks the local agent (POST /api/v1/gate).
struct GateRequest {
  // The job's contract as judged (LoadedContract::judged_sha256); "" : the
  // one the agent holds.
  std::string contract_digest;
  std::string env;  // a host env's prefix; "" : every host env the agent knows
  std::string ci;   // what the job says of itself, recorded as given
  std::string job_id;
  std::string job_url;
  std::string bypass;
};

// The agent's answer: the env's report under the agent's contract, judged
// now (its files read again, its code run again only when they changed or
// its dynamic facts are older than the reprobe interval), or why the agent
// cannot answer, in which case the job's gate judges the env itself.
struct GateAnswer {
  enum class Refusal {
    none,
    no_contract,       // the agent has no contract in force
    contract_differs,  // the job brings another contract than the agent's
    env_unknown,       // not an env the agent's last scan found on the host
    busy,              // too many gates wait already
    stopping,          // the agent is stopping
  };
  Refusal refusal = Refusal::none;
  std::string message;    // why refused
  report::Report report;  // a host report of the env(s) asked about
  GateDecisionRecord record;
  std::size_t probed = 0;  // envs whose code ran for this answer
  std::size_t reused = 0;  // envs whose dynamic facts were fresh
  double elapsed_ms = 0;
};

// Judges envs for CI gates beside the agent's scans: its own scanner (so a
// gate never waits for a scan of the whole host, nor the reverse), sharing
// the agent's probe cache (what either probed the other reuses while the
// env's fingerprint holds). One gate scan at a time; a few wait, more are
// refused.
class GateService {
 public:
  explicit GateService(std::shared_ptr<freshness::ProbeCache> shared_probes)
      : m_scanner(std::move(shared_probes)) {}

  // How many gates may be judged or wait at once: each holds an HTTP thread
  // while it does, so at most a quarter of them (and 9); none with fewer
  // than 4 threads, whose one thread a gate's scan could hold past the
  // liveness bound.
  void limit_in_flight(unsigned http_threads) {
    m_max_in_flight = std::clamp(static_cast<int>(http_threads / 4), 0, max_waiting + 1);
  }

  // `settings`: the agent's scan settings; the gate keeps their limits and
  // reprobe interval and scans only the env(s) asked about, on the host.
  GateAnswer judge(const GateRequest& request, const AgentSnapshot& snapshot,
                   ScanSettings settings);

  // For the agent's shutdown, before the HTTP side waits for its threads:
  // the running gate scan stops within a poll, and every later gate is
  // refused.
  void stop(const std::string& reason) {
    m_stopping = true;
    m_scanner.cancel(reason);
  }

  // Whether one more decision a job judged itself may be recorded now: at
  // most max_claimed_per_minute, so that a local user who posts them in a
  // loop neither writes the disk without end nor pushes the agent's own
  // decisions out of the history.
  bool admit_claimed_record();

  // How many gates may wait behind the one being judged.
  static constexpr int max_waiting = 8;
  static constexpr int max_claimed_per_minute = 60;

 private:
  Scanner m_scanner;
  std::mutex m_scan_mutex;  // one gate scan at a time; its counts read under it
  std::atomic<int> m_in_flight{0};
  std::atomic<int> m_max_in_flight{max_waiting + 1};
  std::atomic<bool> m_stopping{false};
  std::mutex m_claimed_mutex;  // guards the two below
  std::chrono::steady_clock::time_point m_claimed_window{};
  int m_claimed_in_window = 0;
};

}  // namespace envcontract::daemon
