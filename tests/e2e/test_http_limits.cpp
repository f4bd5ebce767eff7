// The agent's HTTP side against clients that misbehave on purpose, over raw
// loopback sockets: slow drips, header floods, too many connections, foreign
// Host names, cross-site scan requests, requests without Content-Length.
#include <arpa/inet.h>
#include <linux/tcp.h>  // tcp_info's tcpi_data_segs_in, which glibc's lacks
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>

#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/http_client.hpp"

namespace envcontract {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Binds `fd` to `address` of 127.0.0.0/8 (all of it is loopback on Linux),
// so that the agent, listening on 127.0.0.1, sees another client.
void bind_source(int fd, const std::string& address) {
  int yes = 1;
  // The port is chosen at connect(), per destination: many connections from
  // one address do not run out of ports.
  ::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &yes, sizeof yes);
  sockaddr_in source{};
  source.sin_family = AF_INET;
  ASSERT_EQ(::inet_pton(AF_INET, address.c_str(), &source.sin_addr), 1) << address;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof source), 0)
      << address << ": " << std::strerror(errno);
}

// One TCP connection to the agent, written and read by hand.
class RawClient {
 public:
  // `receive_buffer`: a small SO_RCVBUF, so that the server's answers fill
  // the connection before the client reads (0: the kernel's default).
  // `from`: the loopback address to connect from ("": 127.0.0.1).
  explicit RawClient(int port, int receive_buffer = 0, const std::string& from = "") {
    m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (receive_buffer > 0) {
      ::setsockopt(m_fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    }
    if (!from.empty()) {
      bind_source(m_fd, from);
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    m_connected = ::connect(m_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  ~RawClient() { ::close(m_fd); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return m_connected; }

  // False once the server has closed the connection (or reset it).
  bool send(const std::string& bytes) {
    return ::send(m_fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }

  // Everything the server sends until it closes or `timeout` passes.
  std::string read_all(std::chrono::milliseconds timeout) {
    std::string received;
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      pollfd descriptor{m_fd, POLLIN, 0};
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (::poll(&descriptor, 1, static_cast<int>(left.count())) <= 0) {
        break;
      }
      char chunk[4096];
      const ssize_t got = ::recv(m_fd, chunk, sizeof chunk, 0);
      if (got <= 0) {
        m_closed = true;
        break;
      }
      received.append(chunk, static_cast<std::size_t>(got));
    }
    return received;
  }

  bool closed_by_server() const { return m_closed; }

  // How many TCP segments with data the server has sent on this connection.
  std::uint32_t data_segments_received() const {
    tcp_info info{};
    socklen_t length = sizeof info;
    EXPECT_EQ(::getsockopt(m_fd, IPPROTO_TCP, TCP_INFO, &info, &length), 0);
    return info.tcpi_data_segs_in;
  }

 private:
  int m_fd = -1;
  bool m_connected = false;
  bool m_closed = false;
};

int status_of(const std::string& response) {
  return response.size() > 12 && response.starts_with("HTTP/1.1 ")
             ? std::stoi(response.substr(9, 3))
             : 0;
}

std::string get(const std::string& path, const std::string& host = "127.0.0.1") {
  return "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n";
}

class HttpLimits : public ::testing::Test {
 protected:
  // Scans one env of the demo host, or all of it with `whole_demo_host`
  // (a report of about 50 KB instead of 8).
  void start(const std::string& config_text, bool whole_demo_host = false) {
    m_agent.reset();  // one agent at a time on this directory
    const auto config = m_dir.write("agent.yaml", config_text);
    m_agent = std::make_unique<AgentProcess>(
        m_dir.path(),
        std::vector<std::string>{
            "--config", config.string(), "--contract", quick_demo_contract(m_dir.path()).string(),
            whole_demo_host ? "--root" : "--prefix",
            (whole_demo_host ? demo_host() : demo_host() / "venvs/xpu210v").string(), "--database",
            (m_dir.path() / "agent.db").string(), "--interval", "1h", "--log-level", "debug"});
  }

  std::string exchange(const std::string& request, std::chrono::milliseconds timeout = 5s) {
    RawClient client(m_agent->port());
    EXPECT_TRUE(client.connected());
    client.send(request);
    return client.read_all(timeout);
  }

  // How long /healthz takes to answer, asked on a new connection.
  std::chrono::milliseconds healthz_latency() {
    const auto started = Clock::now();
    const auto response = exchange(get("/healthz"));
    EXPECT_EQ(status_of(response), 200) << response;
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  }

  TempDir m_dir;
  std::unique_ptr<AgentProcess> m_agent;
};

TEST_F(HttpLimits, SlowClientsAreCutOffAndNeverHoldUpOthers) {
  start("http_timeout: 2s\n");
  std::vector<std::unique_ptr<RawClient>> drippers;
  for (int i = 0; i < 16; ++i) {
    drippers.push_back(std::make_unique<RawClient>(m_agent->port()));
    drippers.back()->send("GET /healthz HTTP/1.1\r\n");
  }
  const auto dripping_since = Clock::now();
  std::chrono::milliseconds worst{0};
  // One header byte every 300 ms from each: under any per-read timeout.
  for (int round = 0; round < 12; ++round) {
    for (auto& dripper : drippers) {
      dripper->send("X");
    }
    worst = std::max(worst, healthz_latency());
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_LT(worst, 1000ms);
  // The whole request has 2 s (http_timeout): every dripper was closed.
  for (auto& dripper : drippers) {
    dripper->read_all(1s);
    EXPECT_TRUE(dripper->closed_by_server());
  }
  EXPECT_LT(Clock::now() - dripping_since, 10s);
}

TEST_F(HttpLimits, HeaderFloodsAreRefusedWithoutGrowingTheAgent) {
  start("http_timeout: 5s\n");
  const auto rss_kib = [&] {
    std::ifstream status("/proc/" + std::to_string(m_agent->pid()) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.starts_with("VmRSS:")) {
        return std::stol(line.substr(6));
      }
    }
    return 0L;
  };
  const long before = rss_kib();
  // 300 MB of headers offered; the agent stops reading at its limit.
  RawClient flood(m_agent->port());
  flood.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  const std::string header = "X-Padding: " + std::string(1000, 'p') + "\r\n";
  std::string chunk;
  for (int i = 0; i < 1000; ++i) {
    chunk += header;
  }
  for (int i = 0; i < 300 && flood.send(chunk); ++i) {
  }
  const auto answer = flood.read_all(5s);
  EXPECT_EQ(status_of(answer), 431) << answer.substr(0, 300);
  EXPECT_LT(rss_kib() - before, 50 * 1024);

  std::string many = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 0; i < 150; ++i) {
    many += "X-Field-" + std::to_string(i) + ": v\r\n";
  }
  const auto too_many = exchange(many + "\r\n");
  EXPECT_EQ(status_of(too_many), 431) << too_many;
  EXPECT_NE(too_many.find("too many header fields (151; at most 100)"), std::string::npos);
  EXPECT_EQ(status_of(exchange(get("/healthz"))), 200);
}

TEST_F(HttpLimits, ConnectionsPastTheBoundGetA503AtOnce) {
  // Fewer threads than connections, and the default threads: more than the
  // bound, which holds all the same.
  // One client (127.0.0.1) may hold them all here: the bound in all is tested.
  for (const std::string config :
       {"http_timeout: 3s\nhttp_threads: 4\nhttp_max_connections: 12\n"
        "http_max_connections_per_client: 12\n",
        "http_timeout: 3s\nhttp_max_connections: 12\nhttp_max_connections_per_client: 12\n"}) {
    SCOPED_TRACE(config);
    start(config);
    std::vector<std::unique_ptr<RawClient>> idle;
    for (int i = 0; i < 12; ++i) {
      idle.push_back(std::make_unique<RawClient>(m_agent->port()));
    }
    std::this_thread::sleep_for(300ms);
    const auto started = Clock::now();
    const auto refused = exchange(get("/healthz"), 2s);
    EXPECT_LT(Clock::now() - started, 1500ms);
    EXPECT_EQ(status_of(refused), 503) << refused;
    EXPECT_NE(refused.find("http_max_connections"), std::string::npos);
    // Idle connections time out (http_timeout); then the agent answers again.
    idle.clear();
    EXPECT_TRUE(wait_until([&] { return status_of(exchange(get("/healthz"), 2s)) == 200; }, 10s));
  }
}

// Silent connections to the agent, `count` in all, from `sources` (loopback
// addresses taken in turn), each reopened as soon as the agent closes it: a
// client that tries to hold every connection. Stops when destroyed, or after
// `most` whatever happens.
class ConnectionHog {
 public:
  ConnectionHog(int port, std::vector<std::string> sources, std::size_t count,
                std::chrono::seconds most = 120s)
      : m_port(port), m_sources(std::move(sources)), m_fds(count, -1) {
    for (std::size_t i = 0; i < m_fds.size(); ++i) {
      m_fds[i] = open(i);
    }
    m_thread = std::thread([this, most] { hold(Clock::now() + most); });
  }
  ~ConnectionHog() {
    m_stop = true;
    m_thread.join();
    for (const int fd : m_fds) {
      ::close(fd);
    }
  }
  ConnectionHog(const ConnectionHog&) = delete;
  ConnectionHog& operator=(const ConnectionHog&) = delete;

  // Connections the agent has closed and the hog opened again.
  std::size_t reopened() const { return m_reopened; }

 private:
  int open(std::size_t index) const {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    bind_source(fd, m_sources[index % m_sources.size()]);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(m_port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    // Under way (EINPROGRESS) or refused: either shows in poll().
    (void)::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    return fd;
  }

  // At most 500 reopenings a second: a hog that spins would measure the
  // machine's two cores rather than the agent's admission.
  void hold(Clock::time_point until) {
    constexpr std::size_t k_reopen_per_round = 10;
    std::vector<pollfd> polled(m_fds.size());
    while (!m_stop && Clock::now() < until) {
      for (std::size_t i = 0; i < m_fds.size(); ++i) {
        polled[i] = {m_fds[i], POLLIN, 0};
      }
      ::poll(polled.data(), polled.size(), 20);
      std::size_t reopened = 0;
      for (std::size_t i = 0; i < m_fds.size() && reopened < k_reopen_per_round; ++i) {
        if ((polled[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
          continue;
        }
        char discard[4096];
        const ssize_t got = ::recv(m_fds[i], discard, sizeof discard, MSG_DONTWAIT);
        if (got > 0 || (got < 0 && errno == EAGAIN)) {
          continue;  // the agent's 503, before it closes
        }
        ::close(m_fds[i]);
        m_fds[i] = open(i);
        ++reopened;
        ++m_reopened;
      }
      std::this_thread::sleep_for(10ms);
    }
  }

  int m_port;
  std::vector<std::string> m_sources;
  std::vector<int> m_fds;
  std::atomic<bool> m_stop{false};
  std::atomic<std::size_t> m_reopened{0};
  std::thread m_thread;
};

// One address holding as many connections as it can, reopening each the
// agent closes, takes a quarter (http_max_connections_per_client): another
// client is answered every time.
TEST_F(HttpLimits, OneAddressCannotTakeEveryConnection) {
  start("http_timeout: 60s\n");  // held connections are not closed for being silent meanwhile
  wait_for_report(*m_agent);
  ConnectionHog hog(m_agent->port(), {"127.0.0.2"}, 300);
  ASSERT_TRUE(wait_until([&] { return hog.reopened() >= 100; }, 20s))
      << "the agent turned nothing away";
  const auto deadline = Clock::now() + 60s;
  int asked = 0;
  int answered = 0;
  for (; asked < 80 && Clock::now() < deadline; ++asked) {
    const auto response = exchange(get("/healthz"), 2s);
    answered += status_of(response) == 200 ? 1 : 0;
  }
  EXPECT_EQ(answered, 80) << "of " << asked;
  const auto report = exchange(get("/api/v1/report"), 5s);
  EXPECT_EQ(status_of(report), 200) << report.substr(0, 300);
  RawClient another(m_agent->port(), 0, "127.0.0.2");
  another.send(get("/healthz"));
  const auto refused = another.read_all(2s);
  EXPECT_EQ(status_of(refused), 503) << refused;
  EXPECT_NE(refused.find("http_max_connections_per_client"), std::string::npos) << refused;
}

// Many addresses holding every connection they can between them leave the
// last few to clients that hold none, for /healthz and /metrics only.
TEST_F(HttpLimits, ManyAddressesLeaveHealthChecksTheirReserve) {
  start("http_timeout: 60s\n");
  wait_for_report(*m_agent);
  std::vector<std::string> sources;
  for (int host = 2; host <= 40; ++host) {
    sources.push_back("127.0.0." + std::to_string(host));
  }
  ConnectionHog hog(m_agent->port(), sources, 312);  // 8 each: more than the 256 in all
  ASSERT_TRUE(wait_until([&] { return hog.reopened() >= 100; }, 20s))
      << "the agent turned nothing away";
  const auto deadline = Clock::now() + 60s;
  int asked = 0;
  int answered = 0;
  for (; asked < 20 && Clock::now() < deadline; ++asked) {
    const auto health = exchange(get("/healthz"), 2s);
    const auto metrics = exchange(get("/metrics"), 2s);
    answered += status_of(health) == 200 && status_of(metrics) == 200 ? 1 : 0;
  }
  EXPECT_EQ(answered, 20) << "of " << asked;
  const auto report = exchange(get("/api/v1/report"), 2s);
  EXPECT_EQ(status_of(report), 503) << report;
  EXPECT_NE(report.find("only /healthz and /metrics"), std::string::npos) << report;
}

// Threads of a process (/proc/PID/task).
std::size_t thread_count(pid_t pid) {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    ++count;
  }
  return count;
}

// Serving threads start as connections come, up to http_threads, and end
// once idle: an idle agent does not keep 32 stacks and their malloc caches.
TEST_F(HttpLimits, ServingThreadsStartWithConnectionsAndEndWhenIdle) {
  start("http_timeout: 5s\nhttp_threads: 8\nhttp_idle_thread_life: 500ms\n");
  wait_for_report(*m_agent);
  // The scan's threads gone, and the serving threads that answered the wait.
  std::this_thread::sleep_for(1500ms);
  const std::size_t idle = thread_count(m_agent->pid());
  // Ten connections that send half a request hold a thread each: eight serve, two wait.
  std::vector<std::unique_ptr<RawClient>> holding;
  for (int i = 0; i < 10; ++i) {
    holding.push_back(std::make_unique<RawClient>(m_agent->port()));
    ASSERT_TRUE(holding.back()->send("GET /healthz HTTP/1.1\r\n"));
  }
  EXPECT_TRUE(wait_until([&] { return thread_count(m_agent->pid()) >= idle + 7; }, 5s))
      << idle << " threads idle, " << thread_count(m_agent->pid()) << " now";
  EXPECT_LE(thread_count(m_agent->pid()), idle + 7) << "more threads than http_threads";
  // Each finishes its request; the two waiting are served too.
  for (auto& client : holding) {
    client->send("Host: 127.0.0.1\r\nConnection: close\r\n\r\n");
  }
  for (auto& client : holding) {
    EXPECT_EQ(status_of(client->read_all(5s)), 200);
  }
  holding.clear();
  // Idle past http_idle_thread_life: back to one serving thread.
  EXPECT_TRUE(wait_until([&] { return thread_count(m_agent->pid()) <= idle; }, 5s))
      << idle << " threads idle before, " << thread_count(m_agent->pid()) << " now";
  EXPECT_EQ(status_of(exchange(get("/healthz"))), 200);
}

TEST_F(HttpLimits, ForeignHostNamesAndCrossSiteScansAreRefused) {
  start("http_allowed_hosts: [agent.fleet.example]\n");
  const std::string port = std::to_string(m_agent->port());
  // DNS rebinding: a name the agent does not know, pointing at loopback.
  const auto rebound = exchange(get("/api/v1/report", "attacker.example:" + port));
  EXPECT_EQ(status_of(rebound), 421) << rebound;
  EXPECT_NE(rebound.find("does not answer for host 'attacker.example:" + port + "'"),
            std::string::npos);
  for (const std::string& host :
       std::vector<std::string>{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port,
                                "agent.fleet.example", "AGENT.fleet.example:" + port}) {
    EXPECT_NE(status_of(exchange(get("/healthz", host))), 421) << host;
  }
  // A form POST from another site carries no custom header.
  const auto forged = exchange(
      "POST /api/v1/scan HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
      "application/x-www-form-urlencoded\r\nContent-Length: 3\r\nConnection: close\r\n\r\na=b");
  EXPECT_EQ(status_of(forged), 403) << forged;
  EXPECT_NE(forged.find("X-Requested-By"), std::string::npos);
  // HTTP/1.1: no Content-Length and no Transfer-Encoding is an empty body,
  // answered at once rather than after a read timeout.
  const auto started = Clock::now();
  const auto empty = exchange(
      "POST /api/v1/scan HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Requested-By: t\r\n"
      "Connection: close\r\n\r\n");
  EXPECT_EQ(status_of(empty), 202) << empty;
  EXPECT_LT(Clock::now() - started, 2s);
}

// One answer taken off the front of `bytes`: its head (status line and
// headers) and its body of Content-Length bytes; {"", ""} when incomplete.
std::pair<std::string, std::string> next_answer(std::string& bytes, bool head_only = false) {
  const auto end = bytes.find("\r\n\r\n");
  if (end == std::string::npos) {
    return {};
  }
  std::string head = bytes.substr(0, end + 4);
  const auto at = head.find("Content-Length: ");
  if (at == std::string::npos) {
    return {};
  }
  const std::size_t length = std::stoul(head.substr(at + 16));
  const std::size_t body_length = head_only ? 0 : length;
  if (bytes.size() < end + 4 + body_length) {
    return {};
  }
  std::string body = bytes.substr(end + 4, body_length);
  bytes.erase(0, end + 4 + body_length);
  return {head, body};
}

// A gzip stream inflated; "" (and a test failure) when it is not one.
std::string gunzip(const std::string& compressed) {
  z_stream stream{};
  EXPECT_EQ(inflateInit2(&stream, 16 + MAX_WBITS), Z_OK);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  int result = Z_OK;
  while (result == Z_OK) {
    char chunk[16384];
    stream.next_out = reinterpret_cast<Bytef*>(chunk);
    stream.avail_out = sizeof chunk;
    result = inflate(&stream, Z_NO_FLUSH);
    out.append(chunk, sizeof chunk - stream.avail_out);
  }
  inflateEnd(&stream);
  EXPECT_EQ(result, Z_STREAM_END) << "not a whole gzip stream";
  return out;
}

std::string request(const std::string& method, const std::string& path,
                    const std::string& extra_headers = "") {
  return method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers + "\r\n";
}

// The report and the report's series of /metrics are shared by every
// request and written to the socket without a copy, unless the client
// accepts a compressed answer: both ways give the same bytes, whole, on a
// keep-alive connection.
TEST_F(HttpLimits, SharedAnswersAreWholeWithAndWithoutCompression) {
  start("http_timeout: 5s\n");
  const auto first = wait_for_report(*m_agent);

  RawClient client(m_agent->port());
  ASSERT_TRUE(client.connected());
  // Pipelined on one connection, answered in order: the report twice, a
  // HEAD of it, /metrics, and both again gzipped.
  ASSERT_TRUE(client.send(
      request("GET", "/api/v1/report") + request("GET", "/api/v1/report") +
      request("HEAD", "/api/v1/report") + request("GET", "/metrics") +
      request("GET", "/metrics", "Accept-Encoding: gzip\r\n") +
      request("GET", "/api/v1/report", "Accept-Encoding: gzip\r\nConnection: close\r\n")));
  std::string bytes = client.read_all(10s);
  const auto [report_head, report] = next_answer(bytes);
  EXPECT_EQ(status_of(report_head), 200) << report_head;
  EXPECT_EQ(report_head.find("Content-Encoding"), std::string::npos) << report_head;
  EXPECT_EQ(Json::parse(report, nullptr, false).value("scan_id", 0), first.value("scan_id", 0));
  const auto [again_head, again] = next_answer(bytes);
  EXPECT_EQ(again, report);
  const auto [head_of_head, no_body] = next_answer(bytes, true);
  EXPECT_EQ(status_of(head_of_head), 200) << head_of_head;
  EXPECT_NE(head_of_head.find("Content-Length: " + std::to_string(report.size()) + "\r\n"),
            std::string::npos)
      << head_of_head;
  const auto [metrics_head, metrics] = next_answer(bytes);
  EXPECT_EQ(status_of(metrics_head), 200) << metrics_head;
  // The report's series, then the agent's own, then nothing more.
  const auto series = metrics.find("envcontract_env_compliant{");
  const auto own = metrics.find("envcontract_scans_total ");
  EXPECT_NE(series, std::string::npos) << metrics;
  EXPECT_NE(own, std::string::npos) << metrics;
  EXPECT_LT(series, own);
  EXPECT_TRUE(metrics.ends_with("\n"));
  const auto [gzip_metrics_head, gzip_metrics] = next_answer(bytes);
  EXPECT_NE(gzip_metrics_head.find("Content-Encoding: gzip"), std::string::npos)
      << gzip_metrics_head;
  // The same series; the agent's /proc figures may have been read again.
  const auto inflated_metrics = gunzip(gzip_metrics);
  EXPECT_EQ(inflated_metrics.substr(0, own), metrics.substr(0, own));
  EXPECT_TRUE(inflated_metrics.ends_with("\n"));
  const auto [gzip_head, gzipped] = next_answer(bytes);
  EXPECT_NE(gzip_head.find("Content-Encoding: gzip"), std::string::npos) << gzip_head;
  EXPECT_LT(gzipped.size(), report.size());
  EXPECT_EQ(gunzip(gzipped), report);
  EXPECT_TRUE(bytes.empty()) << bytes.size() << " bytes more than the answers";
  EXPECT_TRUE(client.closed_by_server());

  // The agent's own series are kept while its figures stay: a scan changes them.
  EXPECT_NE(metrics.find("envcontract_scans_total 1\n"), std::string::npos) << metrics;
  const auto asked = http_post(m_agent->url(), "/api/v1/scan", "", {{"X-Requested-By", "test"}});
  ASSERT_EQ(asked.status, 202) << asked.body;
  wait_for_scan_after(*m_agent, first.value("scan_id", 0));
  std::string after = exchange(request("GET", "/metrics", "Connection: close\r\n"));
  const auto [after_head, after_metrics] = next_answer(after);
  EXPECT_EQ(status_of(after_head), 200) << after_head;
  EXPECT_NE(after_metrics.find("envcontract_scans_total 2\n"), std::string::npos) << after_metrics;
}

// A client that reads slowly fills the socket: the agent waits for room and
// goes on where it stopped, every answer whole.
TEST_F(HttpLimits, ASlowReaderGetsEveryAnswerWhole) {
  start("http_timeout: 10s\n", true);
  wait_for_report(*m_agent);
  const auto expected = http_get(m_agent->url(), "/api/v1/report");
  ASSERT_EQ(expected.status, 200);
  ASSERT_GT(expected.body.size(), 45'000U) << "too small a report to fill the socket";
  // 64 KiB: no receive-buffer tuning on the client's side either.
  RawClient client(m_agent->port(), 65536);
  ASSERT_TRUE(client.connected());
  std::string pipelined;
  // As many as one connection serves (100): 4.5 MB and more, past what the
  // kernel buffers for the agent's socket (tcp_wmem's most, 4 MiB here).
  constexpr int k_requests = 99;
  for (int i = 0; i + 1 < k_requests; ++i) {
    pipelined += request("GET", "/api/v1/report");
  }
  pipelined += request("GET", "/api/v1/report", "Connection: close\r\n");
  ASSERT_TRUE(client.send(pipelined));
  // Long enough for the agent to find the socket full and wait on it.
  std::this_thread::sleep_for(300ms);
  std::string bytes = client.read_all(20s);
  for (int i = 0; i < k_requests; ++i) {
    const auto [head, body] = next_answer(bytes);
    ASSERT_EQ(status_of(head), 200) << "answer " << i << ": " << head;
    ASSERT_EQ(body, expected.body) << "answer " << i;
  }
  EXPECT_TRUE(bytes.empty());
}

// httplib writes an answer's head and its body apart; the agent sends them
// as one: with TCP_NODELAY each send is a segment and a wake-up of the
// client (/metrics was three, and served a fifth fewer requests a second).
TEST_F(HttpLimits, AnAnswerLeavesInOneSegment) {
  start("http_timeout: 5s\n");
  for (const auto& [ask, status] : std::vector<std::pair<std::string, int>>{
           {get("/healthz"), 200}, {get("/api/v1/no-such-thing"), 404}}) {
    RawClient client(m_agent->port());
    ASSERT_TRUE(client.connected());
    ASSERT_TRUE(client.send(ask));
    std::string bytes = client.read_all(5s);
    const auto [head, body] = next_answer(bytes);
    EXPECT_EQ(status_of(head), status) << head;
    EXPECT_FALSE(body.empty()) << head;
    EXPECT_TRUE(client.closed_by_server());
    EXPECT_EQ(client.data_segments_received(), 1U) << ask;
  }
}

// A client that says "Expect: 100-continue" (curl does for a body over
// 1 KB) waits for the interim answer before it sends the body. The agent
// reads no body: it gives the final answer at once, with no interim one,
// which tells the client not to send the body (RFC 9110, 10.1.1), and closes.
TEST_F(HttpLimits, AClientExpectingContinueIsAnsweredWithoutSendingItsBody) {
  start("http_timeout: 5s\n");
  RawClient client(m_agent->port());
  ASSERT_TRUE(client.connected());
  const auto started = Clock::now();
  ASSERT_TRUE(client.send(
      "POST /api/v1/scan HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Requested-By: t\r\n"
      "Content-Type: application/json\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"));
  std::string bytes = client.read_all(10s);
  EXPECT_LT(Clock::now() - started, 3s) << "the agent waited for the body";
  EXPECT_EQ(bytes.find("100 Continue"), std::string::npos) << bytes;
  const auto [head, body] = next_answer(bytes);
  EXPECT_EQ(status_of(head), 202) << head;
  EXPECT_NE(body.find("/api/v1/scans/"), std::string::npos) << body;
  EXPECT_TRUE(client.closed_by_server());
}

TEST_F(HttpLimits, ControlCharactersFromRequestsReachTheLogEscaped) {
  start("http_timeout: 5s\n");
  const auto answer = exchange(get("/api/v1/%1b%5b31mFAKE%0aERROR%20forged"));
  EXPECT_EQ(status_of(answer), 404);
  EXPECT_TRUE(wait_until(
      [&] { return m_agent->log().find("\\x1b[31mFAKE\\nERROR") != std::string::npos; }, 5s))
      << m_agent->log();
  EXPECT_EQ(m_agent->log().find('\x1b'), std::string::npos);
}

}  // namespace
}  // namespace envcontract
