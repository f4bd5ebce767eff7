#include "fleet/fleet_source.hpp"

#include "common/time_text.hpp"
#include "fleet/prometheus_fleet.hpp"

namespace envcontract::fleet {

PrometheusSource::PrometheusSource(Options options) : m_options(std::move(options)) {
  m_last.source = "prometheus " + m_options.prometheus.base_url() + " job " + m_options.job;
}

FleetSnapshot PrometheusSource::snapshot() {
  std::lock_guard lock(m_mutex);
  const auto now = std::chrono::steady_clock::now();
  if (m_last.hosts && m_last.problem.empty() && now - m_read_at < m_options.fresh_for) {
    return m_last;
  }
  auto hosts = reports_from_prometheus(m_options.prometheus, m_options.job, m_options.client);
  m_read_at = now;
  if (!hosts) {
    m_last.problem = hosts.error();
    return m_last;
  }
  m_last.hosts = std::make_shared<const std::vector<HostReport>>(std::move(hosts.value()));
  m_last.as_of = common::now_rfc3339();
  m_last.problem.clear();
  auto history =
      history_from_prometheus(m_options.prometheus, m_options.job, m_options.history_range,
                              m_options.history_points, m_options.client);
  if (history) {
    m_last.history = std::move(history.value());
  } else {
    m_last.history = {};
    m_last.history.problem = history.error();
  }
  return m_last;
}

InventorySource::InventorySource(std::string inventory_path, InventoryPoller::Options options)
    : m_source("inventory " + inventory_path), m_poller(std::move(options)) {
  m_poller.start();
}

FleetSnapshot InventorySource::snapshot() {
  FleetSnapshot snapshot;
  snapshot.hosts = m_poller.hosts();
  snapshot.history = m_poller.history();
  snapshot.source = m_source;
  snapshot.as_of = m_poller.polled_at();
  return snapshot;
}

}  // namespace envcontract::fleet
