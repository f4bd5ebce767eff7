#pragma once

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
// when the view starts.
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
  // Shared, not copied: a fleet's reports can be large, and every request
  // of the view reads them.
  std::shared_ptr<const std::vector<HostReport>> hosts() const;
  ComplianceHistory history() const;
  // Polls finished so far, and when the latest finished (RFC 3339, "" none yet).
  std::size_t polls() const;
  std::string polled_at() const;

 private:
  Options m_options;
  mutable std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stopping = false;
  std::shared_ptr<const std::vector<HostReport>> m_hosts;
  std::deque<CompliancePoint> m_history;
  std::size_t m_polls = 0;
  std::string m_polled_at;
  std::thread m_thread;
};

}  // namespace envcontract::fleet
