#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "daemon/agent_config.hpp"
#include "daemon/contract_source.hpp"
#include "daemon/gate_service.hpp"
#include "daemon/provision_jobs.hpp"
#include "daemon/scanner.hpp"
#include "daemon/store.hpp"

namespace envcontract::daemon {

// A scan somebody asked for (POST /api/v1/scan), or the schedule.
struct ScanTicket {
  std::int64_t id = 0;
  std::string state = "queued";  // queued, running, done, failed
  std::string reason;            // "startup", "interval", "api", "contract reloaded"
  std::string queued_at;
  std::string finished_at;
  std::optional<std::int64_t> scan_id;  // the report's scan_id once done
  std::string error;                    // why it failed
};

// What the HTTP side reads: replaced whole after each scan or reload, never
// modified, so requests are answered from memory without locks or work.
struct AgentSnapshot {
  std::shared_ptr<const report::Report> report;    // null until the first scan (or a stored one)
  std::shared_ptr<const std::string> report_text;  // its JSON, as served
  // What would make each drifting env comply (GET /api/v1/plan), built with
  // the report so that requests never compute; null with no report.
  std::shared_ptr<const report::Json> plan;
  ContractHandle contract;
  std::string contract_loaded_at;
  std::string contract_source;  // the file, or "auto: <why>"
  std::string reload_error;     // the last rejected contract's errors, "" when none
  bool scanning = false;
  std::string scan_started_at;
  // While the first scan runs (no report yet): the envs judged so far, as a
  // report whose verdict is "pending" (GET /api/v1/report serves it).
  std::shared_ptr<const std::string> partial_text;
};

struct AgentCounters {
  std::atomic<std::int64_t> scans{0};
  std::atomic<std::int64_t> scan_failures{0};
  std::atomic<std::int64_t> reloads{0};
  std::atomic<std::int64_t> reload_failures{0};
  std::atomic<std::int64_t> store_failures{0};  // scans the database could not record
  std::atomic<std::int64_t> envs_probed{0};
  std::atomic<std::int64_t> envs_reused{0};
  std::atomic<double> last_scan_seconds{0};
  std::atomic<double> last_scan_finished{0};  // Unix time
  // CI gate decisions, by gate_counter_index: outcome, bypassed, judged by.
  std::array<std::atomic<std::int64_t>, 12> gate_decisions{};
};

// Where a decision is counted in AgentCounters::gate_decisions.
std::size_t gate_counter_index(GateDecisionRecord::Outcome outcome, bool bypassed,
                               GateDecisionRecord::JudgedBy judged_by);

// The agent's core loop: keeps the contract in force (reloading it on
// request or when its file changes, keeping the last good one when the new
// one is invalid), scans at startup, every interval and on demand (one scan
// at a time, requests that arrive meanwhile coalesce into the next), records
// each scan in the store and publishes a snapshot for the HTTP side.
class Agent {
 public:
  explicit Agent(AgentConfig config);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Chooses and loads the contract, opens the database, reads the token and
  // starts the scheduler (whose first scan starts at once). Returns what
  // keeps the agent from starting, or "".
  std::string start();
  void stop();

  // Queues a scan (or joins the one already queued) and returns its ticket id.
  std::int64_t request_scan(const std::string& reason);
  std::optional<ScanTicket> ticket(std::int64_t id) const;
  // How many tickets are kept (the last 200).
  std::size_t ticket_count() const;
  // Re-reads the contract file on the scheduler thread (SIGHUP).
  void request_reload();

  std::shared_ptr<const AgentSnapshot> snapshot() const;
  report::Json history(const HistoryQuery& query);
  // Provisions, promotions and rollbacks recorded in the store, newest first.
  report::Json provisions(std::size_t limit);
  std::vector<std::string> history_names(const std::string& scope);

  // A CI job's gate (docs/ci.md): the env judged now under the agent's
  // contract, the decision recorded and counted; or why the agent cannot
  // answer (the job's gate then judges the env itself).
  GateAnswer gate(const GateRequest& request);
  // Ends the running gate scan and refuses later ones: called before the
  // HTTP side waits for its threads to finish, which a gate holds.
  void stop_gates() { m_gate.stop("the agent is stopping"); }
  // A decision the job's gate made itself, as it says: recorded and counted
  // as judged by the job. Its id, or why it could not be recorded.
  common::Result<std::int64_t> record_job_gate_decision(GateDecisionRecord record);
  bool admit_job_gate_record() { return m_gate.admit_claimed_record(); }
  std::vector<GateDecisionRecord> gate_decisions(const GateDecisionQuery& query);
  const AgentCounters& counters() const { return m_counters; }
  // The webhooks' delivery counts, or null when none is configured.
  const WebhookCounters* webhook_counters() const {
    return m_webhooks ? &m_webhooks->counters() : nullptr;
  }
  const AgentConfig& config() const { return m_config; }

  // Why the scheduler cannot be trusted to be alive, or "" when it is: it
  // has stopped, its loop has not turned for several contract polls while no
  // scan runs, or a scan has run a minute past its own deadline. The
  // systemd watchdog pings only while this is "".
  std::string liveness_problem() const;

  // Provisioning over HTTP (docs/provisioning.md): on only when the config
  // enables it. Queues a provision (action "provision", the new env's name)
  // or a promotion ("promote", the link's name, the env); its id, or why not.
  bool provisioning_enabled() const { return m_provision_jobs != nullptr; }
  // What the config lacks for provisioning to work (no envs_dir, no user
  // while the agent is root), or "".
  std::string provisioning_problem() const;
  common::Result<std::int64_t> request_provision(const std::string& action, const std::string& name,
                                                 const std::string& env,
                                                 const std::string& requested_by);
  std::optional<ProvisionJob> provision_job(std::int64_t id) const;

  bool token_required() const { return !m_token.empty(); }
  // Compares in constant time.
  bool token_matches(const std::string& presented) const;

 private:
  struct FileSignature {
    std::uintmax_t inode = 0;
    std::uintmax_t size = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const FileSignature&) const = default;
  };

  void run();
  int run_provision_job(const ProvisionJob& job, const process::Cancellation& cancel,
                        const std::function<void(const std::string&)>& print);
  void reload_contract(const std::string& why);
  void run_scan(std::unique_lock<std::mutex>& lock);
  bool stopping() const;
  // Makes a queued ticket; m_mutex held.
  std::int64_t queue_ticket_locked(const std::string& reason);
  void publish(const std::function<void(AgentSnapshot&)>& change);
  std::optional<FileSignature> contract_signature() const;

  AgentConfig m_config;
  std::filesystem::path m_contract_file;
  std::unique_ptr<Store> m_store;
  Scanner m_scanner;
  GateService m_gate{m_scanner.probe_cache()};
  std::string m_token;
  AgentCounters m_counters;
  std::unique_ptr<Webhooks> m_webhooks;
  std::unique_ptr<ProvisionJobs> m_provision_jobs;  // null unless provisioning is enabled

  mutable std::mutex m_snapshot_mutex;
  std::shared_ptr<const AgentSnapshot> m_snapshot;

  mutable std::mutex m_mutex;  // guards what follows
  std::condition_variable m_wake;
  bool m_stopping = false;
  bool m_reload_requested = false;
  std::int64_t m_next_ticket = 1;
  std::deque<std::int64_t> m_queued;
  std::map<std::int64_t, ScanTicket> m_tickets;
  std::optional<FileSignature> m_contract_signature;
  // Steady-clock nanoseconds of the scheduler's last turn, and of the start
  // of the running scan (0: none); read by liveness_problem().
  std::atomic<std::int64_t> m_last_turn{0};
  std::atomic<std::int64_t> m_scan_started{0};
  std::atomic<bool> m_running{false};
  std::thread m_thread;
};

}  // namespace envcontract::daemon
