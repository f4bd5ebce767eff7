#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace envcontract::daemon {

class Agent;
class HttpServer;

// Tells systemd how the agent is doing (sd_notify; nothing happens outside
// a notify-type unit). STATUS= carries the last scan's result whenever it
// changes, so `systemctl status` shows it. With WatchdogSec= in the unit,
// WATCHDOG=1 is sent every half interval while `problem` says nothing is wrong;
// when it names a problem the pings stop (the problem is logged once) and
// systemd restarts the agent when the watchdog interval runs out.
class ServiceNotifier {
 public:
  struct Checks {
    std::function<std::string()> problem;  // "" while the agent is alive
    std::function<std::string()> status;   // the status line
  };
  // `watchdog`: the unit's watchdog interval, zero when it has none.
  ServiceNotifier(Checks checks, std::chrono::microseconds watchdog);
  ~ServiceNotifier();
  ServiceNotifier(const ServiceNotifier&) = delete;
  ServiceNotifier& operator=(const ServiceNotifier&) = delete;

  // The watchdog interval systemd asked for (WatchdogSec=), or zero.
  static std::chrono::microseconds watchdog_interval();

 private:
  void run(std::chrono::milliseconds ping_every);

  Checks m_checks;
  bool m_watchdog;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stopping = false;
  std::thread m_thread;
};

// The agent's own checks, both judged inside the process: the scheduler's
// liveness and the HTTP side's (HttpServer::liveness_problem).
std::string agent_liveness_problem(const Agent& agent, const HttpServer& http);

// "last scan 12: drift, 8 envs (2 compliant), 3.2 s; contract kunlunxin"
std::string agent_status_line(const Agent& agent);

}  // namespace envcontract::daemon
