#pragma once

// cpp-httplib's server under a connection loop of our own: httplib 0.11.4
// parses and routes requests, but bounds neither a request's time nor its
// bytes, listens with a backlog of 5 and serves each connection on one pool
// thread for its whole life, so that a few slow or idle clients hold every
// thread. BoundedServer replaces its connection loop (process_and_close_socket,
// a private virtual of 0.11: the one place the agent leans on httplib's
// internals, and this file is where it does) and admits each connection as
// it is accepted (connection_admission.hpp): a bound in all, per client
// address, a reserve for health checks. Only this file's translation unit
// and the HTTP side's routes (http_api.cpp) include it.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>

#include "daemon/connection_admission.hpp"

namespace envcontract::daemon {

struct ConnectionLimits {
  std::chrono::milliseconds request_timeout{10'000};  // a whole request, first byte to last
  std::chrono::milliseconds keep_alive_idle{5'000};
  std::size_t keep_alive_requests = 100;
  std::size_t request_bytes = 128 * 1024;  // request line, headers and body
};

// What one request ended as, for the connection loop: it closes the
// connection after an error or an unread body.
struct RequestOutcome {
  int status = 0;
  bool close_after = false;      // a body was left unread on the connection
  std::size_t header_count = 0;  // as the client sent them
};

// The request being served on the calling thread (a serving thread serves
// one request at a time; httplib's handlers run on it). Outside a request
// the outcome is a scratch value and the stream functions do nothing.
RequestOutcome& current_request_outcome();
// The connection was taken in the health checks' reserve: it may ask only
// /healthz and /metrics.
bool serving_health_checks_only();
// The answer is gathered and sent in one piece once the handler returns
// (every route answers without reading more of the request).
void gather_current_answer();
// The answer may take this long from now, past the request's own deadline
// (a gate that waits for a scan).
void answer_current_request_within(std::chrono::milliseconds time);
// The request sent more bytes than ConnectionLimits::request_bytes, or
// took longer than its request_timeout.
bool current_request_over_budget();
bool current_request_past_deadline();

class ConnectionQueue;
class ConnectionStream;
struct Connection;

// httplib's server with our connection loop (process_and_close_socket is
// private but virtual in 0.11.4: overriding it is how a subclass replaces
// the loop; process_request, which parses and routes one request, is
// protected for that purpose). Its loop serves the connections that
// ConnectionQueue admits. `override` holds the signature; what httplib
// does around it (the accepting thread runs each task queue job, whose
// only work is this call) is not in a signature: another release is read
// again before it is built against, so the build stops here rather than
// the bounds failing at run time.
static_assert(std::string_view(CPPHTTPLIB_VERSION).starts_with("0.11."),
              "BoundedServer replaces cpp-httplib 0.11's connection loop: check "
              "Server::process_and_close_socket and ThreadPool's use of it in this release "
              "(tests: HttpLimits.*), then widen this check");
class BoundedServer final : public httplib::Server {
 public:
  ConnectionLimits limits;

  // Serves connections through a queue of our own (httplib's
  // new_task_queue): up to `threads` serving threads, started as
  // connections come and ended after `idle_thread_life` with nothing to
  // serve (one always stays), connections admitted within `bounds`.
  void serve_through_queue(unsigned threads, ConnectionBounds bounds,
                           std::chrono::milliseconds idle_thread_life);
  // httplib 0.11.4 listens with a backlog of 5: clients reconnecting at once
  // (keep-alive connections closed for fairness) overflowed it, and the
  // kernel then dropped their handshakes for tens of seconds. Listening
  // again on the bound socket only changes its backlog.
  void set_backlog(int backlog);
  // Closes the socket of a server bound but never served, whose stop()
  // closes nothing (httplib's closes a running server's only).
  void close_listener();
  // Why the server cannot be trusted to be alive, or "": it stopped
  // accepting, or a connection has waited longer than `bound` for a thread
  // (every thread is stuck). "" before it begins to listen.
  std::string liveness_problem(std::chrono::milliseconds bound) const;

 private:
  // httplib calls this only from the job that ConnectionQueue::enqueue runs
  // on the accepting thread: it hands the socket over (see there).
  bool process_and_close_socket(socket_t sock) override;
  void serve_connection(const Connection& connection);
  static void turn_away(const Connection& connection);
  bool wait_for_request(ConnectionStream& stream, bool first, bool health_only);
  // Connections accepted wait for a thread: one served gives its thread up
  // early.
  bool others_wait() const;

  std::atomic<ConnectionQueue*> m_queue{nullptr};
  // Guards m_queue against its deletion for liveness_problem().
  mutable std::mutex m_queue_mutex;
  bool m_listened = false;  // the listen loop has started (m_queue_mutex)
};

}  // namespace envcontract::daemon
