#include "fleet/inventory_poller.hpp"

#include "common/time_text.hpp"

namespace envcontract::fleet {

InventoryPoller::InventoryPoller(Options options) : m_options(std::move(options)) {
  auto hosts = std::make_shared<std::vector<HostReport>>();
  for (const auto& address : m_options.hosts) {
    HostReport host;
    host.address = address;
    host.error = "not asked yet: the fleet view's first poll is running";
    hosts->push_back(std::move(host));
  }
  m_hosts = std::move(hosts);
}

InventoryPoller::~InventoryPoller() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  m_wake.notify_all();  // a poll running stops asking hosts: the join waits for one request
  if (m_thread.joinable()) {
    m_thread.join();
  }
}

void InventoryPoller::start() {
  m_thread = std::thread([this] {
    for (;;) {
      poll_once();
      std::unique_lock lock(m_mutex);
      if (m_wake.wait_for(lock, m_options.interval, [this] { return m_stopping.load(); })) {
        return;
      }
    }
  });
}

void InventoryPoller::poll_once() {
  {
    std::lock_guard lock(m_mutex);
    m_polling = true;
    m_polling_since = std::chrono::steady_clock::now();
  }
  auto answers =
      fetch_reports(m_options.hosts, m_options.client, m_options.concurrency, &m_stopping, true);
  if (m_stopping) {
    return;  // cut short: its answers are not the fleet's
  }
  const std::string now = common::now_rfc3339();
  const auto before = latest().hosts;
  for (std::size_t i = 0; i < answers.size() && i < before->size(); ++i) {
    auto& answer = answers[i];
    if (!answer.report) {
      // Unreachable now: what it was when last seen stays, as last known.
      const auto& earlier = (*before)[i];
      answer.last_seen = earlier.last_seen;
      answer.last_verdict = earlier.last_verdict;
      answer.last_known = earlier.report ? earlier.report : earlier.last_known;
      answer.last_known_from =
          earlier.report ? "its answer at " + earlier.last_seen : earlier.last_known_from;
    }
  }
  auto after = std::make_shared<const std::vector<HostReport>>(std::move(answers));
  std::string states;
  states.reserve(after->size());
  for (const auto& host : *after) {
    // As the view counts them: a verdict it does not know is an error.
    const std::string state = host.state();
    states += state == "compliant"     ? 'c'
              : state == "drift"       ? 'd'
              : state == "pending"     ? 'p'
              : state == "unavailable" ? 'u'
                                       : 'e';
  }
  std::lock_guard lock(m_mutex);
  m_history.push_back(count_verdicts(*after, now));
  m_poll_states.push_back(std::move(states));
  m_hosts = std::move(after);
  while (m_history.size() > m_options.history_points) {
    m_history.pop_front();
    m_poll_states.pop_front();
  }
  ++m_polls;
  m_polled_at = now;
  m_finished = std::chrono::steady_clock::now();
  m_polling = false;
}

std::shared_ptr<const std::vector<HostReport>> InventoryPoller::latest_hosts() const {
  std::lock_guard lock(m_mutex);
  return m_hosts;
}

InventoryPoller::Polled InventoryPoller::latest() const {
  std::lock_guard lock(m_mutex);
  Polled polled;
  polled.hosts = m_hosts;
  polled.history.step_seconds = static_cast<int>(
      std::chrono::duration_cast<std::chrono::seconds>(m_options.interval).count());
  polled.history.points.assign(m_history.begin(), m_history.end());
  polled.at = m_polled_at;
  polled.polls = m_polls;
  polled.finished = m_finished;
  polled.polling = m_polling;
  polled.polling_since = m_polling_since;
  return polled;
}

ComplianceHistory InventoryPoller::history_matching(const FleetFilter& filter) const {
  FleetFilter hosts_filter = filter;
  hosts_filter.verdict.clear();  // the state of each poll, not today's
  // Which hosts match, outside the lock (the hosts are immutable once
  // published; the inventory's order is every poll's).
  const auto hosts = latest_hosts();
  std::vector<bool> counted(hosts->size());
  for (std::size_t i = 0; i < counted.size(); ++i) {
    counted[i] = host_matches((*hosts)[i], hosts_filter);
  }
  std::lock_guard lock(m_mutex);
  ComplianceHistory history;
  history.step_seconds = static_cast<int>(
      std::chrono::duration_cast<std::chrono::seconds>(m_options.interval).count());
  history.scope = "the hosts that match the filters now";
  const auto shown = [&](char state) {
    return filter.verdict.empty() || filter.verdict.front() == state;
  };
  for (std::size_t poll = 0; poll < m_poll_states.size(); ++poll) {
    const std::string& states = m_poll_states[poll];
    CompliancePoint point;
    point.time = m_history[poll].time;
    for (std::size_t i = 0; i < states.size() && i < counted.size(); ++i) {
      if (!counted[i] || !shown(states[i])) {
        continue;
      }
      switch (states[i]) {
        case 'c':
          ++point.compliant;
          break;
        case 'd':
          ++point.drift;
          break;
        case 'e':
          ++point.error;
          break;
        default:
          ++point.down;  // unavailable, or a first scan still running
      }
    }
    history.points.push_back(std::move(point));
  }
  return history;
}

}  // namespace envcontract::fleet
