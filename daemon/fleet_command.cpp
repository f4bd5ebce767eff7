#include "daemon/fleet_command.hpp"

#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <csignal>
#include <iostream>

#include "contracts/values.hpp"
#include "daemon/agent_config.hpp"
#include "daemon/fleet_service.hpp"
#include "daemon/logging.hpp"
#include "daemon/ready_file.hpp"
#include "daemon/shared_flags.hpp"

namespace envcontract::daemon {

struct FleetCli::Arguments {
  CLI::App* verb = nullptr;
  std::string prometheus;
  std::string job = "envcontract";
  std::string inventory;
  std::string listen = "127.0.0.1:9715";
  std::string interval = "1m";
  std::string timeout = "10s";
  std::string history = "7d";
  unsigned concurrency = 16;
  std::vector<std::string> allowed_hosts;
  std::string log_level = "info";
  std::string ready_file;
};

namespace {

// Agents asked at once: each request is a thread or two, all within the
// unit's TasksMax.
constexpr unsigned k_most_concurrency = 64;

std::optional<std::chrono::milliseconds> duration_flag(const std::string& flag,
                                                       const std::string& text) {
  const auto parsed = contracts::parse_duration(text);
  if (!parsed || parsed.value().count() <= 0) {
    std::cerr << "envcontractd fleet: " << flag << ": "
              << (parsed ? "must be longer than 0" : parsed.error()) << "\n";
    return std::nullopt;
  }
  return parsed.value();
}

// "7d" or "48h": the history's range, longer than parse_duration allows.
std::optional<std::chrono::seconds> history_range(const std::string& text) {
  std::size_t digits = 0;
  while (digits < text.size() && digits < 4 &&
         std::isdigit(static_cast<unsigned char>(text[digits]))) {
    ++digits;
  }
  const std::string unit = text.substr(digits);
  const long count = digits > 0 ? std::stol(text.substr(0, digits)) : 0;
  const long hours = unit == "d" ? count * 24 : unit == "h" ? count : 0;
  if (hours <= 0 || hours > 400 * 24) {
    std::cerr << "envcontractd fleet: --history: expected hours or days such as '48h' or '7d' "
                 "(at most 400d), got '"
              << text << "'\n";
    return std::nullopt;
  }
  return std::chrono::hours(hours);
}

}  // namespace

FleetCli::FleetCli(CLI::App& app) : m_arguments(std::make_unique<Arguments>()) {
  auto& arguments = *m_arguments;
  auto* verb = app.add_subcommand(
      "fleet",
      "Serve the fleet view: every agent's verdict, causes and compliance over time, as a web "
      "page and /api/v1/fleet, read from Prometheus or by asking the agents of an inventory");
  arguments.verb = verb;
  auto* prometheus = verb->add_option(
      "--prometheus", arguments.prometheus,
      "http:// address of the Prometheus that scrapes the agents (it holds the fleet's state)");
  verb->add_option("--job", arguments.job,
                   "the agents' scrape job in Prometheus (default envcontract)");
  auto* inventory = verb->add_option(
      "--inventory", arguments.inventory,
      "file listing the agents, one host[:port] per line, for fleets without Prometheus");
  prometheus->excludes(inventory);
  verb->add_option("--listen", arguments.listen,
                   "HOST:PORT to serve on (default 127.0.0.1:9715; port 0: any free port)");
  verb->add_option("--interval", arguments.interval,
                   "with --inventory: time between polls of the agents (default 1m)");
  verb->add_option("--timeout", arguments.timeout,
                   "each request to Prometheus or an agent, whole (default 10s)");
  verb->add_option("--history", arguments.history,
                   "with --prometheus: how far back compliance over time goes: hours (48h) or days "
                   "(7d, at most 400d; default 7d)");
  verb->add_option("--concurrency", arguments.concurrency,
                   "with --inventory: agents asked at once (default 16, at most 64)");
  add_allowed_host_option(verb, arguments.allowed_hosts);
  verb->add_option("--log-level", arguments.log_level,
                   "trace, debug, info (default), warn, error, critical or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  verb->add_option("--ready-file", arguments.ready_file,
                   "write the page's URL to this file once listening (for scripts)");
  verb->footer(
      "Give --prometheus or --inventory. The view keeps no state of its own: with Prometheus "
      "every figure is a query; with an inventory, the latest answers and the compliance of "
      "each poll since it started are kept in memory.\n"
      "Exit status: 0 stopped cleanly (SIGTERM, SIGINT), 2 cannot start.");
}

FleetCli::~FleetCli() = default;

namespace {

fleet::ClientOptions agent_client_options(std::chrono::milliseconds timeout) {
  fleet::ClientOptions client;
  client.timeout = timeout;
  // Agents answer from a report they hold: one silent for 4 s is stopped or
  // stuck, and a poll does not wait the whole --timeout on it.
  client.silence = std::min(client.timeout, std::chrono::milliseconds(4'000));
  // A report of hundreds of envs is a few MB: room for it, not for a
  // misbehaving server's gigabytes times the polls at once.
  client.max_response_bytes = 16 << 20;
  return client;
}

// Null when --prometheus is not an address (said on stderr).
std::unique_ptr<fleet::FleetSource> prometheus_source(const std::string& prometheus,
                                                      const std::string& job,
                                                      const fleet::ClientOptions& client,
                                                      std::chrono::seconds history,
                                                      std::chrono::milliseconds timeout) {
  const auto address = fleet::parse_host_address(prometheus);
  if (!address) {
    std::cerr << "envcontractd fleet: --prometheus must be an http:// address or HOST:PORT, "
                 "got '"
              << prometheus << "'\n";
    return nullptr;
  }
  fleet::PrometheusSource::Options options;
  options.prometheus = *address;
  options.job = job;
  options.client = client;
  // Prometheus' answers list every agent's failing checks: more room.
  options.client.max_response_bytes = 256 << 20;
  options.client.server = "Prometheus";
  options.client.silence = {};  // a query over a big fleet may think for seconds
  options.history_range = history;
  options.first_wait = timeout;
  return std::make_unique<fleet::PrometheusSource>(std::move(options));
}

// Null when the inventory cannot be read (said on stderr).
std::unique_ptr<fleet::FleetSource> inventory_source(const std::string& inventory,
                                                     unsigned concurrency,
                                                     const fleet::ClientOptions& client,
                                                     std::chrono::milliseconds interval) {
  auto hosts = fleet::read_inventory(inventory);
  if (!hosts) {
    std::cerr << hosts.error() << "\n";
    return nullptr;
  }
  std::vector<std::string> repeated;
  fleet::InventoryPoller::Options options;
  options.hosts = fleet::distinct_hosts(*hosts, repeated);
  for (const auto& each : repeated) {
    spdlog::warn("inventory: {} is listed once", each);
  }
  options.client = client;
  options.concurrency = std::max(1U, concurrency);
  options.interval = interval;
  return std::make_unique<fleet::InventorySource>(std::filesystem::absolute(inventory).string(),
                                                  std::move(options));
}

// Serves the view until SIGTERM or SIGINT (blocked, and waited for, here).
int serve_fleet_view(FleetService& service, const HttpSettings& settings,
                     const ListenAddress& listen, const std::string& ready_file,
                     const sigset_t& signals) {
  HttpServer http(settings,
                  [&service](const PlainRequest& request) { return service.answer(request); });
  const auto bound = http.bind(listen);
  if (!bound) {
    spdlog::critical("{}", bound.error());
    return 2;
  }
  if (const auto serving = http.start(); !serving) {
    spdlog::critical("{}", serving.error());
    return 2;
  }
  const std::string url = served_url(listen, bound.value());
  spdlog::info("envcontractd {} serving the fleet view at {}", ENVCONTRACT_VERSION, url);
  if (const auto ready = announce_ready(ready_file, url); !ready) {
    spdlog::critical("{}", ready.error());
    return 2;  // the HTTP server stops and its thread is joined on the way out
  }
  for (;;) {
    int received = 0;
    if (sigwait(&signals, &received) == 0) {
      spdlog::info("{}: stopping", received == SIGTERM ? "SIGTERM" : "SIGINT");
      break;
    }
  }
  sd_notify(0, "STOPPING=1");
  return 0;
}

}  // namespace

std::optional<int> FleetCli::run() {
  const auto& arguments = *m_arguments;
  if (!arguments.verb->parsed()) {
    return std::nullopt;
  }
  if (arguments.prometheus.empty() == arguments.inventory.empty()) {
    std::cerr << "envcontractd fleet: give --prometheus URL or --inventory FILE\n";
    return 2;
  }
  const auto listen = parse_listen_address(arguments.listen);
  if (!listen) {
    std::cerr << "envcontractd fleet: --listen must be HOST:PORT such as 127.0.0.1:9715, got '"
              << arguments.listen << "'\n";
    return 2;
  }
  const auto interval = duration_flag("--interval", arguments.interval);
  const auto timeout = duration_flag("--timeout", arguments.timeout);
  const auto history = history_range(arguments.history);
  if (!interval || !timeout || !history) {
    return 2;
  }
  if (arguments.concurrency > k_most_concurrency) {
    std::cerr << "envcontractd fleet: --concurrency: at most " << k_most_concurrency << ", got "
              << arguments.concurrency << "\n";
    return 2;
  }
  const fleet::ClientOptions client = agent_client_options(*timeout);
  configure_logging(arguments.log_level);

  const sigset_t signals = [] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    return set;
  }();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  auto source =
      arguments.prometheus.empty()
          ? inventory_source(arguments.inventory, arguments.concurrency, client, *interval)
          : prometheus_source(arguments.prometheus, arguments.job, client, *history, *timeout);
  if (source == nullptr) {
    return 2;
  }
  FleetService service(std::move(source), client, ENVCONTRACT_VERSION);
  HttpSettings settings;
  settings.listen = arguments.listen;
  settings.allowed_hosts = arguments.allowed_hosts;
  // A request may wait for Prometheus' first answer or an agent's report
  // (each bounded by --timeout) before it is answered.
  settings.timeout = 2 * *timeout + std::chrono::seconds(5);
  settings.allowed_hosts_setting = "the fleet view's --allowed-host";
  settings.timeout_setting = "twice the fleet view's --timeout and 5 s";
  settings.threads = 8;
  return serve_fleet_view(service, settings, *listen, arguments.ready_file, signals);
}

}  // namespace envcontract::daemon
