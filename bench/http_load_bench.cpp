// The agent's HTTP side under load, on loopback, with scans running:
//  1. baseline: one client asking /healthz on an idle agent, one request at a time;
//  2. load: CLIENTS keep-alive connections asking /api/v1/report and /metrics
//     in turn for SECONDS while a scan is requested every second; a
//     connection the agent closes between requests (keep-alive limits,
//     fairness) is reopened, which is not an error; any failed or non-200
//     request is;
//  3. slowloris: 16 clients dripping header bytes while /healthz is asked.
// Prints p50/p99 and their ratio to the baseline. Targets: zero errors under
// load, and /healthz under 1 s beside the slowloris clients.
//
// Usage: http_load_bench [SECONDS=60] [CLIENTS=200]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/report_only.hpp"
#include "daemon/agent.hpp"
#include "daemon/http_api.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// One keep-alive HTTP/1.1 connection, reopened when the server closes it.
class Connection {
 public:
  explicit Connection(int port) : m_port(port) {}
  ~Connection() { close_socket(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The status of GET `path`, or 0 when the request failed.
  int get(const std::string& path, bool* reopened = nullptr) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (m_fd < 0 && !open_socket()) {
        return 0;
      }
      const std::string request =
          "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n\r\n";
      if (::send(m_fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
        bool closed_before_answer = false;
        const int status = read_response(closed_before_answer);
        if (status != 0 || !closed_before_answer || attempt == 1) {
          return status;
        }
      }
      // Closed by the server while idle: reopen once, as any client does.
      close_socket();
      if (reopened != nullptr) {
        *reopened = true;
      }
    }
    return 0;
  }

 private:
  bool open_socket() {
    m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(m_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(m_port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(m_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      close_socket();
      return false;
    }
    m_buffer.clear();
    return true;
  }

  void close_socket() {
    if (m_fd >= 0) {
      ::close(m_fd);
      m_fd = -1;
    }
  }

  bool fill() {
    pollfd descriptor{m_fd, POLLIN, 0};
    if (::poll(&descriptor, 1, 30'000) <= 0) {
      return false;
    }
    char chunk[65536];
    const ssize_t got = ::recv(m_fd, chunk, sizeof chunk, 0);
    if (got <= 0) {
      return false;
    }
    m_buffer.append(chunk, static_cast<std::size_t>(got));
    return true;
  }

  int read_response(bool& closed_before_answer) {
    std::size_t end;
    while ((end = m_buffer.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) {
        closed_before_answer = m_buffer.empty();
        close_socket();
        return 0;
      }
    }
    const std::string head = m_buffer.substr(0, end);
    const int status = head.size() > 12 ? std::atoi(head.c_str() + 9) : 0;
    std::size_t length = 0;
    for (const char* name : {"Content-Length: ", "content-length: "}) {
      if (const auto at = head.find(name); at != std::string::npos) {
        length = std::strtoul(head.c_str() + at + std::strlen(name), nullptr, 10);
      }
    }
    while (m_buffer.size() < end + 4 + length) {
      if (!fill()) {
        close_socket();
        return 0;
      }
    }
    m_buffer.erase(0, end + 4 + length);
    if (head.find("Connection: close") != std::string::npos) {
      close_socket();
    }
    return status;
  }

  int m_port;
  int m_fd = -1;
  std::string m_buffer;
};

double percentile(std::vector<double> samples, double fraction) {
  if (samples.empty()) {
    return 0;
  }
  std::sort(samples.begin(), samples.end());
  return samples[std::min(samples.size() - 1, static_cast<std::size_t>(fraction * samples.size()))];
}

double elapsed_ms(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 60;
  const int clients = argc > 2 ? std::atoi(argv[2]) : 200;
  const fs::path work =
      fs::temp_directory_path() / ("envcontract-http-bench-" + std::to_string(::getpid()));
  fs::create_directories(work / "root");
  std::ofstream(work / "contract.yaml") << "schema_version: 1\nname: bench\nchecks:\n"
                                           "  - kind: python\n    version: \"3\"\n";
  envcontract::daemon::AgentConfig config;
  config.contract = (work / "contract.yaml").string();
  config.roots = {work / "root"};
  config.database = work / "agent.db";
  config.interval = std::chrono::hours(1);
  // Every client of the bench connects from 127.0.0.1: one address may
  // hold all the connections here, as many clients' would.
  config.http_max_connections_per_client = config.http_max_connections;
  envcontract::daemon::Agent agent(config);
  envcontract::daemon::HttpServer http(agent, "bench");
  const auto bound = http.bind({"127.0.0.1", 0});
  if (!bound) {
    std::fprintf(stderr, "cannot listen: %s\n", bound.error().c_str());
    return 2;
  }
  const int port = bound.value();
  if (const auto problem = agent.start(); !problem.empty()) {
    std::fprintf(stderr, "cannot start the agent: %s\n", problem.c_str());
    return 2;
  }
  std::thread server([&] { http.serve(); });
  while (!agent.snapshot()->report) {
    std::this_thread::sleep_for(20ms);
  }

  // 1. Baseline.
  std::vector<double> baseline;
  {
    Connection connection(port);
    for (int i = 0; i < 500; ++i) {
      const auto start = Clock::now();
      connection.get("/healthz");
      baseline.push_back(elapsed_ms(start));
    }
  }
  const double baseline_p50 = percentile(baseline, 0.5);

  // 2. Load, with scans running.
  std::atomic<bool> stop{false};
  std::atomic<long> errors{0};
  std::atomic<long> reopened{0};
  std::mutex samples_mutex;
  std::vector<double> samples;
  std::vector<std::thread> workers;
  for (int c = 0; c < clients; ++c) {
    workers.emplace_back([&, c] {
      Connection connection(port);
      std::vector<double> mine;
      for (long i = c; !stop; ++i) {
        const auto start = Clock::now();
        bool again = false;
        const int status = connection.get(i % 2 ? "/metrics" : "/api/v1/report", &again);
        mine.push_back(elapsed_ms(start));
        reopened += again ? 1 : 0;
        if (status != 200) {
          ++errors;
          if (std::getenv("BENCH_DEBUG")) {
            std::fprintf(stderr, "client %d: status %d after %.0f ms\n", c, status, mine.back());
          }
        }
      }
      std::lock_guard lock(samples_mutex);
      samples.insert(samples.end(), mine.begin(), mine.end());
    });
  }
  std::thread scanner([&] {
    while (!stop) {
      agent.request_scan("bench");
      std::this_thread::sleep_for(1s);
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop = true;
  for (auto& worker : workers) {
    worker.join();
  }
  scanner.join();
  const double p50 = percentile(samples, 0.5);
  const double p99 = percentile(samples, 0.99);

  // 3. Slowloris.
  std::vector<int> drippers;
  for (int i = 0; i < 16; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::send(fd, "GET /healthz HTTP/1.1\r\n", 23, MSG_NOSIGNAL);
    drippers.push_back(fd);
  }
  double slowloris_worst = 0;
  for (int round = 0; round < 20; ++round) {
    for (const int fd : drippers) {
      ::send(fd, "X", 1, MSG_NOSIGNAL);
    }
    Connection connection(port);
    const auto start = Clock::now();
    const int status = connection.get("/healthz");
    slowloris_worst = std::max(slowloris_worst, status == 200 ? elapsed_ms(start) : 1e9);
    std::this_thread::sleep_for(250ms);
  }
  for (const int fd : drippers) {
    ::close(fd);
  }

  http.stop();
  server.join();
  agent.stop();
  std::error_code ignored;
  fs::remove_all(work, ignored);

  std::printf(
      "HTTP load, %d keep-alive clients for %d s on /api/v1/report and /metrics, a scan "
      "requested every second\n",
      clients, seconds);
  std::printf("  baseline: /healthz, one idle client      p50 %8.2f ms\n", baseline_p50);
  std::printf("  under load: %zu requests (%.0f/s)  p50 %8.2f ms (%.1fx)  p99 %8.2f ms (%.1fx)\n",
              samples.size(), static_cast<double>(samples.size()) / seconds, p50,
              p50 / baseline_p50, p99, p99 / baseline_p50);
  std::printf("  errors %ld; connections reopened after a keep-alive close %ld\n", errors.load(),
              reopened.load());
  std::printf("  /healthz beside 16 slowloris clients: worst %.1f ms (target 1000 ms)\n",
              slowloris_worst);
  const bool ok = errors == 0 && slowloris_worst < 1000.0;
  bench_row(std::to_string(clients) + " keep-alive clients on the report and /metrics, " +
                std::to_string(seconds) + " s",
            bench_figure(static_cast<double>(samples.size()) / seconds, 0, " requests/s") +
                ", p99 " + bench_figure(p99, 1, " ms") + ", " + std::to_string(errors.load()) +
                " errors",
            "/healthz idle: p50 " + bench_figure(baseline_p50, 2, " ms"),
            bench_figure(p50 / baseline_p50, 1, "x at p50"), "no errors", errors == 0);
  bench_row("/healthz beside 16 slowloris clients", bench_figure(slowloris_worst, 1, " ms worst"),
            "-", "-", "under 1 s", slowloris_worst < 1000.0);
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
