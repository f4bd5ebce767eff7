#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fleet/fleet_view.hpp"
#include "fleet/host_reports.hpp"
#include "fleet/inventory_poller.hpp"

// Where the fleet view's hosts come from: Prometheus (which holds the
// state) or an inventory of agents asked directly.
namespace envcontract::fleet {

// The fleet at one moment.
struct FleetSnapshot {
  std::shared_ptr<const std::vector<HostReport>> hosts;  // null: none could be had yet
  ComplianceHistory history;
  std::string source;   // "prometheus http://... job envcontract", "inventory /etc/..."
  std::string as_of;    // RFC 3339: when the hosts were read
  std::string problem;  // why the latest read failed (the hosts are then older ones, or none)
};

class FleetSource {
 public:
  virtual ~FleetSource() = default;
  virtual FleetSnapshot snapshot() = 0;
};

// Asks Prometheus on demand, at most once per `fresh_for` (answers and
// failures alike): a page open on many screens does not multiply the
// queries. A read runs on a thread of its own while requests are answered
// with the last one, so a slow Prometheus holds up no request; only the
// first read is waited for, at most `first_wait`. When Prometheus does not
// answer, the last hosts it gave are served with the problem.
class PrometheusSource final : public FleetSource {
 public:
  struct Options {
    HostAddress prometheus;
    std::string job = "envcontract";
    ClientOptions client;
    std::chrono::seconds history_range{7 * 24 * 3600};
    int history_points = 168;
    std::chrono::milliseconds fresh_for{5'000};
    std::chrono::milliseconds first_wait{10'000};
  };
  explicit PrometheusSource(Options options);
  ~PrometheusSource() override;
  FleetSnapshot snapshot() override;

 private:
  void read();  // on m_reader

  Options m_options;
  std::mutex m_mutex;
  std::condition_variable m_read_done;
  FleetSnapshot m_last;
  bool m_read_once = false;  // a read finished, answer or failure
  bool m_reading = false;
  std::atomic<bool> m_stopping{false};
  std::chrono::steady_clock::time_point m_read_at{};
  std::thread m_reader;
};

class InventorySource final : public FleetSource {
 public:
  InventorySource(std::string inventory_path, InventoryPoller::Options options);
  FleetSnapshot snapshot() override;

 private:
  std::string m_source;
  InventoryPoller m_poller;
};

}  // namespace envcontract::fleet
