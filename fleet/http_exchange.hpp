#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

// One HTTP/1.1 request and its answer, bounded whatever the server does:
// the client of fleetctl, the agent's fleet view and CI gate, and the
// agent's webhooks. Written on Boost.Asio and Boost.Beast's parser, so that
// no client loads cpp-httplib (whose Debian build initialises OpenSSL when it
// loads: 3.7 MB resident in an idle agent). Boost stays in the .cpp.
namespace envcontract::fleet {

// Cuts exchanges in flight from another thread: the agent's stop ending a
// webhook's delivery. Once cancelled it stays so: an exchange begun later
// ends at once. Thread-safe.
class ExchangeCancellation {
 public:
  void cancel();
  bool cancelled() const;

  // For http_exchange: while an exchange runs, cancel() calls `cut` (on the
  // cancelling thread; it must only post to the exchange's own loop). False,
  // and `cut` not kept, when already cancelled. end() forgets it: after it
  // returns, `cut` is never called again.
  bool begin(std::function<void()> cut);
  void end();

 private:
  mutable std::mutex m_mutex;
  bool m_cancelled = false;
  std::function<void()> m_cut;
};

struct ExchangeRequest {
  std::string host;  // a name or an address; an IPv6 address without brackets
  int port = 80;
  std::string method = "GET";
  std::string target = "/";  // sent as is: "/api/v1/report?env=%2Fopt"
  // Sent besides Host, Connection: close and, when there is a body or the
  // method is POST or PUT, Content-Length. No Accept-Encoding is sent: an
  // answer is never unpacked, so its bound is the bytes that came.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

struct ExchangeBounds {
  // The whole exchange: looking up the name, connecting, sending, and
  // reading the answer's head and body. A server that drips bytes is cut
  // here. (The name is looked up by the C library, which no timer can cut:
  // resolv.conf's timeout and attempts bound it; the time it took counts.)
  std::chrono::milliseconds deadline{10'000};
  // The longest the server may send nothing once the request is sent (0, or
  // not shorter than the deadline: no bound but the deadline).
  std::chrono::milliseconds silence{0};
  std::size_t max_body_bytes = std::size_t{64} << 20;  // chunked or not, as sent
  std::size_t max_head_bytes = std::size_t{64} << 10;  // endless header lines are cut
};

// Why an exchange has no usable answer.
enum class ExchangeFailure {
  none,             // answered: status and whole body
  bad_request,      // the request itself cannot be sent (a line break in a header)
  unresolved,       // the host name does not resolve
  not_connected,    // refused, unreachable: no connection was made
  timed_out,        // the deadline passed (connecting, sending or reading)
  silent,           // nothing came for the silence bound
  broken,           // the connection failed or closed before a whole answer
  not_http,         // what came is not an HTTP/1.x answer (a TLS port, another protocol)
  head_too_large,   // the answer's head passed max_head_bytes
  body_past_bound,  // the head was read (status set), its body passed max_body_bytes
  cancelled,        // an ExchangeCancellation cut it
};

struct ExchangeResult {
  // The answer's status; 0 when there is no HTTP answer. Set for `none` and
  // for `body_past_bound` (the head was read, the body not kept).
  int status = 0;
  std::string body;  // the whole body, as sent, for `none`; empty otherwise
  ExchangeFailure failure = ExchangeFailure::none;
  std::string error;  // why there is no usable answer, for people; "" for `none`
  bool body_cut() const { return failure == ExchangeFailure::body_past_bound; }
};

// Sends `request` to request.host:request.port and reads the answer within
// `bounds`, on an event loop of its own on the calling thread (no thread is
// started). Redirects are answers: never followed. Never throws for what a
// server or the network does. `cancellation` may be null.
ExchangeResult http_exchange(const ExchangeRequest& request, const ExchangeBounds& bounds,
                             ExchangeCancellation* cancellation = nullptr);

// "1.5 s": how bounds are named in messages.
std::string seconds_text(std::chrono::milliseconds duration);

}  // namespace envcontract::fleet
