#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.hpp"
#include "daemon/agent.hpp"

namespace envcontract::daemon {

// A request as a handler sees it: decoded path and query parameters, the
// headers handlers read, and the peer's address. The server has already
// bounded its size and time and checked its Host header.
struct PlainRequest {
  std::string method;  // HEAD is answered as GET
  std::string path;
  std::multimap<std::string, std::string> params;
  std::vector<std::pair<std::string, std::string>> headers = {};  // as sent
  std::string remote_addr = {};

  // The first value of a parameter or a header (named in any case), or "".
  std::string param(const std::string& name) const;
  std::string header(std::string_view name) const;
};

struct PlainResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Texts every request shares (the report, /metrics' series), sent after
  // `body` without being copied into each answer.
  std::vector<std::shared_ptr<const std::string>> shared;

  // The whole body: `body` and then each shared text.
  std::string text() const;
};

// A JSON answer (the body indented, as every answer of the agent's), and an
// error answer: {"error": message}.
PlainResponse json_answer(int status, const report::Json& body);
PlainResponse error_answer(int status, const std::string& message);

using RequestHandler = std::function<PlainResponse(const PlainRequest&)>;

// How the HTTP side serves: threads, connection bound, time-outs and which
// Host headers it answers (docs/agent.md, http_*).
struct HttpSettings {
  unsigned threads = 4;
  std::size_t max_connections = 256;
  // From one peer address, so that one client cannot take them all (0: a
  // quarter of max_connections). The last 8 (a quarter when that is fewer) are kept
  // for /healthz and /metrics from clients that hold no other.
  std::size_t max_connections_per_client = 0;
  std::chrono::milliseconds timeout{10'000};
  // A serving thread with nothing to serve this long ends (one always stays).
  std::chrono::milliseconds idle_thread_life{30'000};
  std::string listen;  // HOST:PORT, whose host is always answered
  std::vector<std::string> allowed_hosts;
  // How errors name the settings above to whoever must change them.
  std::string allowed_hosts_setting = "the agent's http_allowed_hosts (or --allowed-host)";
  std::string timeout_setting = "the agent's http_timeout";

  static HttpSettings of(const AgentConfig& config);
};

// The agent's HTTP side (docs/api.md): JSON API, Prometheus metrics and the
// dashboard, answered from the agent's snapshot, served by BoundedServer
// (bounded_http_server.hpp).
class HttpServer {
 public:
  HttpServer(Agent& agent, std::string version);
  // Serves `handler`'s routes instead of the agent's, with the same
  // connection handling, limits and Host checks.
  HttpServer(const HttpSettings& settings, RequestHandler handler);
  // Stops serving and joins the thread of start().
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket (port 0: any free port). Returns the port, or
  // why it could not bind.
  common::Result<int> bind(const ListenAddress& address);
  // Serves on a thread of its own, which stop() (or the destructor) ends
  // and the destructor joins; call after bind(). Returns the port served,
  // or why no thread could start.
  common::Result<int> start();
  // Serves on the calling thread until stop(); call after bind().
  void serve();
  // Stops serving, whether serve() has begun or not (it then returns at
  // once), and closes the listening socket. Any thread, any number of times.
  void stop();
  // Why the HTTP side cannot be trusted to be alive, or "" when it is: it
  // stopped accepting, or connections wait while no thread takes any for
  // several http_timeouts. Judged inside the process, never by a request
  // that would queue behind a client's connections.
  std::string liveness_problem() const;

 private:
  HttpServer(const HttpSettings& settings, Agent* agent, std::string version,
             RequestHandler handler);
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace envcontract::daemon
