#include "daemon/service_notifier.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "contracts/env_facts.hpp"
#include "daemon/agent.hpp"

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
  const auto tick = std::min(ping_every, std::chrono::milliseconds(1000));
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

namespace {

// Any HTTP status line within the time-out, or why not.
std::string http_answers(const ListenAddress& address, int port,
                         std::chrono::milliseconds timeout) {
  // A wildcard listener is asked on loopback.
  const std::string host = address.host == "0.0.0.0" ? "127.0.0.1"
                           : address.host == "::"    ? "::1"
                                                     : address.host;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 ||
      found == nullptr) {
    return "cannot resolve " + host;
  }
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const int connected = fd < 0 ? -1 : ::connect(fd, found->ai_addr, found->ai_addrlen);
  const int connect_error = errno;
  ::freeaddrinfo(found);
  if (fd < 0) {
    return "cannot open a socket";
  }
  const auto deadline = Clock::now() + timeout;
  const auto wait_for = [&](short events) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd descriptor{fd, events, 0};
    return left > 0 && ::poll(&descriptor, 1, static_cast<int>(left)) > 0 &&
           (descriptor.revents & events) != 0;
  };
  // A connection in progress is made once writable without a pending error.
  const auto completed = [&] {
    int error = 0;
    socklen_t length = sizeof error;
    return wait_for(POLLOUT) && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 &&
           error == 0;
  };
  std::string problem;
  if (connected != 0 && (connect_error != EINPROGRESS || !completed())) {
    problem = "cannot connect to its own HTTP side at " + host + " port " + std::to_string(port);
  } else {
    const std::string request = "GET /healthz HTTP/1.1\r\nHost: " +
                                (host.find(':') != std::string::npos ? "[" + host + "]" : host) +
                                "\r\nConnection: close\r\n\r\n";
    std::string answer;
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
      problem = "cannot send a request to its own HTTP side";
    }
    while (problem.empty() && answer.size() < 12 && wait_for(POLLIN)) {
      char buffer[64];
      const auto got = ::recv(fd, buffer, sizeof buffer, 0);
      if (got <= 0) {
        break;
      }
      answer.append(buffer, static_cast<std::size_t>(got));
    }
    if (problem.empty() && !answer.starts_with("HTTP/1.")) {
      problem = "its own HTTP side did not answer GET /healthz within " +
                std::to_string(timeout.count()) + " ms";
    }
  }
  ::close(fd);
  return problem;
}

}  // namespace

std::string agent_liveness_problem(const Agent& agent, const ListenAddress& address, int port,
                                   std::chrono::milliseconds timeout) {
  if (auto problem = agent.liveness_problem(); !problem.empty()) {
    return problem;
  }
  return http_answers(address, port, timeout);
}

std::string agent_status_line(const Agent& agent) {
  const auto snapshot = agent.snapshot();
  const std::string contract =
      snapshot->contract ? "; contract " + snapshot->contract->identity.name : "";
  if (!snapshot->report) {
    return "first scan running" + contract;
  }
  const auto& report = *snapshot->report;
  const auto envs = contracts::array_field(report, "envs");
  std::size_t compliant = 0;
  for (const auto& env : envs) {
    compliant += contracts::string_field(env, "verdict") == "compliant" ? 1 : 0;
  }
  char seconds[48] = ", recorded before this start";
  if (agent.counters().scans.load() > 0) {
    std::snprintf(seconds, sizeof seconds, ", %.1f s", agent.counters().last_scan_seconds.load());
  }
  const auto id = report.contains("scan_id") && report.at("scan_id").is_number_integer()
                      ? " " + std::to_string(report.at("scan_id").get<std::int64_t>())
                      : std::string();
  return (snapshot->scanning ? "scanning; " : "") + std::string("last scan") + id + ": " +
         contracts::string_field(report, "verdict") + ", " + std::to_string(envs.size()) +
         " envs (" + std::to_string(compliant) + " compliant)" + seconds + contract;
}

}  // namespace envcontract::daemon
