#include "daemon/bounded_http_server.hpp"

#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <list>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace envcontract::daemon {

namespace {

using Clock = std::chrono::steady_clock;

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

}  // namespace

// A connection accepted: its socket, the address it came from and what it may ask.
struct Connection {
  int fd = -1;
  std::string client;
  Admission admission = Admission::serve;
};

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

namespace {

thread_local RequestOutcome t_outcome;
// Set on the thread serving a connection taken in the health checks' reserve.
thread_local bool t_health_only = false;
thread_local ConnectionStream* t_stream = nullptr;

}  // namespace

RequestOutcome& current_request_outcome() {
  return t_outcome;
}

bool serving_health_checks_only() {
  return t_health_only;
}

void gather_current_answer() {
  if (t_stream != nullptr) {
    t_stream->gather_the_answer();
  }
}

void answer_current_request_within(std::chrono::milliseconds time) {
  if (t_stream != nullptr) {
    t_stream->answer_within(time);
  }
}

bool current_request_over_budget() {
  return t_stream != nullptr && t_stream->over_budget();
}

bool current_request_past_deadline() {
  return t_stream != nullptr && t_stream->past_deadline();
}

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

namespace {

// A 503 answer, whole, for a connection turned away.
std::string refusal(const std::string& message) {
  const std::string body = "{\"error\": \"" + message + "\"}\n";
  return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
         "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

void BoundedServer::serve_through_queue(unsigned threads, ConnectionBounds bounds,
                                        std::chrono::milliseconds idle_thread_life) {
  new_task_queue = [this, threads, bounds, idle_thread_life] {
    auto* queue = new ConnectionQueue(
        threads, bounds, idle_thread_life,
        [this](const Connection& connection) { serve_connection(connection); }, turn_away);
    queue->on_shutdown([this] {
      std::lock_guard lock(m_queue_mutex);
      m_queue = nullptr;
    });
    {
      std::lock_guard lock(m_queue_mutex);
      m_queue = queue;
      m_listened = true;
    }
    return queue;
  };
}

void BoundedServer::set_backlog(int backlog) {
  ::listen(svr_sock_, backlog);
}

void BoundedServer::close_listener() {
  const socket_t sock = svr_sock_.exchange(INVALID_SOCKET);
  if (sock != INVALID_SOCKET) {
    ::close(sock);
  }
}

std::string BoundedServer::liveness_problem(std::chrono::milliseconds bound) const {
  std::lock_guard lock(m_queue_mutex);
  if (!m_listened) {
    return "";  // still starting: the listen loop has not begun
  }
  const ConnectionQueue* queue = m_queue.load();
  if (!is_running() || queue == nullptr) {
    return "the HTTP side is not accepting connections";
  }
  if (const auto waited = queue->oldest_wait(); waited > bound) {
    return "a connection has waited " +
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(waited).count()) +
           " s for an HTTP thread: every thread is stuck";
  }
  return "";
}

bool BoundedServer::others_wait() const {
  // Loaded once: shutdown() clears it before it joins the serving threads,
  // and the queue outlives them.
  const ConnectionQueue* queue = m_queue.load();
  return queue != nullptr && queue->waiting() > 0;
}

bool BoundedServer::process_and_close_socket(socket_t sock) {
  if (t_handing_over) {
    t_handed_over = sock;
    return true;
  }
  serve_connection({sock, peer_address(sock)});
  close_gently(sock);
  return true;
}

// Serves an admitted connection until it ends; the caller closes it. One
// taken in the health checks' reserve serves one request and has a second
// to send it.
void BoundedServer::serve_connection(const Connection& connection) {
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
    const bool last = health_only || served + 1 == limits.keep_alive_requests || others_wait() ||
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
void BoundedServer::turn_away(const Connection& connection) {
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

// The next request's first byte, waited for in short slices: a connection
// that stays silent while others wait for a thread gives its thread up
// (after 1 s for a new connection, at once for an idle keep-alive one), so
// that silent connections cannot hold every thread. A connection in the
// health checks' reserve has a second in all: a checker asks at once, and
// a silent client would keep the reserve from the next one.
bool BoundedServer::wait_for_request(ConnectionStream& stream, bool first, bool health_only) {
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
    if (waited >= limit || svr_sock_ == INVALID_SOCKET || (waited >= patience && others_wait())) {
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

}  // namespace envcontract::daemon
