#include "fleet/fleet_source.hpp"

#include <cmath>
#include <system_error>

#include "common/json_text.hpp"
#include "common/time_text.hpp"
#include "fleet/prometheus_fleet.hpp"

namespace envcontract::fleet {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

std::string whole_seconds(double seconds) {
  return std::to_string(std::lround(seconds)) + " s";
}

}  // namespace

PrometheusSource::PrometheusSource(Options options) : m_options(std::move(options)) {
  m_last.source = "prometheus " + m_options.prometheus.base_url() + " job " + m_options.job;
  m_last.refresh_seconds = std::chrono::duration<double>(m_options.fresh_for).count();
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
  std::thread history_reader;
  {
    std::lock_guard lock(m_histories_mutex);
    history_reader = std::move(m_history_reader);
  }
  m_histories_changed.notify_all();
  if (history_reader.joinable()) {
    history_reader.join();
  }
}

double FleetSnapshot::age_seconds() const {
  return hosts ? seconds_between(read_at, Clock::now()) : 0;
}

std::string FleetSnapshot::stale() const {
  return hosts && age_seconds() >= refresh_seconds ? why_old : "";
}

FleetSnapshot PrometheusSource::snapshot() {
  std::unique_lock lock(m_mutex);
  const auto asked = Clock::now();
  const bool fresh = m_read_once && asked - m_read_at < m_options.fresh_for;
  if (!fresh && !m_reading && !m_stopping) {
    if (m_reader.joinable()) {
      m_reader.join();  // the last read: finished, since m_reading is false
    }
    try {
      // The read waits for the lock this holds: the flag is set before it runs.
      m_reader = std::thread([this] { read(); });
      m_reading = true;
      m_read_started_at = asked;
    } catch (const std::system_error& error) {
      m_last.problem = std::string("cannot start a read of Prometheus: ") + error.what();
    }
  }
  if (!m_read_once) {
    m_read_done.wait_for(lock, m_options.first_wait, [this] { return m_read_once; });
  } else if (m_reading && asked - m_hosts_read_at >= m_options.fresh_for) {
    // The hosts held are older than promised: the read in flight is worth
    // a short wait rather than an old answer.
    m_read_done.wait_for(lock, m_options.read_wait, [this] { return !m_reading; });
  }
  FleetSnapshot answer = m_last;
  answer.read_at = m_hosts_read_at;
  if (!m_last.problem.empty()) {
    answer.why_old = "the latest read of Prometheus failed: " + m_last.problem;
  } else if (m_reading) {
    answer.why_old = "a read of Prometheus has run for " +
                     whole_seconds(seconds_between(m_read_started_at, Clock::now())) +
                     " without an answer yet";
  } else {
    answer.why_old = "no read of Prometheus since (the view reads it on demand)";
  }
  return answer;
}

ComplianceHistory PrometheusSource::history(const FleetFilter& filter) {
  const std::string key = common::json_text(filter.to_json());
  constexpr auto kept_for = std::chrono::minutes(1);
  constexpr std::size_t most_waiting = 8;
  std::unique_lock lock(m_histories_mutex);
  const auto fresh = [&] {
    const auto found = m_histories.find(key);
    return found != m_histories.end() && Clock::now() - found->second.read_at < kept_for;
  };
  if (!fresh() && !m_stopping) {
    const bool asked = std::any_of(m_histories_wanted.begin(), m_histories_wanted.end(),
                                   [&](const auto& wanted) { return wanted.first == key; });
    if (!asked) {
      if (m_histories_wanted.size() >= most_waiting) {
        ComplianceHistory busy;
        busy.problem =
            "too many charts of other filters are being read from Prometheus; this one is not "
            "asked (try again shortly)";
        return busy;
      }
      if (!m_history_reader.joinable()) {
        try {
          m_history_reader = std::thread([this] { read_histories(); });
        } catch (const std::system_error& error) {
          ComplianceHistory failed;
          failed.problem = std::string("cannot start a read of Prometheus: ") + error.what();
          return failed;
        }
      }
      m_histories_wanted.emplace_back(key, filter);
      m_histories_changed.notify_all();
    }
    m_histories_changed.wait_for(lock, m_options.read_wait, fresh);
  }
  const auto found = m_histories.find(key);
  if (found == m_histories.end()) {
    ComplianceHistory waiting;
    waiting.problem =
        "the chart of these filters is being read from Prometheus: it comes with the next "
        "refresh";
    return waiting;
  }
  return found->second.history;  // fresh, or the last one while a newer is read
}

void PrometheusSource::read_histories() {
  constexpr std::size_t most_kept = 64;
  std::unique_lock lock(m_histories_mutex);
  for (;;) {
    m_histories_changed.wait(lock, [this] { return m_stopping || !m_histories_wanted.empty(); });
    if (m_stopping) {
      return;
    }
    const auto [key, filter] = m_histories_wanted.front();
    lock.unlock();
    ComplianceHistory history;
    try {
      auto asked = history_from_prometheus(m_options.prometheus, m_options.job, filter,
                                           m_options.history_range, m_options.history_points,
                                           m_options.client);
      if (asked) {
        history = std::move(asked.value());
      } else {
        history.problem = asked.error();
      }
    } catch (const std::exception& error) {
      // On a thread of its own: nothing may escape (std::terminate).
      history.problem = std::string("reading Prometheus failed: ") + error.what();
    }
    lock.lock();
    m_histories_wanted.pop_front();
    if (m_histories.size() >= most_kept && !m_histories.contains(key)) {
      const auto oldest = std::min_element(
          m_histories.begin(), m_histories.end(),
          [](const auto& a, const auto& b) { return a.second.read_at < b.second.read_at; });
      m_histories.erase(oldest);
    }
    m_histories[key] = {std::move(history), Clock::now()};
    m_histories_changed.notify_all();
  }
}

void PrometheusSource::keep_known(std::vector<HostReport>& hosts, const std::string& now) {
  std::map<std::string, Known> known;
  for (auto& host : hosts) {
    const std::string& instance = host.address.text;
    if (host.report) {
      known[instance] = {std::make_shared<const report::Report>(*host.report), now};
      continue;
    }
    const auto earlier = m_known.find(instance);
    if (earlier == m_known.end()) {
      continue;  // what Prometheus' history gave, if anything
    }
    host.last_known = *earlier->second.summary;
    host.last_known_from =
        "the view's read of Prometheus at " + earlier->second.read_at + ", while it was up";
    known[instance] = std::move(earlier->second);
  }
  m_known = std::move(known);
}

void PrometheusSource::read() {
  common::Result<std::vector<HostReport>> hosts = common::Error{"not read"};
  common::Result<ComplianceHistory> history = common::Error{"not asked: the agents were not read"};
  std::string read_at_text;
  Clock::time_point read_at{};
  try {
    hosts = reports_from_prometheus(m_options.prometheus, m_options.job, m_options.client);
    // The hosts are of this moment, however long the history takes after.
    read_at_text = common::now_rfc3339();
    read_at = Clock::now();
    if (hosts && !m_stopping) {
      history =
          history_from_prometheus(m_options.prometheus, m_options.job, {}, m_options.history_range,
                                  m_options.history_points, m_options.client);
    }
  } catch (const std::exception& error) {
    // On a thread of its own: nothing may escape (std::terminate).
    hosts = common::Error{std::string("reading Prometheus failed: ") + error.what()};
  }
  std::lock_guard lock(m_mutex);
  if (hosts) {
    m_last.as_of = read_at_text;
    keep_known(hosts.value(), m_last.as_of);
    m_last.hosts = std::make_shared<const std::vector<HostReport>>(std::move(hosts.value()));
    m_last.problem.clear();
    m_hosts_read_at = read_at;
    if (history) {
      m_last.history = std::move(history.value());
    } else {
      m_last.history = {};
      m_last.history.problem = history.error();
    }
  } else {
    m_last.problem = hosts.error();
  }
  m_read_at = Clock::now();
  m_read_once = true;
  m_reading = false;
  m_read_done.notify_all();
}

InventorySource::InventorySource(std::string inventory_path, InventoryPoller::Options options)
    : m_source("inventory " + inventory_path),
      m_refresh([&options] {
        // A poll asks `concurrency` hosts at a time, each within the time-out.
        const auto rounds =
            (options.hosts.size() + options.concurrency - 1) / std::max(1U, options.concurrency);
        return options.interval +
               std::chrono::duration_cast<std::chrono::milliseconds>(options.client.timeout) *
                   static_cast<long>(std::max<std::size_t>(1, rounds));
      }()),
      m_poller(std::move(options)) {
  m_poller.start();
}

FleetSnapshot InventorySource::snapshot() {
  auto polled = m_poller.latest();
  FleetSnapshot snapshot;
  snapshot.hosts = std::move(polled.hosts);
  snapshot.history = std::move(polled.history);
  snapshot.as_of = std::move(polled.at);
  snapshot.source = m_source;
  snapshot.refresh_seconds = std::chrono::duration<double>(m_refresh).count();
  const auto now = Clock::now();
  if (polled.polls == 0) {
    // The hosts are placeholders saying they were not asked yet.
    snapshot.read_at = now;
    snapshot.why_old = "the first poll of the inventory's agents has not finished";
    return snapshot;
  }
  snapshot.read_at = polled.finished;
  snapshot.why_old = polled.polling
                         ? "the poll of the inventory's agents has run for " +
                               whole_seconds(seconds_between(polled.polling_since, now)) +
                               " without finishing"
                         : "the inventory's agents have not been polled since";
  return snapshot;
}

ComplianceHistory InventorySource::history(const FleetFilter& filter) {
  return m_poller.history_matching(filter);
}

}  // namespace envcontract::fleet
