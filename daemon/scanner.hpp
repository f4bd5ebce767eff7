#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/contract_source.hpp"
#include "freshness/probe_cache.hpp"
#include "probes/dynamic_probe.hpp"
#include "probes/host_facts.hpp"

namespace envcontract::daemon {

struct ScanSettings {
  probes::HostFactsOptions facts;
  unsigned concurrency = 0;  // envs read (at most 8) and probed at once; 0: the number of cores
  // Dynamic facts of an env whose fingerprint has not changed are reused for
  // this long; then the env is probed again, because devices come and go
  // without any file changing. Zero: probe every env on every scan.
  std::chrono::seconds reprobe_interval{0};
  // Watch the host's files for changes (freshness/change_watch.hpp), so that
  // an env none of whose files changed is not read again either, for as
  // long as its dynamic facts are reused (reprobe_interval).
  bool watch_changes = false;
  process::ResourceLimits probe_limits;  // per probe process tree
  // All of one env's probe stages together (zero: each stage's own timeout only).
  std::chrono::milliseconds env_deadline{15 * 60 * 1000};
  // The whole scan: past it, running probes are stopped, envs not yet probed
  // are reported as not probed, and the scan finishes (zero: no watchdog).
  std::chrono::milliseconds scan_deadline{60 * 60 * 1000};
  // Also ends the scan when cancelled (a provisioning job's, when the agent
  // stops); checked every 100 ms.
  const process::Cancellation* cancelled_by = nullptr;
  // The scan is of some envs only (discovery given their prefixes): what
  // the cache holds of the others is kept. A full scan forgets envs it no
  // longer finds.
  bool some_envs_only = false;
};

// What a scan tells whoever watches it (the terminal, the agent's log).
struct ScanObserver {
  std::function<void(std::size_t env_count)> started;
  std::function<void(const std::string& env, bool reused)> env_started;
  std::function<void(const std::string& env, const std::string& verdict,
                     std::chrono::milliseconds elapsed, std::size_t done, std::size_t total)>
      env_finished;
  // The report of the envs judged so far (as JSON text), after each env but
  // the last: its verdict is "pending" and "partial" says what is still
  // running. For an agent with no report yet (its first scan), so that
  // people see results as they come.
  std::function<void(std::string partial_text)> partial_report;
};

// Runs scans: gathers the host's facts, probes each env (in parallel, each
// stage in its own subprocess), judges them and builds the report. Keeps
// activation results and each env's dynamic facts between scans, so an
// unchanged env is read again but not run again; parsed ELF files are
// shared by the envs of one scan only. One scan at a time.
class Scanner {
 public:
  Scanner() = default;
  // A scanner whose probes are `shared` with another's.
  explicit Scanner(std::shared_ptr<freshness::ProbeCache> shared) : m_probes(std::move(shared)) {}
  std::shared_ptr<freshness::ProbeCache> probe_cache() const { return m_probes; }

  report::Report scan(const LoadedContract& contract, const ScanSettings& settings,
                      const ScanObserver& observer = {});

  // Stops the running scan, if any, and every later one: its processes are
  // killed within a poll (20 ms) and it returns a report saying what was
  // not probed and why. For the agent's shutdown.
  void cancel(const std::string& reason);

  // How many envs the last scan probed, and how many it took from the cache.
  std::size_t last_probed() const { return m_last_probed; }
  std::size_t last_reused() const { return m_last_reused; }
  // How many envs' files the last scan read (the others' facts were kept).
  std::size_t last_read() const { return m_last_read; }
  // Parsed ELF files held between scans: none (they serve one scan).
  std::size_t held_libraries() const { return m_caches->elf_files.size(); }

 private:
  // The change watch started, or stopped when the settings turned it off.
  void start_or_stop_watch(const ScanSettings& settings);

  std::mutex m_scan_mutex;
  std::mutex m_cancel_mutex;  // guards the two below
  std::shared_ptr<process::Cancellation> m_running;
  std::string m_cancelled_for;  // once set, every scan is cancelled from its start
  // Shared with readers left blocked past their deadline (stall_guard.hpp).
  std::shared_ptr<probes::FactCaches> m_caches = std::make_shared<probes::FactCaches>();
  std::shared_ptr<freshness::ProbeCache> m_probes = std::make_shared<freshness::ProbeCache>();
  std::size_t m_last_probed = 0;
  std::size_t m_last_reused = 0;
  std::size_t m_last_read = 0;
  bool m_watch_tried = false;
};

}  // namespace envcontract::daemon
