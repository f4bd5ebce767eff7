#pragma once

// The agent's HTTP/1.1 server: its own listening socket, accepting thread
// and connection loop, with Boost.Beast's parser reading each request's head
// (daemon/http_wire.hpp). Everything a request may cost is bounded: a whole
// request's time and bytes, the connections in all and per client address
// (connection_admission.hpp), with a reserve for health checks; serving
// threads start as connections come and end when idle. Routes see a parsed
// request and give back a PlainResponse; they never read a body (a
// connection whose request has one is closed after its answer).
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/result.hpp"
#include "daemon/connection_admission.hpp"
#include "daemon/http_api.hpp"
#include "daemon/http_wire.hpp"

namespace envcontract::daemon {

struct ConnectionLimits {
  std::chrono::milliseconds request_timeout{10'000};  // a whole request, first byte to last
  std::chrono::milliseconds keep_alive_idle{5'000};
  std::size_t keep_alive_requests = 100;
  std::size_t request_bytes = 128 * 1024;  // request line and headers
};

// A request as the connection loop hands it to the routes.
struct ServedRequest {
  RequestHead head;
  std::string remote_addr;
  // The connection was taken in the health checks' reserve: it may ask only
  // /healthz and /metrics.
  bool health_checks_only = false;
  // Set by a route whose answer may take this long from its return, past
  // the request's own deadline (a gate that waited for a scan).
  std::optional<std::chrono::milliseconds> answer_within;
};

// A request that could not be read to its head's end, for its error answer.
enum class RequestFailure {
  malformed,        // 400
  too_large,        // 431: past ConnectionLimits::request_bytes
  target_too_long,  // 414
  past_deadline,    // 408: past ConnectionLimits::request_timeout
};

struct ServerSettings {
  ConnectionLimits limits;
  unsigned threads = 4;  // serving threads at most
  ConnectionBounds bounds;
  std::chrono::milliseconds idle_thread_life{30'000};  // then a serving thread beyond one ends
};

class ConnectionQueue;

class BoundedServer {
 public:
  using Handler = std::function<PlainResponse(ServedRequest&)>;
  using FailureHandler = std::function<PlainResponse(RequestFailure)>;

  BoundedServer(ServerSettings settings, Handler handler, FailureHandler failure);
  // Stops and closes the listening socket.
  ~BoundedServer();
  BoundedServer(const BoundedServer&) = delete;
  BoundedServer& operator=(const BoundedServer&) = delete;

  // Binds and listens (port 0: any free port) with room for `backlog`
  // connections waiting to be accepted; the port bound, or why not.
  common::Result<int> bind(const std::string& host, int port, int backlog);
  // Accepts and serves on the calling thread until stop(); returns at once
  // when stop() came first.
  void serve();
  // Any thread, any number of times, before or during serve().
  void stop();
  // Why the server cannot be trusted to be alive, or "": it stopped
  // accepting, or a connection has waited longer than `bound` for a thread
  // (every thread is stuck). "" before it begins to serve.
  std::string liveness_problem(std::chrono::milliseconds bound) const;

  // A connection accepted: its socket, its peer's address, its admission.
  struct Connection;

 private:
  class Stream;
  void accept_loop();
  void serve_connection(const Connection& connection);
  static void turn_away(const Connection& connection);
  bool wait_for_request(Stream& stream, bool first, bool health_only);
  // Connections accepted wait for a thread: one served gives its thread up early.
  bool others_wait() const;
  // Answers one request read whole, or a failure; false when the
  // connection must end after it.
  bool answer(Stream& stream, ServedRequest& request, bool last);
  void close_listener();

  const ServerSettings m_settings;
  const Handler m_handler;
  const FailureHandler m_failure;
  int m_listener = -1;
  int m_wake = -1;  // an eventfd: stop() wakes the accepting thread
  std::atomic<bool> m_stopping{false};
  std::atomic<bool> m_accepting{false};
  std::unique_ptr<ConnectionQueue> m_queue;
  // Guards the listener's closing and serve()'s start against stop().
  mutable std::mutex m_mutex;
  bool m_served = false;  // serve() has begun
};

}  // namespace envcontract::daemon
