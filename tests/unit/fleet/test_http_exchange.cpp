// fleet/http_exchange.cpp: one HTTP/1.1 request and its answer, bounded
// whatever the server does. Real peers on 127.0.0.1 that record what came,
// answer past the bound, drip, stay silent, flood headers or break off; and
// an exchange cut from another thread. (The agent's client on top of it:
// test_agent_client.cpp.)
#include "fleet/http_exchange.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/loopback_http.hpp"
#include "tests/support/rogue_server.hpp"

namespace envcontract::fleet {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::send_all;

// A peer on 127.0.0.1 that runs `script` on each connection, on a thread of
// its own, and keeps what each request sent (its head, and as much of its
// body as its Content-Length says). Scripts wait with pause(), which ends
// (false) as soon as the peer stops.
class Peer {
 public:
  using Script = std::function<void(Peer& peer, int client)>;

  explicit Peer(Script script) : m_script(std::move(script)) {}

  int port() const { return m_listener.port(); }
  std::vector<std::string> requests() const {
    std::lock_guard lock(m_mutex);
    return m_requests;
  }
  bool pause(std::chrono::milliseconds duration) {
    std::unique_lock lock(m_mutex);
    return !m_changed.wait_for(lock, duration, [this] { return m_stopping; });
  }

 private:
  bool read_request(int client) {
    auto request = testing::read_request_head(client);
    if (!request) {
      return false;
    }
    const auto length_at = request->find("Content-Length: ");
    const std::size_t length =
        length_at == std::string::npos ? 0 : std::stoul(request->substr(length_at + 16));
    const std::size_t whole = request->find("\r\n\r\n") + 4 + length;
    char buffer[4096];
    while (request->size() < whole) {
      const ssize_t got = ::recv(client, buffer, sizeof buffer, 0);
      if (got <= 0) {
        return false;
      }
      request->append(buffer, static_cast<std::size_t>(got));
    }
    std::lock_guard lock(m_mutex);
    m_requests.push_back(*request);
    return true;
  }

  Script m_script;
  mutable std::mutex m_mutex;
  std::condition_variable m_changed;
  bool m_stopping = false;
  std::vector<std::string> m_requests;
  // Last: its connections end (stopping wakes their pauses) before the rest goes.
  testing::ThreadedLoopbackListener m_listener{[this](int client) {
                                                 if (read_request(client)) {
                                                   m_script(*this, client);
                                                 }
                                               },
                                               [this] {
                                                 {
                                                   std::lock_guard lock(m_mutex);
                                                   m_stopping = true;
                                                 }
                                                 m_changed.notify_all();
                                               }};
};

Peer::Script answering(int status, const std::string& body) {
  return [=](Peer&, int client) { send_all(client, testing::http_answer(status, body)); };
}

// Sends `answer`, then keeps the connection open and silent until the peer stops.
Peer::Script sending_then_holding(const std::string& answer) {
  return [=](Peer& peer, int client) {
    if (send_all(client, answer)) {
      while (peer.pause(1h)) {
      }
    }
  };
}

ExchangeRequest get(int port, const std::string& target = "/") {
  ExchangeRequest request;
  request.host = "127.0.0.1";
  request.port = port;
  request.target = target;
  return request;
}

ExchangeBounds within(std::chrono::milliseconds deadline, std::chrono::milliseconds silence = 0ms) {
  ExchangeBounds bounds;
  bounds.deadline = deadline;
  bounds.silence = silence;
  return bounds;
}

struct Timed {
  ExchangeResult result;
  std::chrono::milliseconds took{};
};

Timed timed_exchange(const ExchangeRequest& request, const ExchangeBounds& bounds,
                     ExchangeCancellation* cancellation = nullptr) {
  const auto began = Clock::now();
  Timed timed{http_exchange(request, bounds, cancellation), {}};
  timed.took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - began);
  return timed;
}

TEST(HttpExchange, SendsTheRequestLineHeadersAndBodyAsGiven) {
  Peer peer(answering(202, "accepted"));
  auto request = get(peer.port(), "/hook?event=a%2Fb");
  request.method = "POST";
  request.headers = {{"X-Envcontract-Event", "transitions"}, {"Content-Type", "text/plain"}};
  request.body = std::string("bytes\0and\r\nlines", 16);
  const auto result = http_exchange(request, within(10s));
  EXPECT_EQ(result.failure, ExchangeFailure::none) << result.error;
  EXPECT_EQ(result.status, 202);
  EXPECT_EQ(result.body, "accepted");
  EXPECT_EQ(result.error, "");
  ASSERT_EQ(peer.requests().size(), 1U);
  const std::string port = std::to_string(peer.port());
  EXPECT_EQ(peer.requests()[0],
            "POST /hook?event=a%2Fb HTTP/1.1\r\n"
            "Host: 127.0.0.1:" +
                port +
                "\r\n"
                "X-Envcontract-Event: transitions\r\n"
                "Content-Type: text/plain\r\n"
                "Content-Length: 16\r\n"
                "Connection: close\r\n"
                "\r\n" +
                request.body);
}

// A header value that ends its line would write headers of its own.
TEST(HttpExchange, AHeaderWithALineBreakIsNotSent) {
  Peer peer(answering(200, ""));
  auto request = get(peer.port());
  request.headers = {{"X-Name", "value\r\nX-Injected: yes"}};
  const auto result = http_exchange(request, within(10s));
  EXPECT_EQ(result.failure, ExchangeFailure::bad_request);
  EXPECT_EQ(result.status, 0);
  EXPECT_NE(result.error.find("X-Name"), std::string::npos) << result.error;
  EXPECT_TRUE(peer.requests().empty());
}

// The agent's stop cuts a delivery in flight at once, and any after it
// ends before it connects.
TEST(HttpExchange, ACancellationFromAnotherThreadEndsAnExchangeAtOnce) {
  testing::RogueServer silent(testing::RogueServer::Behaviour::silent);
  ExchangeCancellation cancellation;
  std::thread stopper([&] {
    std::this_thread::sleep_for(300ms);
    cancellation.cancel();
  });
  const auto [result, took] = timed_exchange(get(silent.port()), within(10min), &cancellation);
  stopper.join();
  EXPECT_EQ(result.failure, ExchangeFailure::cancelled) << result.error;
  EXPECT_EQ(result.status, 0);
  EXPECT_NE(result.error, "");
  EXPECT_LT(took, 10s) << "the cancellation, not the ten minutes";

  Peer peer(answering(200, "{}"));
  const auto later = http_exchange(get(peer.port()), within(10s), &cancellation);
  EXPECT_EQ(later.failure, ExchangeFailure::cancelled);
  EXPECT_TRUE(peer.requests().empty()) << "a cancelled exchange connected";
}

// A cancellation outlives its exchanges: cancelled after one ended, it
// reaches nothing of it (the exchange's loop is gone) and changes no result.
TEST(HttpExchange, AnExchangeThatEndedIsNotCutByALaterCancellation) {
  Peer peer(answering(200, "{}"));
  ExchangeCancellation cancellation;
  const auto result = http_exchange(get(peer.port()), within(10s), &cancellation);
  EXPECT_EQ(result.status, 200);
  cancellation.cancel();
  EXPECT_EQ(result.body, "{}");
  EXPECT_TRUE(cancellation.cancelled());
}

// Callers that need only the status (a webhook's receiver) still get it
// when the body is cut; the body is never kept.
TEST(HttpExchange, ABodyPastTheBoundAfterTheHeadReportsTheStatusAndTheCut) {
  Peer peer(answering(201, std::string(100 << 10, 'x')));
  auto bounds = within(10s);
  bounds.max_body_bytes = 64 << 10;
  const auto result = http_exchange(get(peer.port()), bounds);
  EXPECT_EQ(result.failure, ExchangeFailure::body_past_bound);
  EXPECT_TRUE(result.body_cut());
  EXPECT_EQ(result.status, 201);
  EXPECT_TRUE(result.body.empty()) << result.body.size() << " bytes kept of a cut body";
  EXPECT_EQ(result.error, "the answer is larger than 64 KiB");

  // Without a length, in chunks: counted as they come.
  Peer chunked([](Peer&, int client) {
    if (!send_all(client, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")) {
      return;
    }
    const std::string chunk = "400\r\n" + std::string(1024, 'c') + "\r\n";
    for (int i = 0; i < 200; ++i) {
      if (!send_all(client, chunk)) {
        return;  // the client hung up past its bound
      }
    }
    send_all(client, "0\r\n\r\n");
  });
  const auto cut = http_exchange(get(chunked.port()), bounds);
  EXPECT_TRUE(cut.body_cut()) << cut.error;
  EXPECT_EQ(cut.status, 200);
}

TEST(HttpExchange, AnAnswerIsNeverUnpacked) {
  const std::string packed("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8);
  Peer peer([&](Peer&, int client) {
    send_all(client, testing::http_answer(200, packed, "Content-Encoding: gzip\r\n"));
  });
  const auto result = http_exchange(get(peer.port()), within(10s));
  EXPECT_EQ(result.status, 200);
  EXPECT_EQ(result.body, packed);
  ASSERT_EQ(peer.requests().size(), 1U);
  EXPECT_EQ(peer.requests()[0].find("Accept-Encoding"), std::string::npos) << peer.requests()[0];
}

// Each byte comes well within the silence: only the deadline of the whole
// exchange ends it.
TEST(HttpExchange, AServerThatDripsTheHeadIsCutAtTheDeadline) {
  Peer dripping([](Peer& peer, int client) {
    const std::string head = "HTTP/1.1 200 OK\r\nX-Slow: ";
    for (std::size_t at = 0; send_all(client, std::string(1, head[at % head.size()])); ++at) {
      if (!peer.pause(40ms)) {
        return;
      }
    }
  });
  const auto [result, took] = timed_exchange(get(dripping.port()), within(1500ms, 1000ms));
  EXPECT_EQ(result.failure, ExchangeFailure::timed_out) << result.error;
  EXPECT_EQ(result.status, 0);
  EXPECT_EQ(result.error, "no complete answer within 1.5 s");
  EXPECT_GE(took, 1400ms);
  EXPECT_LT(took, 10s);
}

// Asio tells a silence from a connection that broke: each has its words.
TEST(HttpExchange, SilenceIsToldApartFromABrokenConnection) {
  testing::RogueServer silent(testing::RogueServer::Behaviour::silent);
  const auto [nothing, took] = timed_exchange(get(silent.port()), within(10min, 1500ms));
  EXPECT_EQ(nothing.failure, ExchangeFailure::silent);
  EXPECT_EQ(nothing.error,
            "it accepted the connection and sent nothing for 1.5 s (is it stopped or stuck?)");
  EXPECT_GE(took, 1400ms);
  EXPECT_LT(took, 10s) << "the silence, not the ten minutes";

  const std::string half = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{\"verdict\"";
  Peer stopping(sending_then_holding(half));
  const auto stopped = http_exchange(get(stopping.port()), within(10min, 1500ms));
  EXPECT_EQ(stopped.failure, ExchangeFailure::silent);
  EXPECT_EQ(stopped.error, "its answer stopped for 1.5 s (is it stopped or stuck?)");
  EXPECT_EQ(stopped.status, 0) << "half an answer is no answer";
  EXPECT_TRUE(stopped.body.empty());

  Peer breaking([&](Peer&, int client) { send_all(client, half); });
  const auto broken = http_exchange(get(breaking.port()), within(10min, 1500ms));
  EXPECT_EQ(broken.failure, ExchangeFailure::broken) << broken.error;
  EXPECT_EQ(broken.status, 0);
  EXPECT_TRUE(broken.body.empty());
}

TEST(HttpExchange, EndlessHeadersAreCutAtTheHeadBound) {
  Peer flooding([](Peer& peer, int client) {
    const std::string lines = [] {
      std::string text;
      for (int i = 0; i < 64; ++i) {
        text += "X-Pad: " + std::string(1000, 'p') + "\r\n";
      }
      return text;
    }();
    if (send_all(client, "HTTP/1.1 200 OK\r\n")) {
      for (int i = 0; i < 1000 && send_all(client, lines); ++i) {
      }
    }
    while (peer.pause(1h)) {
    }
  });
  const auto [result, took] = timed_exchange(get(flooding.port()), within(10min));
  EXPECT_EQ(result.failure, ExchangeFailure::head_too_large) << result.error;
  EXPECT_EQ(result.status, 0);
  EXPECT_LT(took, 10s) << "the head's bound, not the ten minutes";
}

TEST(HttpExchange, WhatIsNotHttpIsNoAnswer) {
  // A fatal TLS alert: what a TLS-only port says to a plain request.
  Peer tls(
      [](Peer&, int client) { send_all(client, std::string("\x15\x03\x03\x00\x02\x02\x46", 7)); });
  const auto result = http_exchange(get(tls.port()), within(10s));
  EXPECT_EQ(result.failure, ExchangeFailure::not_http) << result.error;
  EXPECT_EQ(result.status, 0);
}

TEST(HttpExchange, NobodyListeningIsNotConnectedAtOnce) {
  const std::string address = testing::address_nobody_listens_on();
  const int port = std::stoi(address.substr(address.find(':') + 1));
  const auto [result, took] = timed_exchange(get(port), within(10min));
  EXPECT_EQ(result.failure, ExchangeFailure::not_connected) << result.error;
  EXPECT_NE(result.error.find("port " + std::to_string(port)), std::string::npos) << result.error;
  EXPECT_LT(took, 10s);
}

TEST(HttpExchange, ARedirectIsTheAnswer) {
  Peer elsewhere(answering(200, "{}"));
  Peer moving([&](Peer&, int client) {
    send_all(
        client,
        testing::http_answer(
            302, "", "Location: http://127.0.0.1:" + std::to_string(elsewhere.port()) + "/\r\n"));
  });
  const auto result = http_exchange(get(moving.port()), within(10s));
  EXPECT_EQ(result.status, 302);
  EXPECT_TRUE(elsewhere.requests().empty());
}

// A receiver or a proxy may send "100 Continue" or "103 Early Hints"
// before its answer: the answer is the final one.
TEST(HttpExchange, InterimAnswersAreReadPastToTheFinalOne) {
  Peer peer([](Peer&, int client) {
    send_all(client, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" +
                         testing::http_answer(204, ""));
  });
  const auto result = http_exchange(get(peer.port()), within(10s));
  EXPECT_EQ(result.failure, ExchangeFailure::none) << result.error;
  EXPECT_EQ(result.status, 204);

  // One that closes after its interim answer has given no answer.
  Peer closing([](Peer&, int client) { send_all(client, "HTTP/1.1 100 Continue\r\n\r\n"); });
  const auto closed = http_exchange(get(closing.port()), within(10s));
  EXPECT_EQ(closed.failure, ExchangeFailure::broken) << closed.error;
  EXPECT_EQ(closed.status, 0);
  EXPECT_NE(closed.error.find("interim"), std::string::npos) << closed.error;

  Peer endless([](Peer& self, int client) {
    while (send_all(client, "HTTP/1.1 100 Continue\r\n\r\n") && self.pause(1ms)) {
    }
  });
  const auto [interims, took] = timed_exchange(get(endless.port()), within(10s));
  EXPECT_EQ(interims.failure, ExchangeFailure::not_http) << interims.error;
  EXPECT_EQ(interims.status, 0);
  EXPECT_LT(took, 8s) << "refused at the bound, not at the deadline";
}

// Beast bounds a chunked body by its chunks' sizes, not a chunk's header
// line nor the trailer: an endless one must not grow the agent until the
// deadline.
TEST(HttpExchange, AnEndlessChunkLineIsCutAtTheHeadsBound) {
  for (const std::string start : {"1;", "0\r\nX-Trailer: "}) {
    SCOPED_TRACE(start);
    Peer peer([start](Peer& self, int client) {
      if (!send_all(client, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + start)) {
        return;
      }
      const std::string filler(64 * 1024, 'a');
      while (send_all(client, filler) && self.pause(0ms)) {
      }
    });
    auto bounds = within(20s);
    bounds.max_head_bytes = 64 * 1024;
    const auto [result, took] = timed_exchange(get(peer.port()), bounds);
    EXPECT_EQ(result.failure, ExchangeFailure::body_past_bound) << result.error;
    EXPECT_EQ(result.status, 200) << "the head was read";
    EXPECT_TRUE(result.body.empty());
    EXPECT_LT(took, 15s) << "cut at the bound, not at the deadline";
  }
}

}  // namespace
}  // namespace envcontract::fleet
