#include "daemon/http_api.hpp"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "common/json_fields.hpp"
#include "common/json_text.hpp"
#include "common/spelling.hpp"
#include "common/time_text.hpp"
#include "daemon/connection_admission.hpp"
#include "daemon/gate_routes.hpp"
#include "daemon/http_routes.hpp"
#include "daemon/metrics.hpp"
#include "provisioning/provision_steps.hpp"
#include "web/web_assets.hpp"

namespace envcontract::daemon {
namespace {

using report::Json;

constexpr std::size_t k_max_request_body = 64 * 1024;
constexpr const char* k_json = "application/json";

void send_json(httplib::Response& response, int status, const Json& body) {
  response.status = status;
  response.set_content(common::json_text(body, 2) + "\n", k_json);
}

void send_error(httplib::Response& response, int status, const std::string& message) {
  send_json(response, status, {{"error", message}});
}

}  // namespace

PlainResponse json_answer(int status, const Json& body) {
  PlainResponse response;
  response.status = status;
  response.body = common::json_text(body, 2) + "\n";
  return response;
}

PlainResponse error_answer(int status, const std::string& message) {
  return json_answer(status, {{"error", message}});
}

namespace {

using SharedText = std::shared_ptr<const std::string>;

// Answers with `first` and then `second` (texts every request shares: the
// report, the two halves of /metrics), without copying them into the
// response: httplib writes a content provider's bytes straight to the
// socket, where a body set with set_content is a copy per request (tens of
// KB). A client that accepts a compressed answer still gets one, made of a
// copy: httplib compresses only a body it holds.
void send_shared(const httplib::Request& request, httplib::Response& response, SharedText first,
                 SharedText second, const char* type) {
  if (!second) {
    static const auto nothing = std::make_shared<const std::string>();
    second = nothing;
  }
  const auto encodings = request.get_header_value("Accept-Encoding");
  const std::size_t total = first->size() + second->size();
  // httplib 0.11.4 asserts that a provider has something to write.
  if (encodings.find("gzip") != std::string::npos || encodings.find("br") != std::string::npos ||
      total == 0) {
    response.set_content(*first, type);
    response.body += *second;
    return;
  }
  response.set_content_provider(
      total, type,
      [first = std::move(first), second = std::move(second)](std::size_t offset, std::size_t length,
                                                             httplib::DataSink& sink) {
        const std::size_t end = offset + length;
        if (offset < first->size()) {
          const std::size_t stop = std::min(end, first->size());
          if (!sink.write(first->data() + offset, stop - offset)) {
            return false;
          }
          offset = stop;
        }
        if (offset < end) {
          return sink.write(second->data() + (offset - first->size()), end - offset);
        }
        return true;
      });
}

// The `limit` parameter, when given, into `limit`: a number from 1 to
// `most`. False (with a 400 sent) when it is anything else.
bool read_limit(const httplib::Request& request, long most, std::size_t& limit,
                httplib::Response& response) {
  if (!request.has_param("limit")) {
    return true;
  }
  const std::string text = request.get_param_value("limit");
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < 1 || value > most) {
    send_error(response, 400,
               "limit must be a number from 1 to " + std::to_string(most) + ", got '" + text + "'");
    return false;
  }
  limit = static_cast<std::size_t>(value);
  return true;
}

Json ticket_json(const ScanTicket& ticket) {
  return {{"id", ticket.id},
          {"state", ticket.state},
          {"reason", ticket.reason},
          {"queued_at", ticket.queued_at},
          {"finished_at", ticket.finished_at.empty() ? Json(nullptr) : Json(ticket.finished_at)},
          {"scan_id", ticket.scan_id ? Json(*ticket.scan_id) : Json(nullptr)},
          {"error", ticket.error.empty() ? Json(nullptr) : Json(ticket.error)}};
}

// "Authorization: Bearer <token>" -> "<token>", or "".
std::string bearer_token(const httplib::Request& request) {
  const std::string header = request.get_header_value("Authorization");
  constexpr std::string_view prefix = "Bearer ";
  return header.size() > prefix.size() && header.compare(0, prefix.size(), prefix) == 0
             ? header.substr(prefix.size())
             : "";
}

// What one request on this thread ended as, for the connection loop: the
// loop closes the connection after an error or an unread body.
struct RequestOutcome {
  int status = 0;
  bool close_after = false;      // a body was left unread on the connection
  std::size_t header_count = 0;  // as the client sent them
};
thread_local RequestOutcome t_outcome;

// Set on the thread serving a connection taken in the health checks' reserve.
thread_local bool t_health_only = false;

using Clock = std::chrono::steady_clock;

// A connection's socket as httplib reads it, with what httplib 0.11.4 does
// not bound: the whole request has a deadline (a client dripping one byte
// every few seconds is cut off), and the bytes one request may send are
// capped (headers included). Reads are buffered across requests, so
// pipelined requests are not lost.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, std::chrono::milliseconds io_timeout)
      : m_fd(fd), m_io_timeout(io_timeout) {}

  void begin_request(Clock::time_point deadline, std::size_t budget) {
    m_deadline = deadline;
    m_budget = budget;
    m_used = 0;
    m_over_budget = false;
    m_past_deadline = false;
    m_gathering = false;
  }

  // From here to the answer's end (flush), writes are gathered (write): the
  // request has been routed, so nothing is read until then and nothing held
  // can keep the client waiting. What httplib writes before routing, an
  // interim "100 Continue" that the client waits for before it sends a
  // body, leaves at once.
  void gather_the_answer() {
    m_gathering = true;
    m_held.reserve(k_gather_bytes);
  }

  // The answer of a request whose handler worked past the request's
  // deadline (a CI gate that ran the env's probes) gets `timeout` of its own
  // to be written, as a request gets to arrive.
  void answer_within(std::chrono::milliseconds timeout) { m_deadline = Clock::now() + timeout; }

  // Waits up to `idle` for the next request's first byte; false when the
  // peer closed or stayed silent.
  bool wait_for_request(std::chrono::milliseconds idle) {
    if (m_offset < m_size) {
      return true;
    }
    if (poll_for(POLLIN, idle) <= 0) {
      return false;
    }
    m_peer_closed = fill() <= 0;
    return !m_peer_closed;
  }

  // The peer closed (or reset) the connection while we waited for a request.
  bool peer_closed() const { return m_peer_closed; }

  bool over_budget() const { return m_over_budget; }
  bool past_deadline() const { return m_past_deadline; }

  bool is_readable() const override {
    return m_offset < m_size || poll_for(POLLIN, time_left()) > 0;
  }
  bool is_writable() const override { return poll_for(POLLOUT, time_left()) > 0; }

  ssize_t read(char* ptr, size_t size) override {
    if (m_used >= m_budget) {
      m_over_budget = true;
      return -1;
    }
    size = std::min(size, m_budget - m_used);
    if (m_offset >= m_size) {
      if (Clock::now() >= m_deadline) {
        m_past_deadline = true;
        return -1;
      }
      if (poll_for(POLLIN, time_left()) <= 0) {
        m_past_deadline = Clock::now() >= m_deadline;
        return -1;
      }
      const ssize_t got = fill();
      if (got <= 0) {
        return got;
      }
    }
    const std::size_t n = std::min(size, m_size - m_offset);
    std::memcpy(ptr, m_buffer.data() + m_offset, n);
    m_offset += n;
    m_used += n;
    return static_cast<ssize_t>(n);
  }

  // httplib writes an answer's status line and headers on their own and
  // then its body (/metrics in two more pieces): with TCP_NODELAY each send
  // is a segment and a wake-up of the client. While the answer is gathered,
  // writes that fit in k_gather_bytes are held and go out with the next
  // larger one, in one message, or when the answer is written (flush): one
  // message for an answer of up to 16 KB, and the head with the body's
  // first part for a larger one. No route streams its answer, which holding
  // would delay.
  ssize_t write(const char* ptr, size_t size) override {
    if (m_gathering && m_held.size() + size <= k_gather_bytes) {
      m_held.append(ptr, size);
      return static_cast<ssize_t>(size);
    }
    while (!m_held.empty()) {
      const ssize_t sent = send_parts(ptr, size);
      if (sent < 0) {
        return -1;
      }
      const auto sent_bytes = static_cast<std::size_t>(sent);
      if (sent_bytes >= m_held.size()) {
        const std::size_t held = m_held.size();
        m_held.clear();
        return static_cast<ssize_t>(sent_bytes - held);  // of the caller's bytes; 0 asks again
      }
      m_held.erase(0, sent_bytes);
    }
    return send_parts(ptr, size);
  }

  // Sends what is held and ends the gathering; false when the connection
  // failed or stayed full past the request's deadline (what is held is then
  // dropped).
  bool flush() {
    m_gathering = false;
    while (!m_held.empty()) {
      const ssize_t sent = send_parts(nullptr, 0);
      if (sent < 0) {
        m_held.clear();
        return false;
      }
      m_held.erase(0, static_cast<std::size_t>(sent));
    }
    return true;
  }

  // httplib asks for both addresses with every request; a connection's do
  // not change, so each is asked of the kernel until it has answered.
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    if (!m_remote)
      m_remote = address_of(::getpeername);
    if (m_remote) {
      ip = m_remote->first;
      port = m_remote->second;
    }
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    if (!m_local)
      m_local = address_of(::getsockname);
    if (m_local) {
      ip = m_local->first;
      port = m_local->second;
    }
  }
  socket_t socket() const override { return m_fd; }

 private:
  std::chrono::milliseconds time_left() const {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(m_deadline - Clock::now());
    return std::clamp(left, std::chrono::milliseconds(0), m_io_timeout);
  }

  // Sends what is held, then `size` bytes of `ptr`, in one message: at once
  // when the socket has room (nearly always), waiting for room only when it
  // has none (a poll before every send cost a system call per write). How
  // many bytes of the two went out, or -1.
  ssize_t send_parts(const char* ptr, std::size_t size) {
    std::array<iovec, 2> parts{};
    std::size_t count = 0;
    if (!m_held.empty()) {
      parts[count++] = {m_held.data(), m_held.size()};
    }
    if (size > 0) {
      parts[count++] = {const_cast<char*>(ptr), size};
    }
    if (count == 0) {
      return 0;
    }
    msghdr message{};
    message.msg_iov = parts.data();
    message.msg_iovlen = count;
    for (;;) {
      const ssize_t sent = ::sendmsg(m_fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent >= 0) {
        return sent;
      }
      if (errno == EINTR) {
        continue;
      }
      if ((errno != EAGAIN && errno != EWOULDBLOCK) || !is_writable()) {
        return -1;
      }
    }
  }

  int poll_for(short events, std::chrono::milliseconds timeout) const {
    pollfd descriptor{m_fd, events, 0};
    int ready;
    do {
      ready = ::poll(&descriptor, 1, static_cast<int>(timeout.count()));
    } while (ready < 0 && errno == EINTR);
    return ready > 0 && (descriptor.revents & (events | POLLHUP | POLLERR)) ? ready : 0;
  }

  ssize_t fill() {
    ssize_t got;
    do {
      got = ::recv(m_fd, m_buffer.data(), m_buffer.size(), 0);
    } while (got < 0 && errno == EINTR);
    m_offset = 0;
    m_size = got > 0 ? static_cast<std::size_t>(got) : 0;
    return got;
  }

  using Address = std::pair<std::string, int>;

  template <typename Getter>
  std::optional<Address> address_of(Getter getter) const {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (getter(m_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      return std::nullopt;
    }
    int port = 0;
    char text[INET6_ADDRSTRLEN] = {};
    if (address.ss_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
      ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
      port = ntohs(in->sin_port);
    } else if (address.ss_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
      ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
      port = ntohs(in6->sin6_port);
    }
    return Address{text, port};
  }

  static constexpr std::size_t k_gather_bytes = 16 * 1024;

  int m_fd;
  std::chrono::milliseconds m_io_timeout;
  bool m_gathering = false;
  std::string m_held;  // written, not yet sent; k_gather_bytes reserved once gathering
  std::array<char, 4096> m_buffer{};
  std::size_t m_offset = 0;
  std::size_t m_size = 0;
  Clock::time_point m_deadline = Clock::time_point::max();
  std::size_t m_budget = 0;
  std::size_t m_used = 0;
  bool m_over_budget = false;
  bool m_past_deadline = false;
  bool m_peer_closed = false;
  mutable std::optional<Address> m_remote;
  mutable std::optional<Address> m_local;
};

thread_local ConnectionStream* t_stream = nullptr;

// A connection accepted: its socket, the address it came from and what it may ask.
struct Connection {
  int fd = -1;
  std::string client;
  Admission admission = Admission::serve;
};

// Unread bytes at close() make the kernel reset the connection, which can
// drop the answer not yet delivered: say we are done, drain a little, close.
void close_gently(int sock) {
  ::shutdown(sock, SHUT_WR);
  char discard[4096];
  for (int reads = 0; reads < 16 && ::recv(sock, discard, sizeof discard, MSG_DONTWAIT) > 0;
       ++reads) {
  }
  ::close(sock);
}

// Set on the accepting thread while httplib hands a socket over
// (ConnectionQueue::enqueue), and the socket handed over.
thread_local bool t_handing_over = false;
thread_local int t_handed_over = -1;

// httplib serves a connection on one pool thread for its whole life. This
// queue admits each connection as it is accepted (ConnectionAdmission: a
// bound in all, a bound per client address, a reserve for health checks):
// one turned away is answered 503 at once by a thread of its own instead of
// waiting behind the others, and the connection loop closes keep-alive
// connections early while others wait, so that a few clients cannot hold
// every thread. Serving threads start when connections outnumber idle ones,
// up to `threads`, and end after a spell with nothing to serve: an idle
// agent keeps one, not a stack and malloc cache per thread it may start (32
// of them were 1.3 MB of its RSS, bench/footprint.sh).
class ConnectionQueue final : public httplib::TaskQueue {
 public:
  using Handler = std::function<void(const Connection&)>;

  // `serve` serves an admitted connection to its end (the queue closes it);
  // `turn_away` answers one turned away and closes it.
  ConnectionQueue(std::size_t threads, ConnectionBounds bounds,
                  std::chrono::milliseconds idle_thread_life, Handler serve, Handler turn_away)
      : m_max_threads(std::max<std::size_t>(1, threads)),
        m_idle_thread_life(idle_thread_life),
        m_serve(std::move(serve)),
        m_turn_away(std::move(turn_away)),
        m_admission(bounds) {
    std::lock_guard lock(m_mutex);
    m_threads.emplace_back([this] { work(m_turned_away, true); });
    start_serving_thread();
  }

  // httplib's job serves the socket it has just accepted, by calling
  // process_and_close_socket (BoundedServer's). Run here with
  // t_handing_over set, it only hands the socket over: a connection must be
  // admitted by its peer's address on the accepting thread, before it can
  // hold anything, and the job does not say which socket it serves.
  void enqueue(std::function<void()> job) override {
    t_handed_over = -1;
    t_handing_over = true;
    job();
    t_handing_over = false;
    if (t_handed_over >= 0) {
      admit(t_handed_over);
    }
  }

  void shutdown() override {
    if (m_on_shutdown) {
      m_on_shutdown();  // nobody asks this queue anything from now on
    }
    {
      std::lock_guard lock(m_mutex);
      m_shutdown = true;
    }
    m_jobs_ready.notify_all();
    m_turned_away_ready.notify_all();
    std::list<std::thread> threads;
    {
      std::lock_guard lock(m_mutex);
      threads.swap(m_threads);  // no thread starts once m_shutdown is set
    }
    for (auto& thread : threads) {
      thread.join();
    }
  }

  // Connections accepted and waiting for a thread: more than the idle
  // threads and those starting will take.
  std::size_t waiting() const {
    std::lock_guard lock(m_mutex);
    const std::size_t taken = m_idle + m_starting;
    return m_jobs.size() > taken ? m_jobs.size() - taken : 0;
  }

  // How long the oldest connection waiting for a thread has waited (zero
  // when none waits).
  std::chrono::steady_clock::duration oldest_wait() const {
    std::lock_guard lock(m_mutex);
    return m_enqueued.empty() ? std::chrono::steady_clock::duration::zero()
                              : std::chrono::steady_clock::now() - m_enqueued.front();
  }

  // Called first in shutdown(), before httplib deletes the queue.
  void on_shutdown(std::function<void()> hook) { m_on_shutdown = std::move(hook); }

 private:
  void admit(int fd) {
    Connection connection{fd, peer_address(fd)};
    bool turning_away = false;
    std::vector<std::thread> ended;
    {
      std::lock_guard lock(m_mutex);
      connection.admission = m_admission.admit(connection.client);
      turning_away = connection.admission == Admission::refused_full ||
                     connection.admission == Admission::refused_client;
      if (turning_away) {
        m_turned_away.push_back(std::move(connection));
      } else {
        m_jobs.push_back(std::move(connection));
        m_enqueued.push_back(std::chrono::steady_clock::now());
        if (m_jobs.size() > m_idle + m_starting && m_serving < m_max_threads) {
          ended = take_ended();
          start_serving_thread();
        }
      }
    }
    for (auto& thread : ended) {
      thread.join();  // it has left its loop: this only reaps it
    }
    // One thread for one job: waking all of them for each connection cost
    // a burst of context switches per request under load.
    (turning_away ? m_turned_away_ready : m_jobs_ready).notify_one();
  }

  // Call with m_mutex held. A thread that cannot start (the unit's TasksMax
  // reached, say by probes that fork) leaves the job to a running one.
  void start_serving_thread() {
    if (m_shutdown) {
      return;
    }
    try {
      m_threads.emplace_back([this] { work(m_jobs, false); });
    } catch (const std::system_error& e) {
      if (m_serving == 0) {
        throw;  // the first, at start-up: the server cannot serve at all
      }
      // Once a minute at most: every connection that comes would say it again.
      if (const auto now = Clock::now();
          !m_thread_warning || now - *m_thread_warning >= std::chrono::minutes(1)) {
        m_thread_warning = now;
        spdlog::warn("cannot start another HTTP thread ({}): {} serve the connections", e.what(),
                     m_serving);
      }
      return;
    }
    ++m_serving;
    ++m_starting;
  }

  // Threads that left their loop, to be joined without m_mutex. Call with it held.
  std::vector<std::thread> take_ended() {
    std::vector<std::thread> ended;
    for (auto it = m_threads.begin(); it != m_threads.end();) {
      if (std::find(m_ended.begin(), m_ended.end(), it->get_id()) != m_ended.end()) {
        ended.push_back(std::move(*it));
        it = m_threads.erase(it);
      } else {
        ++it;
      }
    }
    m_ended.clear();
    return ended;
  }

  void work(std::deque<Connection>& queue, bool turning_away) {
    auto& ready = turning_away ? m_turned_away_ready : m_jobs_ready;
    bool started = false;
    for (;;) {
      Connection connection;
      {
        std::unique_lock lock(m_mutex);
        const auto has_work = [&] { return m_shutdown || !queue.empty(); };
        if (!turning_away && m_starting > 0 && !started) {
          --m_starting;
          started = true;
        }
        if (turning_away) {
          ready.wait(lock, has_work);
        } else {
          ++m_idle;
          bool woken = true;
          if (m_serving == 1) {
            ready.wait(lock, has_work);  // the last serving thread stays
          } else {
            woken = ready.wait_for(lock, m_idle_thread_life, has_work);
          }
          --m_idle;
          if (!woken && m_serving > 1) {
            --m_serving;
            m_ended.push_back(std::this_thread::get_id());
            return;
          }
        }
        if (queue.empty()) {
          if (m_shutdown) {
            return;  // nothing left to close
          }
          continue;
        }
        connection = std::move(queue.front());
        queue.pop_front();
        if (!turning_away) {
          m_enqueued.pop_front();
        }
      }
      if (turning_away) {
        m_turn_away(connection);
        continue;
      }
      m_serve(connection);
      {
        // Before the client sees the connection end: one that reconnects at
        // once (a health check after another) is not counted twice.
        std::lock_guard lock(m_mutex);
        m_admission.release(connection.client);
      }
      close_gently(connection.fd);
    }
  }

  const std::size_t m_max_threads;
  const std::chrono::milliseconds m_idle_thread_life;  // then a serving thread beyond one ends
  const Handler m_serve;
  const Handler m_turn_away;
  mutable std::mutex m_mutex;
  ConnectionAdmission m_admission;  // the connections served or waiting for a thread
  std::condition_variable m_jobs_ready;
  std::condition_variable m_turned_away_ready;
  std::deque<Connection> m_jobs;
  std::deque<Connection> m_turned_away;
  std::size_t m_serving = 0;   // serving threads started and not ended
  std::size_t m_idle = 0;      // of them, those waiting for a connection
  std::size_t m_starting = 0;  // of them, those not yet running
  bool m_shutdown = false;
  std::deque<std::chrono::steady_clock::time_point> m_enqueued;  // of each job in m_jobs
  std::function<void()> m_on_shutdown;
  std::list<std::thread> m_threads;
  std::vector<std::thread::id> m_ended;               // left their loop, not yet joined
  std::optional<Clock::time_point> m_thread_warning;  // when a thread last failed to start
};

struct ConnectionLimits {
  std::chrono::milliseconds request_timeout{10'000};  // a whole request, first byte to last
  std::chrono::milliseconds keep_alive_idle{5'000};
  std::size_t keep_alive_requests = 100;
  std::size_t request_bytes = 128 * 1024;  // request line, headers and body
};

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
  std::atomic<ConnectionQueue*> queue{nullptr};

  // httplib 0.11.4 listens with a backlog of 5: clients reconnecting at once
  // (keep-alive connections closed for fairness) overflowed it, and the
  // kernel then dropped their handshakes for tens of seconds. Listening
  // again on the bound socket only changes its backlog.
  void set_backlog(int backlog) { ::listen(svr_sock_, backlog); }

  // Closes the socket of a server bound but never served, whose stop()
  // closes nothing (httplib's closes a running server's only).
  void close_listener() {
    const socket_t sock = svr_sock_.exchange(INVALID_SOCKET);
    if (sock != INVALID_SOCKET) {
      ::close(sock);
    }
  }

  // Serves an admitted connection until it ends; the caller closes it. One
  // taken in the health checks' reserve serves one request and has a second
  // to send it.
  void serve_connection(const Connection& connection) {
    const int sock = connection.fd;
    const bool health_only = connection.admission == Admission::health_only;
    t_health_only = health_only;
    ConnectionStream stream(sock, limits.request_timeout);
    bool ok = false;
    for (std::size_t served = 0; served < limits.keep_alive_requests; ++served) {
      if (svr_sock_ == INVALID_SOCKET || !wait_for_request(stream, served == 0, health_only)) {
        break;
      }
      stream.begin_request(Clock::now() + limits.request_timeout, limits.request_bytes);
      t_outcome = {};
      t_stream = &stream;
      const bool last = health_only || served + 1 == limits.keep_alive_requests ||
                        (queue.load() != nullptr && queue.load()->waiting() > 0) ||
                        svr_sock_ == INVALID_SOCKET;
      bool closed = false;
      ok = process_request(stream, last, closed, [](httplib::Request& request) {
        // The agent serves no ranges: httplib would copy the body once per
        // range ("Range: bytes=-,-,-,..." asks for thousands).
        request.ranges.clear();
        // httplib has added REMOTE_ADDR, REMOTE_PORT, LOCAL_ADDR and LOCAL_PORT.
        t_outcome.header_count =
            request.headers.size() - std::min<std::size_t>(request.headers.size(), 4);
        // HTTP/1.1: a request without Content-Length or Transfer-Encoding
        // has no body (httplib would wait for the peer to close).
        if (!request.has_header("Content-Length") && !request.has_header("Transfer-Encoding")) {
          request.set_header("Content-Length", "0");
        }
      });
      t_stream = nullptr;
      if (!stream.flush()) {  // the answer, written in full, or the connection failed
        ok = false;
      }
      if (!ok || closed || last || t_outcome.close_after || t_outcome.status >= 400 ||
          stream.over_budget() || stream.past_deadline()) {
        break;
      }
    }
    t_health_only = false;
  }

  // A connection turned away: a short answer that says why, and it is closed.
  static void turn_away(const Connection& connection) {
    static const std::string full = refusal(
        "the agent is serving as many connections as it allows (http_max_connections); retry "
        "shortly");
    static const std::string client = refusal(
        "this address holds as many connections to the agent as one address may "
        "(http_max_connections_per_client): close idle ones, or retry shortly");
    const std::string& response = connection.admission == Admission::refused_client ? client : full;
    const timeval timeout{1, 0};
    ::setsockopt(connection.fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    (void)::send(connection.fd, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    close_gently(connection.fd);
  }

 private:
  // httplib calls this only from the job that ConnectionQueue::enqueue runs
  // on the accepting thread: it hands the socket over (see there).
  bool process_and_close_socket(socket_t sock) override {
    if (t_handing_over) {
      t_handed_over = sock;
      return true;
    }
    serve_connection({sock, peer_address(sock)});
    close_gently(sock);
    return true;
  }

  static std::string refusal(const std::string& message) {
    const std::string body = "{\"error\": \"" + message + "\"}\n";
    return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
           "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }

  // The next request's first byte, waited for in short slices: a connection
  // that stays silent while others wait for a thread gives its thread up
  // (after 1 s for a new connection, at once for an idle keep-alive one), so
  // that silent connections cannot hold every thread. A connection in the
  // health checks' reserve has a second in all: a checker asks at once, and
  // a silent client would keep the reserve from the next one.
  bool wait_for_request(ConnectionStream& stream, bool first, bool health_only) {
    constexpr std::chrono::milliseconds k_slice{100};
    constexpr std::chrono::milliseconds k_health_patience{1000};
    const auto patience = first ? std::chrono::milliseconds(1000) : k_slice;
    const auto limit = health_only ? std::min(k_health_patience, limits.request_timeout)
                       : first     ? limits.request_timeout
                                   : limits.keep_alive_idle;
    const auto started = Clock::now();
    for (;;) {
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
      if (waited >= limit || svr_sock_ == INVALID_SOCKET ||
          (waited >= patience && queue.load() != nullptr && queue.load()->waiting() > 0)) {
        return false;
      }
      if (stream.wait_for_request(std::min(k_slice, limit - waited))) {
        return true;
      }
      if (stream.peer_closed()) {
        return false;
      }
    }
  }
};
}  // namespace

struct HttpServer::Impl {
  Impl(Agent* agent_, std::string version_, RequestHandler handler_)
      : agent(agent_), version(std::move(version_)), handler(std::move(handler_)) {}

  Agent* agent;  // null when `handler` answers instead (the fleet view)
  // /metrics: the report's series as last rendered, and what from; the
  // agent's own series likewise.
  std::mutex metrics_mutex;
  std::shared_ptr<const std::string> metrics_text;
  std::shared_ptr<const report::Json> metrics_report;
  ContractHandle metrics_contract;
  std::shared_ptr<const std::string> metrics_agent_text;
  AgentFigures metrics_figures;
  std::string version;
  RequestHandler handler;
  HttpSettings settings;
  BoundedServer server;
  HostPolicy hosts;
  std::size_t max_connections = 256;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  // Guards server.queue against its deletion for liveness_problem().
  std::mutex queue_mutex;
  bool listened = false;  // the listen loop has started (queue_mutex)
  // serve() and stop() in either order, from any thread (serve_mutex).
  std::mutex serve_mutex;
  bool stop_requested = false;
  bool serve_entered = false;
  std::atomic<bool> serve_returned{false};
  std::thread thread;  // of start()
  int port = 0;        // bound

  void routes();
  void answer_with_handler(const httplib::Request& request, httplib::Response& response);
  // Decides and answers every request before httplib's own (regex) routing
  // and before any body is read.
  httplib::Server::HandlerResponse dispatch(const httplib::Request& request,
                                            httplib::Response& response);
  void healthz(httplib::Response& response);
  void report(const httplib::Request& request, httplib::Response& response);
  void env(const std::string& name, httplib::Response& response);
  void history(const httplib::Request& request, httplib::Response& response);
  void contract(httplib::Response& response);
  void compliance(httplib::Response& response);
  void plan(const httplib::Request& request, httplib::Response& response);
  void provisions(const httplib::Request& request, httplib::Response& response);
  void scan(const httplib::Request& request, httplib::Response& response);
  void gate(Endpoint endpoint, const httplib::Request& request, httplib::Response& response);
  void provision(const httplib::Request& request, httplib::Response& response, bool promote);
  void provision_job(const std::string& id, httplib::Response& response);
  // For what changes the host: a token the agent has, presented and right.
  // False (with the answer sent) otherwise.
  bool token_presented(const httplib::Request& request, httplib::Response& response,
                       const std::string& what);
  void scan_ticket(const std::string& id, httplib::Response& response);
  void metrics(const httplib::Request& request, httplib::Response& response);
  static void asset(const std::string& path, httplib::Response& response);

  // The latest report, or an answer saying why there is none.
  std::shared_ptr<const AgentSnapshot> with_report(httplib::Response& response) {
    auto snapshot = agent->snapshot();
    if (!snapshot->report) {
      send_json(response, 503,
                {{"error", "no scan has finished yet; the first one is running"},
                 {"scanning", snapshot->scanning}});
      return nullptr;
    }
    return snapshot;
  }
};

void HttpServer::Impl::healthz(httplib::Response& response) {
  const auto uptime =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started);
  send_json(response, 200,
            {{"status", "ok"}, {"version", version}, {"uptime_seconds", uptime.count()}});
}

void HttpServer::Impl::report(const httplib::Request& request, httplib::Response& response) {
  // During the first scan: the envs judged so far, verdict "pending".
  if (const auto snapshot = agent->snapshot(); !snapshot->report && snapshot->partial_text) {
    send_shared(request, response, snapshot->partial_text, nullptr, k_json);
    return;
  }
  if (auto snapshot = with_report(response)) {
    send_shared(request, response, snapshot->report_text, nullptr, k_json);
  }
}

void HttpServer::Impl::env(const std::string& name, httplib::Response& response) {
  auto snapshot = with_report(response);
  if (!snapshot) {
    return;
  }
  std::vector<std::string> names;
  for (const auto& env : common::array_field(*snapshot->report, "envs")) {
    if (common::string_field(env, "name") == name) {
      Json body = env;
      body["host"] = snapshot->report->value("host", "");
      body["scanned_at"] = snapshot->report->value("scanned_at", "");
      body["scan_id"] = snapshot->report->value("scan_id", Json(nullptr));
      send_json(response, 200, body);
      return;
    }
    names.push_back(common::string_field(env, "name"));
  }
  send_json(response, 404,
            {{"error", "no env named '" + name + "' on this host"}, {"envs", names}});
}

void HttpServer::Impl::history(const httplib::Request& request, httplib::Response& response) {
  static const std::vector<std::string> known = {"env", "target", "check", "since", "limit"};
  for (const auto& [key, value] : request.params) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      send_error(response, 400,
                 "unknown parameter '" + key + "'; history takes env, target, check, since, limit");
      return;
    }
  }
  HistoryQuery query;
  query.env = request.get_param_value("env");
  query.target = request.get_param_value("target");
  query.check = request.get_param_value("check");
  if (!query.env.empty() && !query.target.empty()) {
    send_error(response, 400, "give env or target, not both");
    return;
  }
  if (request.has_param("since")) {
    const auto since = common::parse_rfc3339(request.get_param_value("since"));
    if (!since) {
      send_error(response, 400,
                 "since must be an RFC 3339 time such as 2026-11-24T09:00:00Z or a date such as "
                 "2026-11-24, got '" +
                     request.get_param_value("since") + "'");
      return;
    }
    query.since = common::rfc3339(*since);
  }
  if (!read_limit(request, 10000, query.limit, response)) {
    return;
  }
  try {
    auto transitions = agent->history(query);
    if (transitions.empty() && (!query.env.empty() || !query.target.empty())) {
      // A name with no rows may be a typo: say so, with the names known.
      const std::string scope = query.env.empty() ? "target" : "env";
      const std::string& name = query.env.empty() ? query.target : query.env;
      auto names = agent->history_names(scope);
      if (auto snapshot = agent->snapshot(); snapshot->report) {
        for (const auto& item : common::array_field(*snapshot->report, (scope + "s").c_str())) {
          names.push_back(common::string_field(item, "name"));
        }
      }
      std::sort(names.begin(), names.end());
      names.erase(std::unique(names.begin(), names.end()), names.end());
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        send_json(
            response, 404,
            {{"error", "no " + scope + " named '" + name + "' in this host's report or history" +
                           common::did_you_mean(name, names)},
             {scope + "s", names}});
        return;
      }
    }
    send_json(response, 200, {{"transitions", std::move(transitions)}});
  } catch (const std::exception& e) {
    send_error(response, 500, std::string("cannot read the history: ") + e.what());
  }
}

void HttpServer::Impl::contract(httplib::Response& response) {
  const auto snapshot = agent->snapshot();
  if (!snapshot->contract) {
    send_error(response, 503, "no contract is loaded");
    return;
  }
  const auto& identity = snapshot->contract->identity;
  send_json(response, 200,
            {{"name", identity.name},
             {"path", identity.path},
             {"sha256", identity.sha256},
             {"source", snapshot->contract_source},
             {"loaded_at", snapshot->contract_loaded_at},
             {"reload_error",
              snapshot->reload_error.empty() ? Json(nullptr) : Json(snapshot->reload_error)},
             {"contract", contracts::to_json(snapshot->contract->contract)}});
}

void HttpServer::Impl::plan(const httplib::Request& request, httplib::Response& response) {
  for (const auto& [key, value] : request.params) {
    if (key != "env") {
      send_error(response, 400, "unknown parameter '" + key + "'; plan takes env");
      return;
    }
  }
  const auto snapshot = with_report(response);
  if (!snapshot) {
    return;
  }
  if (!snapshot->plan) {
    send_error(response, 503,
               "no plan could be made of the last report (the agent's log says why)");
    return;
  }
  Json plan = *snapshot->plan;
  // What the dashboard offers: a provision button where this agent provisions.
  plan["provisioning"] = {{"enabled", agent->provisioning_enabled()},
                          {"token_required", agent->token_required()}};
  if (!request.has_param("env")) {
    send_json(response, 200, plan);
    return;
  }
  const std::string env = request.get_param_value("env");
  Json envs = Json::array();
  for (const auto& entry : plan["envs"]) {
    if (entry.value("env", std::string()) == env) {
      envs.push_back(entry);
    }
  }
  if (envs.empty()) {
    const auto& report = *snapshot->report;
    for (const auto& entry : report.value("envs", Json::array())) {
      if (entry.value("name", std::string()) == env) {
        // Known and compliant: nothing to do.
        plan["envs"] = envs;
        send_json(response, 200, plan);
        return;
      }
    }
    send_error(response, 404, "no env '" + env + "' in the last report");
    return;
  }
  plan["envs"] = envs;
  send_json(response, 200, plan);
}

void HttpServer::Impl::provisions(const httplib::Request& request, httplib::Response& response) {
  std::size_t limit = 100;
  for (const auto& [key, value] : request.params) {
    if (key != "limit") {
      send_error(response, 400, "unknown parameter '" + key + "'; provisions takes limit");
      return;
    }
  }
  if (!read_limit(request, 1000, limit, response)) {
    return;
  }
  try {
    send_json(response, 200, {{"provisions", agent->provisions(limit)}});
  } catch (const std::exception& e) {
    send_error(response, 500, std::string("the store could not be read: ") + e.what());
  }
}

void HttpServer::Impl::compliance(httplib::Response& response) {
  auto snapshot = with_report(response);
  if (!snapshot) {
    return;
  }
  const auto& report = *snapshot->report;
  const std::string verdict = report.value("verdict", "error");
  send_json(response, verdict == "compliant" ? 200 : 503,
            {{"verdict", verdict},
             {"host", report.value("host", "")},
             {"scanned_at", report.value("scanned_at", "")},
             {"compliant_envs", common::array_field(report, "compliant_envs")},
             {"reasons", common::array_field(report, "reasons")}});
}

bool HttpServer::Impl::token_presented(const httplib::Request& request, httplib::Response& response,
                                       const std::string& what) {
  if (!agent->token_required()) {
    send_error(response, 403,
               what +
                   " over HTTP needs the agent's token, and this agent has none: set "
                   "token_file in its config (docs/agent.md)");
    return false;
  }
  const std::string token = bearer_token(request);
  if (token.empty() || !agent->token_matches(token)) {
    response.set_header("WWW-Authenticate", "Bearer realm=\"envcontract\"");
    send_error(response, 401,
               token.empty() ? what +
                                   " needs 'Authorization: Bearer <token>' (the token is in "
                                   "the agent's token_file)"
                             : "the bearer token does not match the agent's token_file");
    return false;
  }
  return true;
}

// POST /api/v1/provision?name=NEW and POST /api/v1/promote?env=NEW&as=NAME:
// queued as a job; 202 with where to follow it.
void HttpServer::Impl::provision(const httplib::Request& request, httplib::Response& response,
                                 bool promote) {
  const std::string what = promote ? "promotion" : "provisioning";
  if (!token_presented(request, response, what)) {
    return;
  }
  if (!agent->provisioning_enabled()) {
    send_error(response, 403,
               "provisioning is not enabled on this agent: set provisioning.enabled (and "
               "provisioning.user, provisioning.envs_dir) in its config (docs/provisioning.md)");
    return;
  }
  if (const auto problem = agent->provisioning_problem(); !problem.empty()) {
    send_error(response, 403, problem);
    return;
  }
  // Parameters in the query: the agent never reads request bodies.
  for (const auto& [key, value] : request.params) {
    const bool known = promote ? (key == "env" || key == "as") : key == "name";
    if (!known) {
      send_error(response, 400,
                 "unknown parameter '" + key + "'; " +
                     (promote ? "promote takes env and as (?env=NEW&as=NAME)"
                              : "provision takes name (?name=NEW)"));
      return;
    }
  }
  const std::string name = request.get_param_value(promote ? "as" : "name");
  const std::string env = promote ? request.get_param_value("env") : "";
  // Names only: a path would reach outside the envs directory.
  for (const auto& [key, value] :
       promote ? std::vector<std::pair<std::string, std::string>>{{"env", env}, {"as", name}}
               : std::vector<std::pair<std::string, std::string>>{{"name", name}}) {
    if (const auto problem = provisioning::env_name_problem(value); !problem.empty()) {
      send_error(response, 400, "'" + key + "': " + problem);
      return;
    }
  }
  const std::string from = request.remote_addr.empty() ? "" : " from " + request.remote_addr;
  const auto id = agent->request_provision(promote ? "promote" : "provision", name, env,
                                           "api: token holder" + from);
  if (!id) {
    send_error(response, 503, id.error());
    return;
  }
  const std::string url = "/api/v1/provisions/" + std::to_string(id.value());
  response.set_header("Location", url);
  send_json(response, 202, {{"id", id.value()}, {"url", url}, {"state", "queued"}});
}

void HttpServer::Impl::provision_job(const std::string& text, httplib::Response& response) {
  const auto job = agent->provision_job(std::stoll(text));  // the route takes 1 to 15 digits
  if (!job) {
    send_error(response, 404,
               "no provision job " + text + " (the agent keeps the last " +
                   std::to_string(ProvisionJobs::max_kept) +
                   "; finished ones are in GET /api/v1/provisions)");
    return;
  }
  send_json(response, 200, to_json(*job));
}

void HttpServer::Impl::scan(const httplib::Request& request, httplib::Response& response) {
  if (agent->token_required()) {
    const std::string token = bearer_token(request);
    if (token.empty() || !agent->token_matches(token)) {
      response.set_header("WWW-Authenticate", "Bearer realm=\"envcontract\"");
      send_error(response, 401,
                 token.empty() ? "this agent needs 'Authorization: Bearer <token>' to scan "
                                 "(the token is in the agent's token_file)"
                               : "the bearer token does not match the agent's token_file");
      return;
    }
  } else if (request.get_header_value("X-Requested-By").empty()) {
    // A header no HTML form can set: without a token, it is what keeps a
    // page of another site from making a browser queue scans here.
    send_error(response, 403,
               "a scan request needs an 'X-Requested-By' header (any value, e.g. "
               "'X-Requested-By: fleetctl'), or a token when the agent has one");
    return;
  }
  const auto id = agent->request_scan("api");
  // The state when the request was taken, not whatever the scheduler has
  // made of it a microsecond later: clients follow `url` for progress.
  const Json body = {
      {"id", id}, {"url", "/api/v1/scans/" + std::to_string(id)}, {"state", "queued"}};
  response.set_header("Location", "/api/v1/scans/" + std::to_string(id));
  send_json(response, 202, body);
}

// The CI gate's endpoints (daemon/gate_routes.hpp). A job's gate has no
// token (the agent's is root's): a header no HTML form can set keeps a page
// of another site from making a browser ask for gates or record decisions.
void HttpServer::Impl::gate(Endpoint endpoint, const httplib::Request& request,
                            httplib::Response& response) {
  if (endpoint != Endpoint::gate_decisions && request.get_header_value("X-Requested-By").empty()) {
    send_error(response, 403,
               "a gate request needs an 'X-Requested-By' header (any value, e.g. "
               "'X-Requested-By: envcontract-gate')");
    return;
  }
  const PlainRequest plain{request.method == "HEAD" ? "GET" : request.method, request.path,
                           request.params};
  PlainResponse answer = endpoint == Endpoint::gate          ? gate_answer(*agent, plain)
                         : endpoint == Endpoint::gate_record ? gate_record_answer(*agent, plain)
                                                             : gate_decisions_answer(*agent, plain);
  if (t_stream != nullptr) {
    t_stream->answer_within(settings.timeout);
  }
  response.status = answer.status;
  for (const auto& [name, value] : answer.headers) {
    response.set_header(name, value);
  }
  response.set_content(std::move(answer.body), answer.content_type);
}

void HttpServer::Impl::scan_ticket(const std::string& text, httplib::Response& response) {
  const auto ticket = agent->ticket(std::stoll(text));  // the route takes 1 to 15 digits
  if (!ticket) {
    send_error(response, 404, "no scan request " + text + " (the agent keeps the last 200)");
    return;
  }
  send_json(response, 200, ticket_json(*ticket));
}

void HttpServer::Impl::metrics(const httplib::Request& request, httplib::Response& response) {
  const auto snapshot = agent->snapshot();
  // The report's series are the same text until the next report or
  // contract, and the agent's until one of its figures changes: each is
  // rendered once for every scrape of it.
  const auto figures = agent_figures(*snapshot, *agent);
  SharedText report_series;
  SharedText agent_series;
  {
    std::lock_guard lock(metrics_mutex);
    if (!metrics_text || metrics_report != snapshot->report ||
        metrics_contract != snapshot->contract) {
      metrics_text = std::make_shared<const std::string>(render_report_metrics(*snapshot, version));
      metrics_report = snapshot->report;
      metrics_contract = snapshot->contract;
    }
    if (!metrics_agent_text || !(metrics_figures == figures)) {
      metrics_agent_text = std::make_shared<const std::string>(render_agent_metrics(figures));
      metrics_figures = figures;
    }
    report_series = metrics_text;
    agent_series = metrics_agent_text;
  }
  send_shared(request, response, std::move(report_series), std::move(agent_series),
              "text/plain; version=0.0.4; charset=utf-8");
}

void HttpServer::Impl::asset(const std::string& path, httplib::Response& response) {
  const auto* asset = web::find_asset(path);
  if (asset == nullptr) {
    send_error(response, 404, "no such file: " + path);
    return;
  }
  response.set_content(std::string(asset->body), std::string(asset->content_type));
  response.set_header("Cache-Control", "no-cache");
  // The page loads nothing but itself, and talks only to this agent->
  response.set_header("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'");
  response.set_header("X-Content-Type-Options", "nosniff");
}

httplib::Server::HandlerResponse HttpServer::Impl::dispatch(const httplib::Request& request,
                                                            httplib::Response& response) {
  constexpr std::size_t k_max_headers = 100;
  const auto handled = httplib::Server::HandlerResponse::Handled;
  if (t_stream != nullptr) {
    t_stream->gather_the_answer();  // every route answers without reading more
  }
  // The body, if any, is never read: the connection is not reused after it.
  if (request.has_header("Transfer-Encoding") ||
      request.get_header_value("Content-Length") != "0" ||
      request.get_header_value_count("Content-Length") > 1) {
    t_outcome.close_after = true;
  }
  if (t_health_only && request.path != "/healthz" && request.path != "/metrics") {
    response.set_header("Retry-After", "1");
    send_error(response, 503,
               "the agent's connections are all taken (http_max_connections, at most "
               "http_max_connections_per_client from one address); this one was kept for health "
               "checks and answers only /healthz and /metrics: retry shortly");
    return handled;
  }
  const std::string length = request.get_header_value("Content-Length");
  std::uint64_t declared = 0;
  const auto [end, error] = std::from_chars(length.data(), length.data() + length.size(), declared);
  if (error == std::errc::result_out_of_range ||
      (error == std::errc() && declared > k_max_request_body)) {
    send_error(response, 413,
               "request body too large (at most " + std::to_string(k_max_request_body) + " bytes)");
    return handled;
  }
  if (!host_allowed(request.get_header_value("Host"), hosts)) {
    send_error(response, 421,
               "this server does not answer for host '" +
                   printable(request.get_header_value("Host"), 200) +
                   "'; ask it by IP address or localhost, or add the name to " +
                   settings.allowed_hosts_setting);
    return handled;
  }
  if (t_outcome.header_count > k_max_headers) {
    send_error(response, 431,
               "too many header fields (" + std::to_string(t_outcome.header_count) + "; at most " +
                   std::to_string(k_max_headers) + ")");
    return handled;
  }
  if (handler) {
    answer_with_handler(request, response);
    return handled;
  }
  const auto route = match_route(request.method, request.path);
  if (route.outcome == RouteMatch::Outcome::not_found) {
    send_json(response, 404,
              {{"error", "no such endpoint: " + request.method + " " + request.path},
               {"endpoints", endpoint_list()}});
    return handled;
  }
  if (route.outcome == RouteMatch::Outcome::wrong_method) {
    response.set_header("Allow", route.allowed);
    send_error(response, 405,
               request.method + " is not allowed on " + request.path + "; use " + route.allowed);
    return handled;
  }
  switch (route.endpoint) {
    case Endpoint::healthz:
      healthz(response);
      break;
    case Endpoint::report:
      report(request, response);
      break;
    case Endpoint::env:
      env(route.argument, response);
      break;
    case Endpoint::history:
      history(request, response);
      break;
    case Endpoint::contract:
      contract(response);
      break;
    case Endpoint::compliance:
      compliance(response);
      break;
    case Endpoint::plan:
      plan(request, response);
      break;
    case Endpoint::provisions:
      provisions(request, response);
      break;
    case Endpoint::provision:
      provision(request, response, false);
      break;
    case Endpoint::promote:
      provision(request, response, true);
      break;
    case Endpoint::provision_job:
      provision_job(route.argument, response);
      break;
    case Endpoint::scan:
      scan(request, response);
      break;
    case Endpoint::scan_ticket:
      scan_ticket(route.argument, response);
      break;
    case Endpoint::gate:
    case Endpoint::gate_record:
    case Endpoint::gate_decisions:
      gate(route.endpoint, request, response);
      break;
    case Endpoint::metrics:
      metrics(request, response);
      break;
    case Endpoint::asset:
      asset(route.argument, response);
      break;
  }
  return handled;
}

void HttpServer::Impl::answer_with_handler(const httplib::Request& request,
                                           httplib::Response& response) {
  PlainRequest plain{request.method == "HEAD" ? "GET" : request.method, request.path,
                     request.params};
  PlainResponse answer = handler(plain);
  response.status = answer.status;
  for (const auto& [name, value] : answer.headers) {
    response.set_header(name, value);
  }
  response.set_content(std::move(answer.body), answer.content_type);
}

void HttpServer::Impl::routes() {
  server.set_pre_routing_handler(
      [this](const httplib::Request& request, httplib::Response& response) {
        return dispatch(request, response);
      });
  // What httplib answers itself: malformed requests, oversized ones.
  server.set_error_handler([this](const httplib::Request&, httplib::Response& response) {
    if (!response.body.empty()) {
      return;  // our own error answer
    }
    if (t_stream != nullptr && t_stream->over_budget()) {
      send_error(response, 431,
                 "request too large: the request line, headers and body may be at most " +
                     std::to_string(ConnectionLimits{}.request_bytes / 1024) + " KiB");
    } else if (t_stream != nullptr && t_stream->past_deadline()) {
      send_error(response, 408, "the request took longer than " + settings.timeout_setting);
    } else if (response.status == 413) {
      send_error(
          response, 413,
          "request body too large (at most " + std::to_string(k_max_request_body) + " bytes)");
    } else if (response.status == 414) {
      send_error(response, 414, "request target too long");
    } else if (response.status == 400) {
      send_error(response, 400, "malformed request");
    } else {
      send_error(response, response.status, "request failed");
    }
  });
  server.set_exception_handler(
      [](const httplib::Request& request, httplib::Response& response, std::exception_ptr error) {
        std::string what = "unknown error";
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        spdlog::error("{} {}: {}", printable(request.method, 16), printable(request.path), what);
        send_error(response, 500, "internal error: " + what);
      });
  server.set_logger([](const httplib::Request& request, const httplib::Response& response) {
    t_outcome.status = response.status;
    spdlog::debug("{} {} -> {}", printable(request.method, 16), printable(request.path),
                  response.status);
  });
}

HttpSettings HttpSettings::of(const AgentConfig& config) {
  HttpSettings settings;
  settings.threads = config.http_threads;
  settings.max_connections = config.http_max_connections;
  settings.max_connections_per_client = config.http_max_connections_per_client;
  settings.timeout = config.http_timeout;
  settings.idle_thread_life = config.http_idle_thread_life;
  settings.listen = config.listen;
  settings.allowed_hosts = config.http_allowed_hosts;
  return settings;
}

HttpServer::HttpServer(Agent& agent, std::string version)
    : HttpServer(HttpSettings::of(agent.config()), &agent, std::move(version), nullptr) {}

HttpServer::HttpServer(const HttpSettings& settings, RequestHandler handler)
    : HttpServer(settings, nullptr, "", std::move(handler)) {}

HttpServer::HttpServer(const HttpSettings& settings, Agent* agent, std::string version,
                       RequestHandler handler)
    : m_impl(std::make_unique<Impl>(agent, std::move(version), std::move(handler))) {
  auto& impl = *m_impl;
  impl.settings = settings;
  auto& server = impl.server;
  // Threads past the connections accepted would never serve: the bound on
  // connections holds whatever http_threads says.
  impl.max_connections = std::max<std::size_t>(1, settings.max_connections);
  const auto threads =
      static_cast<unsigned>(std::clamp<std::size_t>(settings.threads, 1, impl.max_connections));
  server.new_task_queue = [&impl, threads] {
    auto* queue = new ConnectionQueue(
        threads,
        ConnectionBounds::of(impl.max_connections, impl.settings.max_connections_per_client),
        impl.settings.idle_thread_life,
        [&impl](const Connection& connection) { impl.server.serve_connection(connection); },
        BoundedServer::turn_away);
    queue->on_shutdown([&impl] {
      std::lock_guard lock(impl.queue_mutex);
      impl.server.queue = nullptr;
    });
    {
      std::lock_guard lock(impl.queue_mutex);
      impl.server.queue = queue;
      impl.listened = true;
    }
    return queue;
  };
  server.set_payload_max_length(k_max_request_body);
  const auto timeout = std::chrono::duration_cast<std::chrono::seconds>(settings.timeout);
  server.set_read_timeout(std::max<time_t>(1, timeout.count()));
  server.set_write_timeout(std::max<time_t>(1, timeout.count()));
  server.set_keep_alive_timeout(5);
  server.set_keep_alive_max_count(100);
  server.set_tcp_nodelay(true);
  // httplib's default sets SO_REUSEPORT, with which a second agent binds the
  // same port and the kernel spreads requests over both. SO_REUSEADDR alone
  // still lets a restarted agent bind past TIME_WAIT, and a taken port fails.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server.limits.request_timeout = settings.timeout;
  impl.hosts = make_host_policy(
      parse_listen_address(settings.listen).value_or(ListenAddress{}).host, settings.allowed_hosts);
  impl.routes();
}

HttpServer::~HttpServer() {
  stop();
  if (m_impl->thread.joinable()) {
    m_impl->thread.join();
  }
}

common::Result<int> HttpServer::bind(const ListenAddress& address) {
  auto& server = m_impl->server;
  if (address.host.find(':') != std::string::npos) {
    server.set_address_family(AF_INET6);
  }
  m_impl->hosts.names.push_back(address.host);
  if (address.port == 0) {
    const int port = server.bind_to_any_port(address.host);
    if (port < 0) {
      return common::Error{"cannot listen on " + address.host + ": " + std::strerror(errno)};
    }
    server.set_backlog(static_cast<int>(m_impl->max_connections));
    m_impl->port = port;
    return port;
  }
  if (!server.bind_to_port(address.host, address.port)) {
    return common::Error{"cannot listen on " + address.host + ":" + std::to_string(address.port) +
                         ": " + std::strerror(errno) +
                         " (is another agent running? choose another --listen)"};
  }
  server.set_backlog(static_cast<int>(m_impl->max_connections));
  m_impl->port = address.port;
  return address.port;
}

common::Result<int> HttpServer::start() {
  try {
    m_impl->thread = std::thread([this] { serve(); });
  } catch (const std::system_error& e) {
    return common::Error{std::string("cannot start the HTTP server's thread: ") + e.what() +
                         " (is the unit's TasksMax reached?)"};
  }
  return m_impl->port;
}

void HttpServer::serve() {
  auto& impl = *m_impl;
  {
    std::lock_guard lock(impl.serve_mutex);
    if (impl.stop_requested) {
      return;
    }
    impl.serve_entered = true;
  }
  impl.server.listen_after_bind();
  impl.serve_returned = true;
}

void HttpServer::stop() {
  auto& impl = *m_impl;
  bool entered = false;
  {
    std::lock_guard lock(impl.serve_mutex);
    impl.stop_requested = true;
    entered = impl.serve_entered;
  }
  if (!entered) {
    impl.server.close_listener();  // bound, never served: serve() will not begin
    return;
  }
  // httplib's stop() stops only a server that has begun to run: one stopped
  // just after serve() was called would otherwise listen for good. The wait
  // is the few instructions from serve()'s start to httplib's flag.
  while (!impl.server.is_running() && !impl.serve_returned) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  impl.server.stop();
}

std::string HttpServer::liveness_problem() const {
  auto& impl = *m_impl;
  std::lock_guard lock(impl.queue_mutex);
  if (!impl.listened) {
    return "";  // still starting: serve() has not begun to listen
  }
  const ConnectionQueue* queue = impl.server.queue.load();
  if (!impl.server.is_running() || queue == nullptr) {
    return "the HTTP side is not accepting connections";
  }
  // Busy threads are not stuck ones: each connection is bounded by
  // http_timeout, so under any load a waiting connection gets a thread
  // within it. A connection that has waited several time-outs means every
  // thread hangs.
  const auto bound =
      std::max<std::chrono::milliseconds>(std::chrono::seconds(30), 3 * impl.settings.timeout);
  if (const auto waited = queue->oldest_wait(); waited > bound) {
    return "a connection has waited " +
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(waited).count()) +
           " s for an HTTP thread: every thread is stuck";
  }
  return "";
}

}  // namespace envcontract::daemon
