#include "fleet/http_exchange.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

namespace envcontract::fleet {

void ExchangeCancellation::cancel() {
  std::lock_guard lock(m_mutex);
  m_cancelled = true;
  if (m_cut) {
    m_cut();
  }
}

bool ExchangeCancellation::cancelled() const {
  std::lock_guard lock(m_mutex);
  return m_cancelled;
}

bool ExchangeCancellation::begin(std::function<void()> cut) {
  std::lock_guard lock(m_mutex);
  if (m_cancelled) {
    return false;
  }
  m_cut = std::move(cut);
  return true;
}

void ExchangeCancellation::end() {
  std::lock_guard lock(m_mutex);
  m_cut = nullptr;
}

std::string seconds_text(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(duration.count()) / 1000.0);
  return text;
}

namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using ErrorCode = boost::system::error_code;

// What one read asks of the socket: the silence bound restarts at each.
constexpr std::size_t k_read_size = 16 << 10;
constexpr std::string_view k_cancelled = "cancelled before the answer was complete";

ExchangeResult failed(ExchangeFailure failure, std::string error) {
  ExchangeResult result;
  result.failure = failure;
  result.error = std::move(error);
  return result;
}

// "64 MiB", "48 KiB", "100 bytes": the bound as a person reads it.
std::string size_text(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 20)) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  if (bytes >= (std::size_t{1} << 10)) {
    return std::to_string(bytes >> 10) + " KiB";
  }
  return std::to_string(bytes) + " bytes";
}

// A line break or NUL in any of them would let a value end the line and
// write headers (or a request) of its own.
std::optional<std::string> malformed(const ExchangeRequest& request) {
  static constexpr std::string_view breaks("\r\n\0", 3);
  const auto has = [](std::string_view text, std::string_view bytes) {
    return text.find_first_of(bytes) != std::string_view::npos;
  };
  if (request.method.empty() || has(request.method, " \t\r\n") || request.target.empty() ||
      has(request.target, std::string_view(" \t\r\n\0", 5))) {
    return "the request line '" + request.method + " " + request.target +
           "' holds a blank or a line break: fix the method or path";
  }
  for (const auto& [name, value] : request.headers) {
    if (name.empty() || has(name, std::string_view(" \t:\r\n\0", 6)) || has(value, breaks)) {
      return "the request header '" + name + "' holds a line break or is no header name";
    }
  }
  if (request.port < 1 || request.port > 65535) {
    return "port " + std::to_string(request.port) + " is not a TCP port (1-65535)";
  }
  return std::nullopt;
}

// Host: as RFC 9112 writes it: an IPv6 address bracketed, the port unless 80.
std::string host_header(const ExchangeRequest& request) {
  const bool ipv6 = request.host.find(':') != std::string::npos;
  const std::string host = ipv6 ? "[" + request.host + "]" : request.host;
  return request.port == 80 ? host : host + ":" + std::to_string(request.port);
}

std::string request_text(const ExchangeRequest& request) {
  std::string text = request.method + " " + request.target + " HTTP/1.1\r\n";
  text += "Host: " + host_header(request) + "\r\n";
  for (const auto& [name, value] : request.headers) {
    text += name + ": " + value + "\r\n";
  }
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
    text += "Content-Length: " + std::to_string(request.body.size()) + "\r\n";
  }
  // One exchange per connection: nothing is kept between them.
  text += "Connection: close\r\n\r\n";
  return text + request.body;
}

struct Resolved {
  std::vector<tcp::endpoint> endpoints;
  std::string error;  // set when the name does not resolve
};

// The C library's lookup on the calling thread: Asio's asynchronous one
// would start a thread of its own for each exchange, and could not cut a
// lookup either (its destructor joins that thread). The C library's message
// tells a typo or a DNS outage from an agent that is down.
Resolved resolve(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int code = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  Resolved resolved;
  if (code != 0) {
    resolved.error = "cannot resolve the host name '" + host + "': " + ::gai_strerror(code) +
                     " (a typo, or DNS is unreachable)";
    return resolved;
  }
  for (const addrinfo* at = found; at != nullptr; at = at->ai_next) {
    tcp::endpoint endpoint;
    if (at->ai_addrlen <= endpoint.capacity()) {
      std::memcpy(endpoint.data(), at->ai_addr, at->ai_addrlen);
      endpoint.resize(at->ai_addrlen);
      resolved.endpoints.push_back(endpoint);
    }
  }
  ::freeaddrinfo(found);
  return resolved;
}

// One exchange on its own event loop. Every handler runs on the thread in
// run(); the only way in from another thread is the cancellation, which
// posts to the loop. Once finished, later completions (aborted reads, timers
// that fired in the same turn) find m_finished and do nothing.
class Exchange {
 public:
  Exchange(const ExchangeRequest& request, const ExchangeBounds& bounds)
      : m_request(request), m_bounds(bounds), m_text(request_text(request)) {
    new_parser();
  }

  ExchangeResult run(std::vector<tcp::endpoint> endpoints, Clock::time_point deadline,
                     ExchangeCancellation* cancellation) {
    if (cancellation != nullptr &&
        !cancellation->begin([this] { asio::post(m_io, [this] { on_cancel(); }); })) {
      return failed(ExchangeFailure::cancelled, std::string(k_cancelled));
    }
    // Forgotten before the loop it posts to goes, whichever way run() ends.
    const CancellationScope scope{cancellation};
    m_deadline.expires_at(deadline);
    m_deadline.async_wait([this](ErrorCode error) {
      if (!error) {
        on_deadline();
      }
    });
    m_endpoints = std::move(endpoints);
    asio::async_connect(m_socket, m_endpoints,
                        [this](ErrorCode error, const tcp::endpoint&) { on_connected(error); });
    m_io.run();
    return std::move(m_result);
  }

 private:
  enum class Phase { connecting, sending, reading };

  struct CancellationScope {
    ExchangeCancellation* cancellation;
    ~CancellationScope() {
      if (cancellation != nullptr) {
        cancellation->end();
      }
    }
  };

  void on_connected(ErrorCode error) {
    if (m_finished) {
      return;
    }
    if (error) {
      fail(ExchangeFailure::not_connected, "cannot connect to " + m_request.host + " port " +
                                               std::to_string(m_request.port) + ": " +
                                               error.message());
      return;
    }
    m_phase = Phase::sending;
    asio::async_write(m_socket, asio::buffer(m_text),
                      [this](ErrorCode written, std::size_t) { on_sent(written); });
  }

  void on_sent(ErrorCode error) {
    if (m_finished) {
      return;
    }
    if (error) {
      fail(ExchangeFailure::broken,
           "the connection broke while sending the request (" + error.message() + ")");
      return;
    }
    m_phase = Phase::reading;
    read();
  }

  void read() {
    arm_silence();
    m_socket.async_read_some(m_buffer.prepare(k_read_size),
                             [this](ErrorCode error, std::size_t bytes) { on_read(error, bytes); });
  }

  void on_read(ErrorCode error, std::size_t bytes) {
    if (m_finished) {
      return;
    }
    if (bytes > 0) {
      m_heard = true;
      m_buffer.commit(bytes);
      if (parse()) {
        return;
      }
    }
    if (error == asio::error::eof) {
      on_closed();
    } else if (error) {
      fail(ExchangeFailure::broken,
           "the connection broke while reading the answer (" + error.message() + ")");
    } else {
      read();
    }
  }

  void new_parser() {
    m_parser.emplace();
    m_parser->header_limit(static_cast<std::uint32_t>(
        std::min<std::size_t>(m_bounds.max_head_bytes, std::numeric_limits<std::uint32_t>::max())));
    m_parser->body_limit(std::uint64_t{m_bounds.max_body_bytes});
    // Not eager: Beast 1.74 loses a Content-Length past body_limit when the
    // body came in the same read as the head and the parse goes on eagerly.
    if (m_request.method == "HEAD") {
      m_parser->skip(true);
    }
  }

  // Feeds what came to the parser; true once the exchange is over.
  bool parse() {
    if (!m_looks_like_http && !starts_like_http()) {
      refuse(http::error::bad_version);
      return true;
    }
    for (;;) {
      while (m_buffer.size() > 0 && !m_parser->is_done()) {
        ErrorCode error;
        const std::size_t used = m_parser->put(m_buffer.data(), error);
        m_buffer.consume(used);
        if (error == http::error::need_more || (!error && used == 0)) {
          break;  // the rest waits for more bytes
        }
        if (error) {
          refuse(error);
          return true;
        }
      }
      if (!m_parser->is_done()) {
        break;
      }
      // An interim answer (100 Continue, 103 Early Hints) comes before the
      // final one: read on. (101 switches protocols, which was not asked.)
      const int status = m_parser->get().result_int();
      if (status < 100 || status >= 200 || status == 101) {
        succeed();
        return true;
      }
      if (++m_interim_answers > k_max_interim_answers) {
        fail(ExchangeFailure::not_http,
             "more than " + std::to_string(k_max_interim_answers) + " interim (1xx) answers");
        return true;
      }
      new_parser();
    }
    // Beast bounds the head, and the body by its size, but not a chunk's
    // header line nor the trailer, which it waits to have whole: bytes
    // waiting for it are bounded here.
    if (m_buffer.size() > m_bounds.max_head_bytes) {
      if (m_parser->is_header_done()) {
        m_result.status = m_parser->get().result_int();
        fail(ExchangeFailure::body_past_bound,
             "a line of the answer's body (a chunk's header or its trailer) is longer than " +
                 size_text(m_bounds.max_head_bytes));
      } else {
        fail(ExchangeFailure::head_too_large, "the answer's head is larger than " +
                                                  size_text(m_bounds.max_head_bytes) +
                                                  " (is this an HTTP server?)");
      }
      return true;
    }
    return false;
  }

  // Beast judges the start line once it has all of it: a TLS alert (seven
  // bytes, no line end) on a connection left open would wait for the
  // deadline. Its first bytes tell at once.
  bool starts_like_http() {
    static constexpr std::string_view prefix = "HTTP/";
    const std::string_view start(static_cast<const char*>(m_buffer.data().data()),
                                 std::min(m_buffer.size(), prefix.size()));
    m_looks_like_http = start == prefix;
    return prefix.starts_with(start);
  }

  // What the parser would not take.
  void refuse(ErrorCode error) {
    if (error == http::error::body_limit) {
      // Past the head: the status is known, and is all some callers need.
      m_result.status = m_parser->get().result_int();
      fail(ExchangeFailure::body_past_bound,
           "the answer is larger than " + size_text(m_bounds.max_body_bytes));
    } else if (error == http::error::header_limit) {
      fail(ExchangeFailure::head_too_large, "the answer's head is larger than " +
                                                size_text(m_bounds.max_head_bytes) +
                                                " (is this an HTTP server?)");
    } else {
      fail(ExchangeFailure::not_http, "what came back is not an HTTP/1.1 answer (" +
                                          error.message() + "; a TLS port, or another protocol?)");
    }
  }

  // The server closed its side: the end of an answer without a length, or
  // too soon.
  void on_closed() {
    if (!m_parser->got_some()) {
      // Nothing of a final answer: Beast would take an EOF here for a whole
      // message (a 200 of its defaults) and asserts against it.
      fail(ExchangeFailure::broken,
           m_interim_answers > 0
               ? "it closed the connection after an interim (1xx) answer, before the final one"
               : "it closed the connection without answering");
      return;
    }
    ErrorCode error;
    m_parser->put_eof(error);
    if (error) {
      fail(ExchangeFailure::broken, "the connection closed before the answer was complete");
      return;
    }
    succeed();
  }

  void arm_silence() {
    const auto silence = m_bounds.silence;
    if (silence.count() <= 0 || silence >= m_bounds.deadline) {
      return;
    }
    // A wait that fired in the same turn as the read that re-armed it would
    // still run: the generation tells it that it is stale.
    const auto generation = ++m_silence_generation;
    m_silence.expires_after(silence);
    m_silence.async_wait([this, generation](ErrorCode error) {
      if (!error && generation == m_silence_generation && !m_finished) {
        on_silence();
      }
    });
  }

  void on_silence() {
    const std::string silence = seconds_text(m_bounds.silence);
    fail(ExchangeFailure::silent,
         m_heard ? "its answer stopped for " + silence + " (is it stopped or stuck?)"
                 : "it accepted the connection and sent nothing for " + silence +
                       " (is it stopped or stuck?)");
  }

  void on_deadline() {
    const std::string deadline = seconds_text(m_bounds.deadline);
    if (m_phase == Phase::connecting) {
      fail(ExchangeFailure::timed_out, "connection timed out: " + m_request.host + " port " +
                                           std::to_string(m_request.port) +
                                           " took no connection within " + deadline +
                                           " (the host is down, or a firewall drops the packets)");
    } else {
      fail(ExchangeFailure::timed_out, "no complete answer within " + deadline);
    }
  }

  void on_cancel() { fail(ExchangeFailure::cancelled, std::string(k_cancelled)); }

  void succeed() {
    m_result.status = m_parser->get().result_int();
    m_result.body = std::move(m_parser->get().body());
    finish();
  }

  void fail(ExchangeFailure failure, std::string error) {
    if (m_finished) {
      return;
    }
    m_result.failure = failure;
    m_result.error = std::move(error);
    m_result.body.clear();  // part of an answer is no answer
    finish();
  }

  // Closing the socket ends whatever waits on it (its handlers see
  // m_finished); with the timers cancelled, run() returns.
  void finish() {
    m_finished = true;
    ErrorCode ignored;
    m_socket.close(ignored);
    m_deadline.cancel();
    m_silence.cancel();
  }

  const ExchangeRequest& m_request;
  const ExchangeBounds& m_bounds;
  const std::string m_text;  // the whole request, as sent
  std::vector<tcp::endpoint> m_endpoints;
  // Before what uses it: the socket and timers go first.
  asio::io_context m_io;
  tcp::socket m_socket{m_io};
  asio::steady_timer m_deadline{m_io};
  asio::steady_timer m_silence{m_io};
  std::uint64_t m_silence_generation = 0;
  boost::beast::flat_buffer m_buffer;
  // Made anew after each interim (1xx) answer.
  std::optional<http::response_parser<http::string_body>> m_parser;
  Phase m_phase = Phase::connecting;
  bool m_heard = false;            // a byte of the answer came
  bool m_looks_like_http = false;  // it began with "HTTP/"
  bool m_finished = false;
  int m_interim_answers = 0;
  static constexpr int k_max_interim_answers = 16;
  ExchangeResult m_result;
};

}  // namespace

ExchangeResult http_exchange(const ExchangeRequest& request, const ExchangeBounds& bounds,
                             ExchangeCancellation* cancellation) {
  // A year stands for "no bound": the clock's time points would overflow.
  const auto deadline = Clock::now() + std::min<std::chrono::milliseconds>(
                                           bounds.deadline, std::chrono::hours(24 * 365));
  if (const auto problem = malformed(request)) {
    return failed(ExchangeFailure::bad_request, *problem);
  }
  if (cancellation != nullptr && cancellation->cancelled()) {
    return failed(ExchangeFailure::cancelled, std::string(k_cancelled));
  }
  auto resolved = resolve(request.host, request.port);
  if (!resolved.error.empty()) {
    return failed(ExchangeFailure::unresolved, resolved.error);
  }
  if (Clock::now() >= deadline) {
    return failed(ExchangeFailure::timed_out, "no complete answer within " +
                                                  seconds_text(bounds.deadline) +
                                                  " (looking up the name took it all)");
  }
  try {
    Exchange exchange(request, bounds);
    return exchange.run(std::move(resolved.endpoints), deadline, cancellation);
  } catch (const std::exception& e) {
    // Asio's loop and socket need descriptors: out of them (EMFILE), or of
    // memory, the exchange fails like any other.
    return failed(ExchangeFailure::broken, std::string("cannot make the request: ") + e.what());
  }
}

}  // namespace envcontract::fleet
