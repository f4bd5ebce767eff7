#include "daemon/bounded_http_server.hpp"

#include "daemon/http_routes.hpp"

#include <spdlog/spdlog.h>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
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

int poll_for(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd descriptor{fd, events, 0};
  int ready;
  do {
    ready = ::poll(&descriptor, 1, static_cast<int>(std::max<std::int64_t>(0, timeout.count())));
  } while (ready < 0 && errno == EINTR);
  return ready > 0 && (descriptor.revents & (events | POLLHUP | POLLERR)) ? ready : 0;
}

// After answering a request whose body is never read: the client may still
// be writing it (a body sent after its head, or more than the sockets
// buffer), and its writes would meet the reset that a close with bytes
// unread sends, so that it may never read the answer. Says we are done and
// reads what comes, discarded, until the client closes, 1 MiB or a second
// (as nginx's lingering close).
void drain_unread_body(int sock) {
  ::shutdown(sock, SHUT_WR);
  const auto deadline = Clock::now() + std::chrono::seconds(1);
  std::size_t drained = 0;
  char discard[16384];
  while (drained < (std::size_t{1} << 20)) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || poll_for(sock, POLLIN, left) <= 0) {
      return;
    }
    const ssize_t got = ::recv(sock, discard, sizeof discard, MSG_DONTWAIT);
    if (got <= 0 && !(got < 0 && (errno == EINTR || errno == EAGAIN))) {
      return;  // the client closed, or the connection failed
    }
    drained += got > 0 ? static_cast<std::size_t>(got) : 0;
  }
}

}  // namespace

// A connection accepted: its socket, the address it came from and what it may ask.
struct BoundedServer::Connection {
  int fd = -1;
  std::string client;
  Admission admission = Admission::serve;
};

// A connection's socket with the request's deadline: reads append to the
// bytes not yet taken (pipelined requests are kept), and an answer leaves
// in one message when the socket has room (with TCP_NODELAY each send is a
// segment and a wake-up of the client), waiting for room until the deadline.
class BoundedServer::Stream {
 public:
  explicit Stream(int fd) : m_fd(fd) {}

  int fd() const { return m_fd; }
  void set_deadline(Clock::time_point deadline) { m_deadline = deadline; }
  Clock::time_point deadline() const { return m_deadline; }
  bool past_deadline() const { return Clock::now() >= m_deadline; }

  // Bytes read and not yet taken by a request.
  std::string& pending() { return m_pending; }

  // Waits up to `wait` for bytes and appends them to pending(): how many
  // came, 0 when the peer closed, k_no_bytes_yet when none came in time,
  // -1 when the connection failed.
  static constexpr ssize_t k_no_bytes_yet = -2;
  ssize_t read_more(std::chrono::milliseconds wait) {
    if (poll_for(m_fd, POLLIN, wait) <= 0) {
      return k_no_bytes_yet;
    }
    std::array<char, 16384> buffer;
    ssize_t got;
    do {
      got = ::recv(m_fd, buffer.data(), buffer.size(), 0);
    } while (got < 0 && errno == EINTR);
    if (got > 0) {
      m_pending.append(buffer.data(), static_cast<std::size_t>(got));
    }
    return got;
  }

  // Reads until the deadline: what read_more() returns.
  ssize_t read_before_deadline() {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(m_deadline - Clock::now());
    if (left.count() <= 0) {
      return k_no_bytes_yet;
    }
    return read_more(left);
  }

  // Sends every piece, in one message while the socket has room; false
  // when the connection failed or stayed full past the deadline.
  bool send_all(std::vector<std::string_view> pieces) {
    std::erase_if(pieces, [](std::string_view piece) { return piece.empty(); });
    std::size_t first = 0;
    while (first < pieces.size()) {
      std::vector<iovec> parts;
      parts.reserve(std::min<std::size_t>(pieces.size() - first, IOV_MAX));
      for (std::size_t i = first; i < pieces.size() && parts.size() < IOV_MAX; ++i) {
        parts.push_back({const_cast<char*>(pieces[i].data()), pieces[i].size()});
      }
      msghdr message{};
      message.msg_iov = parts.data();
      message.msg_iovlen = parts.size();
      const ssize_t sent = ::sendmsg(m_fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent < 0) {
        if (errno == EINTR) {
          continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          return false;
        }
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(m_deadline - Clock::now());
        if (left.count() <= 0 || poll_for(m_fd, POLLOUT, left) <= 0) {
          return false;
        }
        continue;
      }
      // Past the pieces sent whole, into the one sent in part.
      auto count = static_cast<std::size_t>(sent);
      while (first < pieces.size() && count >= pieces[first].size()) {
        count -= pieces[first].size();
        ++first;
      }
      if (first < pieces.size()) {
        pieces[first].remove_prefix(count);
      }
    }
    return true;
  }

 private:
  int m_fd;
  Clock::time_point m_deadline = Clock::time_point::max();
  std::string m_pending;
};

// This queue admits each connection as it is accepted (ConnectionAdmission:
// a bound in all, a bound per client address, a reserve for health checks):
// one turned away is answered 503 at once by a thread of its own instead of
// waiting behind the others, and the connection loop closes keep-alive
// connections early while others wait, so that a few clients cannot hold
// every thread. Serving threads start when connections outnumber idle ones,
// up to `threads`, and end after a spell with nothing to serve: an idle
// agent keeps one, not a stack and malloc cache per thread it may start (32
// of them were 1.3 MB of its RSS, bench/footprint.sh).
class ConnectionQueue final {
 public:
  using Handler = std::function<void(const BoundedServer::Connection&)>;

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

  // Ends every thread once the connections they serve have ended.
  void shutdown() {
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

  // Admits a connection just accepted (on the accepting thread, by its
  // peer's address, before it can hold anything) and hands it to a thread.
  void admit(int fd) {
    BoundedServer::Connection connection{fd, peer_address(fd)};
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

 private:
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

  void work(std::deque<BoundedServer::Connection>& queue, bool turning_away) {
    auto& ready = turning_away ? m_turned_away_ready : m_jobs_ready;
    bool started = false;
    for (;;) {
      BoundedServer::Connection connection;
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
      try {
        m_serve(connection);
      } catch (const std::exception& e) {
        // Out of memory (a gzip answer, a request's copy): this connection
        // ends, the agent and its other connections go on.
        spdlog::error("an HTTP connection from {} failed: {}", connection.client, e.what());
      }
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
  std::deque<BoundedServer::Connection> m_jobs;
  std::deque<BoundedServer::Connection> m_turned_away;
  std::size_t m_serving = 0;   // serving threads started and not ended
  std::size_t m_idle = 0;      // of them, those waiting for a connection
  std::size_t m_starting = 0;  // of them, those not yet running
  bool m_shutdown = false;
  std::deque<std::chrono::steady_clock::time_point> m_enqueued;  // of each job in m_jobs
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

// The status a failure is answered with, for the log.
const char* failure_name(RequestFailure failure) {
  switch (failure) {
    case RequestFailure::malformed:
      return "malformed";
    case RequestFailure::too_large:
      return "too large";
    case RequestFailure::target_too_long:
      return "target too long";
    case RequestFailure::past_deadline:
      return "past its deadline";
  }
  return "failed";
}

}  // namespace

BoundedServer::BoundedServer(ServerSettings settings, Handler handler, FailureHandler failure)
    : m_settings(std::move(settings)),
      m_handler(std::move(handler)),
      m_failure(std::move(failure)),
      m_wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (m_wake < 0) {
    throw std::system_error(errno, std::generic_category(), "cannot make the HTTP side's eventfd");
  }
}

BoundedServer::~BoundedServer() {
  stop();
  close_listener();
  ::close(m_wake);
}

common::Result<int> BoundedServer::bind(const std::string& host, int port, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const std::string where = port == 0 ? host : host + ":" + service;
  if (const int code =
          ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
      code != 0) {
    return common::Error{"cannot listen on " + where + ": " + ::gai_strerror(code)};
  }
  int error = 0;
  int listener = -1;
  for (const addrinfo* address = found; address != nullptr && listener < 0;
       address = address->ai_next) {
    // Non-blocking: a connection gone between poll() and accept4() must not
    // leave the accepting thread blocked where stop() cannot wake it.
    const int sock =
        ::socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                 address->ai_protocol);
    if (sock < 0) {
      error = errno;
      continue;
    }
    // SO_REUSEADDR lets a restarted agent bind past TIME_WAIT; never
    // SO_REUSEPORT, with which a second agent would bind the same port and
    // the kernel spread requests over both.
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (address->ai_family == AF_INET6) {
      // "::" serves IPv4 clients too, whatever net.ipv6.bindv6only says.
      const int no = 0;
      ::setsockopt(sock, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
    }
    if (::bind(sock, address->ai_addr, address->ai_addrlen) != 0 ||
        ::listen(sock, std::max(backlog, 16)) != 0) {
      error = errno;
      ::close(sock);
      continue;
    }
    listener = sock;
  }
  ::freeaddrinfo(found);
  if (listener < 0) {
    return common::Error{"cannot listen on " + where + ": " + std::strerror(error) +
                         (port == 0 ? "" : " (is another agent running? choose another --listen)")};
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&bound), &length);
  const int bound_port = bound.ss_family == AF_INET6
                             ? ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port)
                             : ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
  std::lock_guard lock(m_mutex);
  if (m_listener >= 0) {
    ::close(m_listener);
  }
  m_listener = listener;
  return bound_port;
}

void BoundedServer::serve() {
  {
    std::lock_guard lock(m_mutex);
    if (m_stopping || m_listener < 0) {
      return;
    }
    m_served = true;
    m_queue = std::make_unique<ConnectionQueue>(
        m_settings.threads, m_settings.bounds, m_settings.idle_thread_life,
        [this](const Connection& connection) { serve_connection(connection); }, turn_away);
    m_accepting = true;
  }
  accept_loop();
  {
    // Closed before the connections served end (up to http_timeout): a
    // client that comes meanwhile is refused at once, not left in the
    // backlog until the agent has gone.
    std::lock_guard lock(m_mutex);
    m_accepting = false;
    ::close(m_listener);
    m_listener = -1;
  }
  m_queue->shutdown();  // the serving threads see m_stopping and end
  std::lock_guard lock(m_mutex);
  m_queue.reset();
}

void BoundedServer::stop() {
  std::lock_guard lock(m_mutex);
  m_stopping = true;
  const std::uint64_t one = 1;
  (void)!::write(m_wake, &one, sizeof one);
  if (!m_served && m_listener >= 0) {
    ::close(m_listener);  // bound, never served: serve() will not begin
    m_listener = -1;
  }
}

void BoundedServer::close_listener() {
  std::lock_guard lock(m_mutex);
  if (m_listener >= 0 && !m_accepting) {
    ::close(m_listener);
    m_listener = -1;
  }
}

void BoundedServer::accept_loop() {
  std::optional<Clock::time_point> last_warning;
  while (!m_stopping) {
    std::array<pollfd, 2> waits{{{m_listener, POLLIN, 0}, {m_wake, POLLIN, 0}}};
    if (::poll(waits.data(), waits.size(), -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      spdlog::error("the HTTP side cannot wait for connections: {}", std::strerror(errno));
      return;
    }
    if (m_stopping) {
      return;
    }
    if ((waits[0].revents & POLLIN) == 0) {
      continue;
    }
    const int sock = ::accept4(m_listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (sock < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors or memory: the connection waits in the backlog
        // while others end; once a minute at most in the log.
        if (const auto now = Clock::now();
            !last_warning || now - *last_warning >= std::chrono::minutes(1)) {
          last_warning = now;
          spdlog::warn("cannot accept an HTTP connection: {}", std::strerror(errno));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      continue;  // EINTR, EAGAIN, a connection aborted before it was accepted
    }
    const int yes = 1;
    ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    m_queue->admit(sock);
  }
}

std::string BoundedServer::liveness_problem(std::chrono::milliseconds bound) const {
  std::lock_guard lock(m_mutex);
  if (!m_served) {
    return "";  // still starting: the accepting loop has not begun
  }
  if (!m_accepting || m_queue == nullptr) {
    return "the HTTP side is not accepting connections";
  }
  if (const auto waited = m_queue->oldest_wait(); waited > bound) {
    return "a connection has waited " +
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(waited).count()) +
           " s for an HTTP thread: every thread is stuck";
  }
  return "";
}

bool BoundedServer::others_wait() const {
  // The queue outlives the serving threads that ask (shutdown() joins them).
  return m_queue != nullptr && m_queue->waiting() > 0;
}

// Serves an admitted connection until it ends; the caller closes it. One
// taken in the health checks' reserve serves one request and has a second
// to send it.
void BoundedServer::serve_connection(const Connection& connection) {
  const auto& limits = m_settings.limits;
  const bool health_only = connection.admission == Admission::health_only;
  Stream stream(connection.fd);
  for (std::size_t served = 0; served < limits.keep_alive_requests; ++served) {
    if (m_stopping || !wait_for_request(stream, served == 0, health_only)) {
      return;
    }
    stream.set_deadline(Clock::now() + limits.request_timeout);
    RequestHeadReader reader(limits.request_bytes);
    std::optional<RequestFailure> failure;
    for (;;) {
      stream.pending().erase(0, reader.add(stream.pending()));
      if (reader.done()) {
        break;
      }
      if (reader.problem() != HeadProblem::none) {
        failure = reader.problem() == HeadProblem::too_large ? RequestFailure::too_large
                  : reader.problem() == HeadProblem::target_too_long
                      ? RequestFailure::target_too_long
                      : RequestFailure::malformed;
        break;
      }
      const ssize_t got = stream.read_before_deadline();
      if (got == 0) {
        return;  // the peer closed mid-request: nobody to answer
      }
      if (got == Stream::k_no_bytes_yet) {
        failure = RequestFailure::past_deadline;
        break;
      }
      if (got < 0) {
        return;  // the connection broke
      }
    }
    if (failure) {
      spdlog::debug("a request from {} was {}", connection.client, failure_name(*failure));
      PlainResponse refused = m_failure(*failure);
      // A second to say why, whatever the request's own time left.
      stream.set_deadline(Clock::now() + std::chrono::seconds(1));
      const std::string head = answer_head(refused.status, {{"Content-Type", refused.content_type}},
                                           refused.body.size(), false);
      stream.send_all({head, refused.body});
      return;
    }
    ServedRequest request{reader.take_head(), connection.client, health_only, std::nullopt};
    const bool last =
        health_only || served + 1 == limits.keep_alive_requests || others_wait() || m_stopping;
    if (!answer(stream, request, last)) {
      if (request.head.has_body()) {
        drain_unread_body(connection.fd);
      }
      return;
    }
  }
}

bool BoundedServer::answer(Stream& stream, ServedRequest& request, bool last) {
  const RequestHead& head = request.head;
  // A client that waits for "100 Continue" before it sends its body gets
  // the final answer instead, which tells it not to send the body (RFC 9110,
  // 10.1.1): no route reads one, and one sent would be drained for nothing.
  PlainResponse response;
  try {
    response = m_handler(request);
  } catch (const std::exception& e) {
    spdlog::error("{} {}: {}", printable(head.method, 16), printable(head.path), e.what());
    response = error_answer(500, std::string("internal error: ") + e.what());
  }
  spdlog::debug("{} {} -> {}", printable(head.method, 16), printable(head.path), response.status);
  if (request.answer_within) {
    stream.set_deadline(Clock::now() + *request.answer_within);
  }
  const bool keep_alive = !last && head.keep_alive && !head.has_body() && response.status < 400;

  std::erase(response.shared, nullptr);
  std::vector<std::string_view> body{response.body};
  for (const auto& piece : response.shared) {
    body.emplace_back(*piece);
  }
  std::size_t length = 0;
  for (const auto piece : body) {
    length += piece.size();
  }
  std::vector<std::pair<std::string, std::string>> headers;
  headers.reserve(response.headers.size() + 2);
  headers.emplace_back("Content-Type", response.content_type);
  std::string compressed;
  if (length > 0 && compressible(response.content_type) &&
      accepts_gzip(head.header("Accept-Encoding"))) {
    compressed = gzip(body);
    body = {compressed};
    length = compressed.size();
    headers.emplace_back("Content-Encoding", "gzip");
  }
  headers.insert(headers.end(), response.headers.begin(), response.headers.end());
  if (keep_alive && !head.http_1_1) {
    headers.emplace_back("Connection", "keep-alive");  // an HTTP/1.0 client reuses it only so
  }
  const std::string answer_head_text = answer_head(response.status, headers, length, keep_alive);
  if (head.method == "HEAD") {
    body.clear();
  }
  body.insert(body.begin(), answer_head_text);
  return stream.send_all(std::move(body)) && keep_alive;
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
bool BoundedServer::wait_for_request(Stream& stream, bool first, bool health_only) {
  const auto& limits = m_settings.limits;
  if (!stream.pending().empty()) {
    return true;  // pipelined
  }
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
    if (waited >= limit || m_stopping || (waited >= patience && others_wait())) {
      return false;
    }
    const ssize_t got = stream.read_more(std::min(k_slice, limit - waited));
    if (got > 0) {
      return true;
    }
    if (got != Stream::k_no_bytes_yet) {
      return false;  // the peer closed, or the connection broke
    }
  }
}

}  // namespace envcontract::daemon
