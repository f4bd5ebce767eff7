#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "fleet/fleet_view.hpp"
#include "fleet/host_reports.hpp"

namespace envcontract::fleet {

// The fleet of an inventory file, for fleets without Prometheus: asks every
// agent for its report, `concurrency` at a time and each bounded by the
// client's time-out, every `interval`, and keeps the answers. A host that
// stops answering is shown unavailable with when it was last seen and its
// verdict then. The compliance points of the polls are kept in memory
// (`history_points` of them): the history of an inventory-fed view begins
// when the view starts. Only a summary of each report is kept
// (report_summary): the view asks an agent for its whole report on demand.
class InventoryPoller {
 public:
  struct Options {
    std::vector<HostAddress> hosts;
    ClientOptions client;
    unsigned concurrency = 16;
    std::chrono::milliseconds interval{60'000};
    std::size_t history_points = 1440;
  };

  explicit InventoryPoller(Options options);
  ~InventoryPoller();
  InventoryPoller(const InventoryPoller&) = delete;
  InventoryPoller& operator=(const InventoryPoller&) = delete;

  // Polls now and then every interval, on a thread of its own, until destroyed.
  void start();
  // One poll of every host, merged into what is kept.
  void poll_once();

  // The latest answer of each host, in inventory order; hosts not asked yet
  // are unavailable with an error saying so.
  // What the polls found, all of one moment.
  struct Polled {
    // Shared, not copied: every request of the view reads them.
    std::shared_ptr<const std::vector<HostReport>> hosts;
    ComplianceHistory history;
    std::string at;  // RFC 3339: when the latest poll finished, "" none yet
    std::size_t polls = 0;
    std::chrono::steady_clock::time_point finished{};  // of the latest poll (polls > 0)
    bool polling = false;                              // a poll is running
    std::chrono::steady_clock::time_point polling_since{};
  };
  Polled latest() const;

  // The compliance of the polls kept, of the hosts that match `filter` now
  // (their platform, failing checks and causes as last known), each with
  // the state it had at that poll; a verdict filter keeps that count alone.
  ComplianceHistory history_matching(const FleetFilter& filter) const;

 private:
  std::shared_ptr<const std::vector<HostReport>> latest_hosts() const;

  Options m_options;
  mutable std::mutex m_mutex;
  std::condition_variable m_wake;
  std::atomic<bool> m_stopping{false};
  std::shared_ptr<const std::vector<HostReport>> m_hosts;
  std::deque<CompliancePoint> m_history;
  // Each poll's state of every host, in inventory order (a letter each:
  // c, d, e, p, u), for histories of a filter's hosts: a byte per host and poll.
  std::deque<std::string> m_poll_states;
  std::size_t m_polls = 0;
  std::string m_polled_at;
  std::chrono::steady_clock::time_point m_finished{};
  bool m_polling = false;
  std::chrono::steady_clock::time_point m_polling_since{};
  std::thread m_thread;
};

}  // namespace envcontract::fleet
