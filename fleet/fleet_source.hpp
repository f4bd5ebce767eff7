#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
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

// The fleet at one moment, and how old that moment is when it is served.
struct FleetSnapshot {
  std::shared_ptr<const std::vector<HostReport>> hosts;  // null: none could be had yet
  ComplianceHistory history;
  std::string source;   // "prometheus http://... job envcontract", "inventory /etc/..."
  std::string as_of;    // RFC 3339: when the hosts were read
  std::string problem;  // why the latest read failed (the hosts are then older ones, or none)
  std::chrono::steady_clock::time_point read_at{};  // of the hosts: their age when answered
  double refresh_seconds = 0;  // the age the source keeps its hosts under when all goes well
  // Why the hosts would be older than refresh_seconds (the source's reads
  // fail, one has not finished): said with any answer made when they are.
  std::string why_old;

  // The hosts' age now, and `why_old` when it reaches refresh_seconds ("" else).
  double age_seconds() const;
  std::string stale() const;
};

class FleetSource {
 public:
  virtual ~FleetSource() = default;
  virtual FleetSnapshot snapshot() = 0;
  // The compliance over time of the hosts `filter` shows (a filter with no
  // field set: the snapshot's own history).
  virtual ComplianceHistory history(const FleetFilter& filter) = 0;
};

// Asks Prometheus on demand, at most once per `fresh_for` (answers and
// failures alike): a page open on many screens does not multiply the
// queries. A read runs on a thread of its own; a request whose hosts would
// be older than `fresh_for` waits for it, at most `read_wait` (the very
// first read: `first_wait`), and past that is answered with the last hosts
// and why they are old (a read in flight, Prometheus' error). So an idle
// view never answers with an old fleet as if it were current.
//
// Hosts that are down keep what was last known of them: the view's own
// last read of them while they were up, or after a restart of the view
// what Prometheus' history holds (verdict, contract, last scan).
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
    std::chrono::milliseconds read_wait{2'000};
  };
  explicit PrometheusSource(Options options);
  ~PrometheusSource() override;
  FleetSnapshot snapshot() override;
  // Read by a thread of its own, one filter at a time, each filter's at
  // most once a minute (the latest 64 are kept, 8 may wait): a request
  // waits for its filter's read at most `read_wait`, then its chart says it
  // comes with the next refresh.
  ComplianceHistory history(const FleetFilter& filter) override;

 private:
  void read();  // on m_reader

  // What the view last read of each host while it was up: kept for when
  // it is down (hosts Prometheus no longer lists are forgotten).
  struct Known {
    std::shared_ptr<const report::Report> summary;
    std::string read_at;  // RFC 3339
  };
  void keep_known(std::vector<HostReport>& hosts, const std::string& now);  // under m_mutex

  Options m_options;
  std::mutex m_mutex;
  std::condition_variable m_read_done;
  FleetSnapshot m_last;
  bool m_read_once = false;  // a read finished, answer or failure
  bool m_reading = false;
  std::atomic<bool> m_stopping{false};
  std::chrono::steady_clock::time_point m_read_at{};          // the last read, answer or failure
  std::chrono::steady_clock::time_point m_hosts_read_at{};    // the last read that gave hosts
  std::chrono::steady_clock::time_point m_read_started_at{};  // the read in flight
  std::map<std::string, Known> m_known;
  std::thread m_reader;

  void read_histories();  // on m_history_reader

  struct KeptHistory {
    ComplianceHistory history;
    std::chrono::steady_clock::time_point read_at;
  };
  std::mutex m_histories_mutex;
  std::condition_variable m_histories_changed;
  std::map<std::string, KeptHistory> m_histories;  // by the filter's JSON
  std::deque<std::pair<std::string, FleetFilter>> m_histories_wanted;
  std::thread m_history_reader;  // started with the first filtered chart asked
};

// The fleet of an inventory's agents, polled every interval (InventoryPoller).
// Its hosts are as old as the last finished poll: older than the interval
// and one poll's bound (the client's time-out for each round of
// `concurrency` hosts), they are served with why.
class InventorySource final : public FleetSource {
 public:
  InventorySource(std::string inventory_path, InventoryPoller::Options options);
  FleetSnapshot snapshot() override;
  ComplianceHistory history(const FleetFilter& filter) override;

 private:
  std::string m_source;
  std::chrono::milliseconds m_refresh;
  InventoryPoller m_poller;
};

}  // namespace envcontract::fleet
