#include "daemon/service_notifier.hpp"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <algorithm>
#include <cstdio>

#include "daemon/agent.hpp"
#include "daemon/http_api.hpp"

namespace envcontract::daemon {

using Clock = std::chrono::steady_clock;

ServiceNotifier::ServiceNotifier(Checks checks, std::chrono::microseconds watchdog)
    : m_checks(std::move(checks)), m_watchdog(watchdog.count() > 0) {
  // Pings every half interval, as sd_watchdog_enabled(3) advises.
  const auto ping_every =
      std::max(std::chrono::milliseconds(100),
               std::chrono::duration_cast<std::chrono::milliseconds>(watchdog / 2));
  m_thread = std::thread([this, ping_every] { run(ping_every); });
}

ServiceNotifier::~ServiceNotifier() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  m_wake.notify_all();
  m_thread.join();
}

std::chrono::microseconds ServiceNotifier::watchdog_interval() {
  std::uint64_t usec = 0;
  return sd_watchdog_enabled(0, &usec) > 0 ? std::chrono::microseconds(usec)
                                           : std::chrono::microseconds(0);
}

void ServiceNotifier::run(std::chrono::milliseconds ping_every) {
  // The status is looked at every second; the liveness checks (a request
  // to the agent's own HTTP side) only when a ping is due.
  const auto tick = m_watchdog ? std::min(ping_every, std::chrono::milliseconds(1000))
                               : std::chrono::milliseconds(1000);
  auto next_ping = Clock::now();
  std::string last_status;
  std::string last_problem;
  std::unique_lock lock(m_mutex);
  while (!m_stopping) {
    lock.unlock();
    const std::string status = m_checks.status();
    if (status != last_status) {
      sd_notifyf(0, "STATUS=%s", status.c_str());
      last_status = status;
    }
    if (m_watchdog && Clock::now() >= next_ping) {
      next_ping = Clock::now() + ping_every;
      const std::string problem = m_checks.problem();
      if (problem.empty()) {
        sd_notify(0, "WATCHDOG=1");
        if (!last_problem.empty()) {
          spdlog::info("watchdog: the agent is alive again; pinging systemd");
        }
      } else if (problem != last_problem) {
        spdlog::error(
            "watchdog: {}; not pinging systemd, which restarts the agent when "
            "WatchdogSec= runs out",
            problem);
      }
      last_problem = problem;
    }
    lock.lock();
    m_wake.wait_for(lock, tick, [this] { return m_stopping; });
  }
}

std::string agent_liveness_problem(const Agent& agent, const HttpServer& http) {
  if (auto problem = agent.liveness_problem(); !problem.empty()) {
    return problem;
  }
  return http.liveness_problem();
}

std::string agent_status_line(const Agent& agent) {
  const auto snapshot = agent.snapshot();
  const std::string contract =
      snapshot->contract ? "; contract " + snapshot->contract->identity.name : "";
  if (!snapshot->report) {
    return "first scan running" + contract;
  }
  const auto& report = *snapshot->report;
  const std::size_t compliant = static_cast<std::size_t>(
      std::count_if(report.envs.begin(), report.envs.end(), [](const report::EnvReport& env) {
        return env.verdict == contracts::EnvVerdict::compliant;
      }));
  char seconds[48] = ", recorded before this start";
  if (agent.counters().scans.load() > 0) {
    std::snprintf(seconds, sizeof seconds, ", %.1f s", agent.counters().last_scan_seconds.load());
  }
  const auto id = report.scan_id ? " " + std::to_string(*report.scan_id) : std::string();
  return (snapshot->scanning ? "scanning; " : "") + std::string("last scan") + id + ": " +
         to_string(report.verdict) + ", " + std::to_string(report.envs.size()) + " envs (" +
         std::to_string(compliant) + " compliant)" + seconds + contract;
}

}  // namespace envcontract::daemon
