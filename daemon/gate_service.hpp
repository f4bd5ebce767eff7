#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
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
  };
  Refusal refusal = Refusal::none;
  std::string message;  // why refused
  report::Json report;  // a host report of the env(s) asked about
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
  explicit GateService(std::shared_ptr<ProbeCache> shared_probes)
      : m_scanner(std::move(shared_probes)) {}

  // `settings`: the agent's scan settings; the gate keeps their limits and
  // reprobe interval and scans only the env(s) asked about, on the host.
  GateAnswer judge(const GateRequest& request, const AgentSnapshot& snapshot,
                   ScanSettings settings);

  // For the agent's shutdown: the running gate scan stops within a poll.
  void cancel(const std::string& reason) { m_scanner.cancel(reason); }

  // How many gates may wait behind the one being judged.
  static constexpr int max_waiting = 8;

 private:
  Scanner m_scanner;
  std::atomic<int> m_in_flight{0};
};

}  // namespace envcontract::daemon
