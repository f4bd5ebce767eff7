// daemon/bounded_http_server.cpp: the agent's HTTP server with routes of the
// test's own, over real sockets on loopback: what it answers, when it
// closes, how it stops. (The agent's routes and limits over it, end to end:
// tests/e2e/test_http_limits.cpp.)
#include "daemon/bounded_http_server.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

namespace envcontract::daemon {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A connection to 127.0.0.1:`port`, or -1.
int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends until it closes or `timeout` passes; sets
// `closed` when it closed.
std::string read_until_closed(int fd, std::chrono::milliseconds timeout, bool* closed = nullptr) {
  std::string received;
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    pollfd descriptor{fd, POLLIN, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (::poll(&descriptor, 1, static_cast<int>(left.count())) <= 0) {
      break;
    }
    char chunk[4096];
    const ssize_t got = ::recv(fd, chunk, sizeof chunk, 0);
    if (got <= 0) {
      if (closed != nullptr) {
        *closed = true;
      }
      break;
    }
    received.append(chunk, static_cast<std::size_t>(got));
  }
  return received;
}

// One exchange on a new connection: all the server sent until it closed.
std::string exchange(int port, const std::string& request) {
  const int fd = connect_to(port);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  auto answer = read_until_closed(fd, 10s);
  ::close(fd);
  return answer;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++count;
  }
  return count;
}

// A server with routes of its own on a port of the kernel's choosing,
// serving on a thread until the test ends.
class Server {
 public:
  explicit Server(BoundedServer::Handler handler, ServerSettings settings = {}, bool start = true,
                  const std::string& host = "127.0.0.1")
      : m_server(std::move(settings), std::move(handler), [](RequestFailure failure) {
          return error_answer(failure == RequestFailure::past_deadline ? 408 : 400, "refused");
        }) {
    auto port = m_server.bind(host, 0, 16);
    EXPECT_TRUE(port) << (port ? "" : port.error());
    m_port = port ? port.value() : 0;
    if (start) {
      m_thread = std::thread([this] { m_server.serve(); });
    }
  }
  ~Server() {
    m_server.stop();
    if (m_thread.joinable()) {
      m_thread.join();
    }
  }

  int port() const { return m_port; }
  BoundedServer& server() { return m_server; }
  std::thread& thread() { return m_thread; }

 private:
  BoundedServer m_server;
  int m_port = 0;
  std::thread m_thread;
};

PlainResponse text(const std::string& body) {
  PlainResponse response;
  response.content_type = "text/plain";
  response.body = body;
  return response;
}

TEST(BoundedServer, PipelinedRequestsAreAnsweredInTheirOrderOnOneConnection) {
  Server server([](ServedRequest& request) { return text(request.head.path + "\n"); });
  const std::string answers =
      exchange(server.port(),
               "GET /one HTTP/1.1\r\nHost: a\r\n\r\nGET /two HTTP/1.1\r\nHost: a\r\n\r\n"
               "GET /three HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  const auto one = answers.find("/one\n");
  const auto two = answers.find("/two\n");
  const auto three = answers.find("/three\n");
  ASSERT_NE(one, std::string::npos) << answers;
  ASSERT_NE(two, std::string::npos) << answers;
  ASSERT_NE(three, std::string::npos) << answers;
  EXPECT_LT(one, two);
  EXPECT_LT(two, three);
  EXPECT_EQ(count_of(answers, "Keep-Alive: timeout=5"), 2U) << answers;
  EXPECT_EQ(count_of(answers, "Connection: close"), 1U) << answers;
}

TEST(BoundedServer, HeadIsAnsweredWithTheLengthAndWithoutTheBody) {
  Server server([](ServedRequest&) { return text("twelve bytes"); });
  const std::string answer =
      exchange(server.port(), "HEAD / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 OK\r\n")) << answer;
  EXPECT_NE(answer.find("Content-Length: 12\r\n"), std::string::npos) << answer;
  EXPECT_TRUE(answer.ends_with("\r\n\r\n")) << "a body was sent: " << answer;
}

TEST(BoundedServer, ARequestWithABodyOrOfHttpOneZeroEndsItsConnection) {
  std::atomic<int> served{0};
  Server server([&](ServedRequest&) {
    ++served;
    return text("ok");
  });
  // The body would be read as the next request were the connection kept.
  const std::string with_body = exchange(
      server.port(),
      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 32\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n");
  EXPECT_EQ(count_of(with_body, "HTTP/1.1 200"), 1U) << with_body;
  EXPECT_NE(with_body.find("Connection: close"), std::string::npos) << with_body;
  const std::string old = exchange(server.port(), "GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n");
  EXPECT_EQ(count_of(old, "HTTP/1.1 200"), 1U) << old;
  EXPECT_EQ(served, 2);
}

TEST(BoundedServer, AnHttpOneZeroClientThatAsksToKeepItsConnectionIsToldItIsKept) {
  Server server([](ServedRequest&) { return text("ok"); });
  const std::string answers = exchange(
      server.port(), "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\n\r\n");
  EXPECT_EQ(count_of(answers, "HTTP/1.1 200"), 2U) << answers;
  EXPECT_EQ(count_of(answers, "Connection: keep-alive\r\n"), 1U) << answers;
  EXPECT_EQ(count_of(answers, "Connection: close\r\n"), 1U) << answers;
}

// A client that writes its whole body before it reads (a POST whose body
// comes in pieces after its head) may still be writing when the answer
// comes: the agent reads what it will not use, for a while, before it
// closes, so that the client's writes do not meet a reset.
TEST(BoundedServer, AnAnswerBeforeABodyStillWrittenReachesItsClient) {
  Server server([](ServedRequest&) { return error_answer(413, "request body too large"); });
  const int fd = connect_to(server.port());
  ASSERT_GE(fd, 0);
  const std::string head =
      "POST /api/v1/scan HTTP/1.1\r\nHost: a\r\nContent-Length: 400000\r\n\r\n";
  ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  std::this_thread::sleep_for(300ms);  // answered meanwhile
  const std::string piece(25000, 'b');
  int pieces_sent = 0;
  for (; pieces_sent < 16; ++pieces_sent) {
    if (::send(fd, piece.data(), piece.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(piece.size())) {
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(pieces_sent, 16) << "a write met a reset: " << std::strerror(errno);
  const std::string answer = read_until_closed(fd, 10s);
  ::close(fd);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 413 ")) << answer;
}

TEST(BoundedServer, AClientExpectingContinueGetsTheFinalAnswerAtOnce) {
  Server server([](ServedRequest&) { return error_answer(413, "too large"); });
  const auto started = Clock::now();
  const std::string answer = exchange(
      server.port(),
      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_LT(Clock::now() - started, 5s);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 413 ")) << answer;
  EXPECT_EQ(answer.find("100 Continue"), std::string::npos) << answer;
}

TEST(BoundedServer, ARouteThatThrowsIsAnInternalErrorAndTheServerGoesOn) {
  Server server([](ServedRequest& request) -> PlainResponse {
    if (request.head.path == "/throw") {
      throw std::runtime_error("a route's own fault");
    }
    return text("fine");
  });
  const std::string failed =
      exchange(server.port(), "GET /throw HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(failed.starts_with("HTTP/1.1 500 ")) << failed;
  EXPECT_NE(failed.find("a route's own fault"), std::string::npos) << failed;
  const std::string next =
      exchange(server.port(), "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(next.starts_with("HTTP/1.1 200 ")) << next;
}

TEST(BoundedServer, MalformedAndSlowRequestsGetTheFailureAnswer) {
  ServerSettings settings;
  settings.limits.request_timeout = 700ms;
  Server server([](ServedRequest&) { return text("never"); }, settings);
  const std::string bad = exchange(server.port(), "GARBAGE\r\n\r\n");
  EXPECT_TRUE(bad.starts_with("HTTP/1.1 400 ")) << bad;
  const std::string slow = exchange(server.port(), "GET / HTTP/1.1\r\nHost: a\r\n");
  EXPECT_TRUE(slow.starts_with("HTTP/1.1 408 ")) << slow;
}

// Once stop() is called no connection waits in the backlog for an agent
// that is going: the listener closes at once, while a client that drips its
// request still holds a serving thread.
TEST(BoundedServer, StopClosesTheListenerBeforeTheConnectionsServedEnd) {
  ServerSettings settings;
  settings.limits.request_timeout = 3s;
  Server server([](ServedRequest&) { return text("ok"); }, settings);
  const int dripping = connect_to(server.port());
  ASSERT_GE(dripping, 0);
  ASSERT_EQ(::send(dripping, "GET / HTTP/1.1\r\n", 16, MSG_NOSIGNAL), 16);
  std::this_thread::sleep_for(200ms);  // taken by a serving thread
  server.server().stop();
  bool refused = false;
  for (int tries = 0; tries < 250 && !refused; ++tries) {  // 5 s
    const int late = connect_to(server.port());
    refused = late < 0;
    if (late >= 0) {
      ::close(late);
      std::this_thread::sleep_for(20ms);
    }
  }
  EXPECT_TRUE(refused) << "the listener stayed open while a connection was served";
  EXPECT_NE(server.server().liveness_problem(1s), "");
  ::close(dripping);
}

TEST(BoundedServer, StopBeforeServeReleasesThePortAndServeReturnsAtOnce) {
  Server server([](ServedRequest&) { return text("ok"); }, {}, false);
  const int port = server.port();
  EXPECT_EQ(server.server().liveness_problem(1s), "") << "not serving yet is not a problem";
  server.server().stop();
  const auto started = Clock::now();
  server.server().serve();
  EXPECT_LT(Clock::now() - started, 2s);
  EXPECT_LT(connect_to(port), 0) << "the port is still taken";
}

TEST(BoundedServer, AWildcardIpv6ListenerServesIpv4ClientsToo) {
  const int probe = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (probe < 0) {
    GTEST_SKIP() << "no IPv6 on this machine";
  }
  ::close(probe);
  Server server([](ServedRequest&) { return text("dual"); }, {}, true, "::");
  const std::string answer =
      exchange(server.port(), "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  EXPECT_NE(answer.find("dual"), std::string::npos) << answer;
}

TEST(BoundedServer, ATakenPortIsAnErrorThatNamesIt) {
  Server first([](ServedRequest&) { return text("first"); });
  BoundedServer second(
      {}, [](ServedRequest&) { return text("second"); },
      [](RequestFailure) { return error_answer(400, "refused"); });
  const auto bound = second.bind("127.0.0.1", first.port(), 16);
  ASSERT_FALSE(bound);
  EXPECT_NE(bound.error().find("127.0.0.1:" + std::to_string(first.port())), std::string::npos)
      << bound.error();
  EXPECT_NE(bound.error().find("another agent"), std::string::npos) << bound.error();
}

TEST(BoundedServer, GzipIsSentToClientsThatTakeIt) {
  Server server([](ServedRequest&) { return text(std::string(10000, 'z')); });
  const std::string zipped =
      exchange(server.port(),
               "GET / HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n");
  EXPECT_NE(zipped.find("Content-Encoding: gzip\r\n"), std::string::npos) << zipped.substr(0, 300);
  EXPECT_LT(zipped.size(), 1000U);
  const std::string plain =
      exchange(server.port(), "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(plain.find("Content-Encoding"), std::string::npos);
  EXPECT_GT(plain.size(), 10000U);
}

}  // namespace
}  // namespace envcontract::daemon
