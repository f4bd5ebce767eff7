#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

// The pieces tests' own HTTP peers are made of (an agent that answers what
// a hostile host could, a Prometheus): real TCP on 127.0.0.1, no mocks.
namespace envcontract::testing {

// A socket listening on 127.0.0.1 (a port of the kernel's choosing) and a
// thread that accepts its connections one after another and hands each to
// `serve`, which owns it until it returns; the connection is closed after.
class LoopbackListener {
 public:
  explicit LoopbackListener(std::function<void(int client)> serve);
  ~LoopbackListener();  // stops accepting, waits for the connection being served
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;

  int port() const { return m_port; }
  // "127.0.0.1:PORT".
  std::string address() const;
  bool stopping() const { return m_stopping; }

 private:
  void accept_loop();

  std::function<void(int)> m_serve;
  int m_listener = -1;
  int m_port = 0;
  std::atomic<bool> m_stopping{false};
  std::thread m_thread;
};

// A LoopbackListener that serves each connection on a thread of its own
// (requests in flight at once, scripts that wait). Destroyed, it stops
// accepting, calls `on_stop` (which wakes whatever the connections wait on),
// then joins them: declare it last in its owner, so that it goes first.
class ThreadedLoopbackListener {
 public:
  ThreadedLoopbackListener(std::function<void(int client)> serve, std::function<void()> on_stop);
  ~ThreadedLoopbackListener();
  ThreadedLoopbackListener(const ThreadedLoopbackListener&) = delete;
  ThreadedLoopbackListener& operator=(const ThreadedLoopbackListener&) = delete;

  int port() const { return m_listener->port(); }
  std::string address() const { return m_listener->address(); }

 private:
  std::function<void(int)> m_serve;
  std::function<void()> m_on_stop;
  std::vector<std::thread> m_clients;  // the listener's thread's alone, until it is gone
  std::optional<LoopbackListener> m_listener;
};

// An HTTP server on 127.0.0.1 that answers every request with one status
// and body, set by the test, and keeps the heads of the requests it read.
class AnsweringServer {
 public:
  AnsweringServer(int status, std::string body);

  // "127.0.0.1:PORT".
  std::string address() const { return m_listener.address(); }
  void answer(int status, std::string body);
  // Each request's head up to its blank line, in the order they came.
  std::vector<std::string> heads() const;
  // Their request lines ("GET /api/v1/report HTTP/1.1").
  std::vector<std::string> request_lines() const;

 private:
  void respond(int client);

  mutable std::mutex m_mutex;
  int m_status;
  std::string m_body;
  std::vector<std::string> m_heads;
  // Last: its thread serves until it is destroyed, before what it uses.
  LoopbackListener m_listener{[this](int client) { respond(client); }};
};

// The head of the request a client sent on `client`, up to its blank line
// (at most 64 KiB, each read waiting at most 2 s), or nullopt when the
// client closed or went quiet first.
std::optional<std::string> read_request_head(int client);

// Writes all of `bytes` (MSG_NOSIGNAL); false once the peer has gone.
bool send_all(int client, std::string_view bytes);

// A whole answer: "HTTP/1.1 STATUS Answer", a JSON content type,
// `extra_headers` ("Name: value\r\n" each), the length, Connection: close,
// then `body`.
std::string http_answer(int status, const std::string& body, const std::string& extra_headers = "");

// A socket bound to 127.0.0.1 on a port of the kernel's choosing, and that
// port; the caller closes it (free_loopback_port() closes it at once).
std::pair<int, int> bound_loopback_socket();

// "127.0.0.1:PORT" of a port nothing listens on (bound, then closed).
std::string address_nobody_listens_on();

}  // namespace envcontract::testing
