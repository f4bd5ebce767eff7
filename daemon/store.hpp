#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "daemon/gate_decision_record.hpp"
#include "daemon/sqlite.hpp"
#include "report/report.hpp"

namespace envcontract::daemon {

struct FlappingRule {
  int changes = 3;  // more status changes than this within the window: flapping
  std::chrono::seconds window{24 * 3600};
};

// What the store keeps, so that an agent's database stays bounded whatever
// its hosts do.
struct StoreLimits {
  // History older than this is deleted, except each check's current state
  // (its `since` must survive) and the latest report.
  std::chrono::hours retention{90 * 24};
  // A check's `actual` beyond this is stored as its head, its size and its
  // SHA-256 (a change past the head is still a change).
  std::size_t max_actual_bytes = 16 * 1024;
  // Retention runs on the first scan after opening and then every this many scans.
  int prune_every = 100;
};

struct HistoryQuery {
  std::string env;     // only this env's checks ("" for every env, target and the host)
  std::string target;  // only this target's checks
  std::string check;   // only this check id; "@verdict" is the env's or host's verdict
  std::string since;   // RFC 3339; "" for the whole history
  std::size_t limit = 1000;
};

// The agent's database: scans, each check's history and the latest report,
// in one SQLite file (WAL mode). History is differential: a check's state is
// written when its status, cause or actual value changes, so an unchanged
// host adds one small scan row per scan. Every scan is one transaction.
// Thread-safe: one connection behind a mutex.
class Store {
 public:
  // The schema version this build writes. Older files are migrated on open.
  static constexpr int schema_version = 6;

  // Where the package keeps the database (systemd's StateDirectory=).
  static constexpr const char* default_path = "/var/lib/envcontract/agent.db";

  // Opens or creates the database. A corrupt file, another application's
  // database or one written by a newer envcontract is an error saying what
  // to do; such a file is never modified. Its directory must exist (a
  // mistyped one is an error, not a new directory), but for default_path's,
  // which is made when missing, as the unit's StateDirectory= makes it.
  static common::Result<std::unique_ptr<Store>> open(const std::filesystem::path& path,
                                                     FlappingRule flapping = {},
                                                     StoreLimits limits = {});
  // Why open would refuse `path`'s directory (missing, or not a
  // directory), or "": for verbs that check before they act.
  static std::string directory_problem(const std::filesystem::path& path);

  // Records a finished scan: its row, the checks whose state changed, and the
  // report as the latest. Fills each check's `since` and `flapping` and the
  // report's `scan_id`. The report's JSON text as stored goes to `text`
  // when given: the agent serves those bytes rather than making them twice.
  std::int64_t record_scan(report::Report& report,
                           std::shared_ptr<const std::string>* text = nullptr);

  // The report of the last recorded scan, with its since/flapping.
  std::optional<report::Report> latest_report();

  // Transitions, oldest first: {scan_id, at, scope (env, target or host),
  // name, check, status, previous_status, cause, summary, actual}.
  report::Json history(const HistoryQuery& query);

  // The names the history knows in `scope` ("env" or "target"), sorted: an
  // env removed from the host is still one the history can be asked about.
  std::vector<std::string> history_names(const std::string& scope);

  // Records a provision, promotion or rollback: {action, name, requested_by,
  // started_at, finished_at, outcome, detail (any JSON)}. Returns its id.
  std::int64_t record_provision(const report::Json& record);

  // The newest `limit` records, newest first, each with its id.
  report::Json provisions(std::size_t limit = 100);

  // A CI gate's decision; its id. The store keeps the last
  // max_gate_decisions of each kind (judged by the agent, by a job): a
  // local user who asks the gate in a loop fills no disk.
  std::int64_t record_gate_decision(const GateDecisionRecord& record);
  // The decisions `query` asks for, newest first.
  std::vector<GateDecisionRecord> gate_decisions(const GateDecisionQuery& query);
  static constexpr std::int64_t max_gate_decisions = 10000;

  // Number of rows in scans and transitions (for tests and metrics).
  std::int64_t scan_count();
  std::int64_t transition_count();

  // Deletes what is older than the retention as of `now` and returns its
  // pages to the file system. record_scan calls it every prune_every scans.
  void prune(std::chrono::system_clock::time_point now);

 private:
  Store(const std::filesystem::path& path, FlappingRule flapping, StoreLimits limits);
  std::string stored_actual(const report::Json& actual) const;
  void prune_locked(std::chrono::system_clock::time_point now);
  void record_checks(std::int64_t scan_id, const std::string& at, const std::string& subject,
                     std::vector<report::CheckReport>& checks);
  void record_state(std::int64_t scan_id, const std::string& at, const std::string& subject,
                    const std::string& check_id, const std::string& status,
                    const std::string& cause, const std::string& summary, const std::string& actual,
                    std::string& since, bool& flapping);

  std::mutex m_mutex;
  sqlite::Database m_db;
  FlappingRule m_flapping;
  StoreLimits m_limits;
  int m_scans_since_prune = -1;  // -1: not pruned since opening
};

}  // namespace envcontract::daemon
