#include "fleet/fleet_source.hpp"

#include <system_error>

#include "common/time_text.hpp"
#include "fleet/prometheus_fleet.hpp"

namespace envcontract::fleet {

PrometheusSource::PrometheusSource(Options options) : m_options(std::move(options)) {
  m_last.source = "prometheus " + m_options.prometheus.base_url() + " job " + m_options.job;
}

PrometheusSource::~PrometheusSource() {
  m_stopping = true;
  std::thread reader;
  {
    std::lock_guard lock(m_mutex);  // no read starts after this
    reader = std::move(m_reader);
  }
  if (reader.joinable()) {
    reader.join();  // outside the lock: the read takes it to finish
  }
}

FleetSnapshot PrometheusSource::snapshot() {
  std::unique_lock lock(m_mutex);
  const auto now = std::chrono::steady_clock::now();
  const bool fresh = m_read_once && now - m_read_at < m_options.fresh_for;
  if (!fresh && !m_reading && !m_stopping) {
    if (m_reader.joinable()) {
      m_reader.join();  // the last read: finished, since m_reading is false
    }
    try {
      // The read waits for the lock this holds: the flag is set before it runs.
      m_reader = std::thread([this] { read(); });
      m_reading = true;
    } catch (const std::system_error& error) {
      m_last.problem = std::string("cannot start a read of Prometheus: ") + error.what();
    }
  }
  if (!m_read_once) {
    m_read_done.wait_for(lock, m_options.first_wait, [this] { return m_read_once; });
  }
  return m_last;
}

void PrometheusSource::read() {
  common::Result<std::vector<HostReport>> hosts = common::Error{"not read"};
  common::Result<ComplianceHistory> history = common::Error{"not asked: the agents were not read"};
  try {
    hosts = reports_from_prometheus(m_options.prometheus, m_options.job, m_options.client);
    if (hosts && !m_stopping) {
      history =
          history_from_prometheus(m_options.prometheus, m_options.job, m_options.history_range,
                                  m_options.history_points, m_options.client);
    }
  } catch (const std::exception& error) {
    // On a thread of its own: nothing may escape (std::terminate).
    hosts = common::Error{std::string("reading Prometheus failed: ") + error.what()};
  }
  std::lock_guard lock(m_mutex);
  if (hosts) {
    m_last.hosts = std::make_shared<const std::vector<HostReport>>(std::move(hosts.value()));
    m_last.as_of = common::now_rfc3339();
    m_last.problem.clear();
    if (history) {
      m_last.history = std::move(history.value());
    } else {
      m_last.history = {};
      m_last.history.problem = history.error();
    }
  } else {
    m_last.problem = hosts.error();
  }
  m_read_at = std::chrono::steady_clock::now();
  m_read_once = true;
  m_reading = false;
  m_read_done.notify_all();
}

InventorySource::InventorySource(std::string inventory_path, InventoryPoller::Options options)
    : m_source("inventory " + inventory_path), m_poller(std::move(options)) {
  m_poller.start();
}

FleetSnapshot InventorySource::snapshot() {
  auto polled = m_poller.latest();
  FleetSnapshot snapshot;
  snapshot.hosts = std::move(polled.hosts);
  snapshot.history = std::move(polled.history);
  snapshot.as_of = std::move(polled.at);
  snapshot.source = m_source;
  return snapshot;
}

}  // namespace envcontract::fleet
