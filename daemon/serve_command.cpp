#include "daemon/serve_command.hpp"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>

#include <csignal>
#include <cstdlib>
#include <string>

#include "daemon/agent.hpp"
#include "daemon/http_api.hpp"
#include "daemon/ready_file.hpp"
#include "daemon/service_notifier.hpp"

namespace envcontract::daemon {
namespace {

// The signals the agent handles, blocked in every thread (threads inherit
// the mask) by prepare_process, so that only sigwait() sees them. Probes
// restore the default mask.
sigset_t handled_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGHUP);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

// Descriptors kept for everything but connections: the database, probes'
// pipes and cgroup files, logs. (The HTTP side waits with poll(), so
// descriptors above FD_SETSIZE are served as any other.)
constexpr std::size_t k_descriptor_reserve = 256;

// Raises the soft descriptor limit to the hard one and bounds the
// connections so that they, with the reserve, fit under it.
std::size_t connection_bound(std::size_t wanted) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return wanted;
  }
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  if (limit.rlim_cur == RLIM_INFINITY) {
    return wanted;
  }
  const auto descriptors = static_cast<std::size_t>(limit.rlim_cur);
  const std::size_t room =
      descriptors > k_descriptor_reserve * 2 ? descriptors - k_descriptor_reserve : descriptors / 2;
  if (wanted > room) {
    spdlog::warn(
        "http_max_connections {} lowered to {}: the agent may open {} descriptors (LimitNOFILE) "
        "and keeps {} for probes and the database",
        wanted, room, descriptors, k_descriptor_reserve);
    return room;
  }
  return wanted;
}

// malloc's arenas for the whole process. glibc's default, 8 per core, gives
// nearly every HTTP and scan thread an arena of its own, and each keeps the
// top of its heap resident after a scan (malloc_trim does not trim another
// arena's top): 27.9 MB idle on a 16-env host where 4 arenas left 23.0 MB,
// and, once the HTTP side no longer loaded OpenSSL, one arena 19.0-19.2 MB
// where 4 left 20.2-21.4 (bench/footprint.sh). The agent's threads mostly
// wait on I/O: with one arena wrk against /api/v1/report and /metrics and a
// cold scan of 16 envs were as fast as with four, within their noise
// (docs/performance.md, "Footprint").
constexpr int k_malloc_arenas = 1;

// Start-up, step by step. Each step returns why it failed, for the user;
// what the steps before it started is stopped by its owner's destructor
// (HttpServer, Agent, the guards below), in the reverse order, whichever
// step fails.

// The process' settings every thread inherits: glibc's arenas, the signals
// only sigwait() sees, and those that must fail a call instead of killing.
void prepare_process(const sigset_t& signals) {
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr && std::getenv("GLIBC_TUNABLES") == nullptr) {
    ::mallopt(M_ARENA_MAX, k_malloc_arenas);  // unless the operator chose otherwise
  }
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A full disk (or a file size limit) must fail a write, not kill the agent;
  // a peer that closes mid-write must fail that write, not kill the agent
  // (the agent's own sockets send with MSG_NOSIGNAL; a library's may not).
  std::signal(SIGXFSZ, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
}

common::Result<ListenAddress> listen_address(const AgentConfig& config) {
  auto address = parse_listen_address(config.listen);
  if (!address) {
    return common::Error{"--listen must be HOST:PORT such as 127.0.0.1:9714, got '" +
                         config.listen + "'"};
  }
  return *address;
}

// Loads the contract, opens the store and queues the first scan; the
// agent's destructor stops what started. Returns the contract in force.
common::Result<ContractHandle> start_agent(Agent& agent) {
  if (auto problem = agent.start(); !problem.empty()) {
    return common::Error{std::move(problem)};
  }
  return agent.snapshot()->contract;
}

// STOPPING=1 to systemd when the agent stops, however it stops.
class StoppingNotice {
 public:
  StoppingNotice() = default;
  ~StoppingNotice() { sd_notify(0, "STOPPING=1"); }
  StoppingNotice(const StoppingNotice&) = delete;
  StoppingNotice& operator=(const StoppingNotice&) = delete;
};

// Until SIGTERM or SIGINT; SIGHUP reloads the contract.
void wait_for_stop(Agent& agent, const sigset_t& signals) {
  for (;;) {
    int received = 0;
    if (sigwait(&signals, &received) != 0) {
      continue;
    }
    if (received == SIGHUP) {
      spdlog::info("SIGHUP: reloading the contract");
      agent.request_reload();
      continue;
    }
    spdlog::info("{}: stopping", received == SIGTERM ? "SIGTERM" : "SIGINT");
    return;
  }
}

int cannot_start(const std::string& why) {
  spdlog::critical("{}", why);
  return 2;
}

int serve(const ServeOptions& options) {
  const sigset_t signals = handled_signals();
  prepare_process(signals);
  const auto address = listen_address(options.config);
  if (!address) {
    return cannot_start(address.error());
  }
  auto config = options.config;
  config.http_max_connections = connection_bound(config.http_max_connections);
  Agent agent(config);
  HttpServer http(agent, ENVCONTRACT_VERSION);
  // On every way out (a stop, a failed start, an exception), before the
  // HTTP side waits for its threads: a CI gate holds one while it scans.
  struct GatesStop {
    Agent& agent;
    ~GatesStop() { agent.stop_gates(); }
  } gates_stop{agent};
  const auto port = http.bind(*address);
  if (!port) {
    return cannot_start(port.error());
  }
  if (const auto started = start_agent(agent); !started) {
    return cannot_start(started.error());
  }
  const auto serving = http.start();
  if (!serving) {
    return cannot_start(serving.error());
  }
  const std::string url = served_url(*address, port.value());
  spdlog::info("envcontractd {} serving the dashboard and API at {}", ENVCONTRACT_VERSION, url);
  if (const auto ready = announce_ready(options.ready_file, url); !ready) {
    return cannot_start(ready.error());
  }
  const StoppingNotice stopping;
  const auto watchdog = ServiceNotifier::watchdog_interval();
  if (watchdog.count() > 0) {
    spdlog::info("systemd watchdog: {} ms; pinging while the scheduler and the HTTP side answer",
                 watchdog.count() / 1000);
  }
  const ServiceNotifier notifier(
      ServiceNotifier::Checks{[&] { return agent_liveness_problem(agent, http); },
                              [&] { return agent_status_line(agent); }},
      watchdog);
  wait_for_stop(agent, signals);
  return 0;  // the notifier, then the HTTP side, then the agent stop on the way out
}

}  // namespace

int run_serve(const ServeOptions& options) {
  try {
    return serve(options);
  } catch (const std::exception& e) {
    // What no step could foresee (a store failing under us): what had
    // started has been stopped on the way here.
    spdlog::critical("the agent stopped: {}", e.what());
    return 2;
  }
}

}  // namespace envcontract::daemon
