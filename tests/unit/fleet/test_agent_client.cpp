// fleet/agent_client.cpp: one HTTP request to an agent, bounded in time and
// size whatever the server does. Real servers on 127.0.0.1 that answer,
// redirect, stay silent, drip, flood, close, or speak TLS; each request
// either is the server's HTTP answer or says why there is none, in time.
#include "fleet/agent_client.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/loopback_http.hpp"
#include "tests/support/rogue_server.hpp"

namespace envcontract::fleet {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::RogueServer;

using testing::http_answer;
using testing::send_all;

// An HTTP server on 127.0.0.1 that runs `script` on each connection, on a
// thread of its own, once it has read the request's head, and keeps the
// heads it read. Scripts wait with pause() and hold(), which end as soon as
// the server stops.
class Scripted {
 public:
  using Script = std::function<void(Scripted& server, int client)>;

  explicit Scripted(Script script) : m_script(std::move(script)) {}
  Scripted(const Scripted&) = delete;
  Scripted& operator=(const Scripted&) = delete;

  int port() const { return m_listener.port(); }
  HostAddress address(const std::string& host = "127.0.0.1") const {
    return parse_host_address(host + ":" + std::to_string(port())).value();
  }
  std::vector<std::string> heads() const {
    std::lock_guard lock(m_mutex);
    return m_heads;
  }
  // Waits `duration`, or less when the server stops: false then.
  bool pause(std::chrono::milliseconds duration) {
    std::unique_lock lock(m_mutex);
    return !m_changed.wait_for(lock, duration, [this] { return m_stopping; });
  }
  // Keeps the connection open and silent until the server stops.
  void hold() {
    std::unique_lock lock(m_mutex);
    m_changed.wait(lock, [this] { return m_stopping; });
  }
  void count_sent(std::size_t bytes) { m_sent += bytes; }
  std::size_t sent() const { return m_sent.load(); }

 private:
  bool read_head(int client) {
    const auto head = testing::read_request_head(client);
    if (!head) {
      return false;
    }
    std::lock_guard lock(m_mutex);
    m_heads.push_back(head->substr(0, head->find("\r\n\r\n")));
    return true;
  }

  Script m_script;
  mutable std::mutex m_mutex;
  std::condition_variable m_changed;
  bool m_stopping = false;
  std::vector<std::string> m_heads;
  std::atomic<std::size_t> m_sent{0};
  // Last: its connections end (stopping wakes their waits) before the rest goes.
  testing::ThreadedLoopbackListener m_listener{[this](int client) {
                                                 if (read_head(client)) {
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

Scripted::Script answering(int status, std::string body, std::string headers = "") {
  return [=](Scripted&, int client) { send_all(client, http_answer(status, body, headers)); };
}

// The value of header `name` in a request head (names without regard to
// case, as HTTP reads them), or nullopt when it has none.
std::optional<std::string> header(const std::string& head, std::string name) {
  const auto lower = [](std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
  };
  name = lower(name) + ":";
  for (std::size_t at = head.find("\r\n"); at != std::string::npos;) {
    const std::size_t start = at + 2;
    at = head.find("\r\n", start);
    const std::string line = head.substr(start, at == std::string::npos ? at : at - start);
    if (lower(line.substr(0, name.size())) == name) {
      const auto value = line.find_first_not_of(' ', name.size());
      return value == std::string::npos ? "" : line.substr(value);
    }
  }
  return std::nullopt;
}

// A port on 127.0.0.1 that nothing listens on (bound, then closed).
HostAddress nobody_listening() {
  return parse_host_address(testing::address_nobody_listens_on()).value();
}

HostAddress at_port(int port) {
  return parse_host_address("127.0.0.1:" + std::to_string(port)).value();
}

// This process' peak resident memory so far, in KiB.
long peak_rss_kib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

ClientOptions within(std::chrono::milliseconds timeout, std::chrono::milliseconds silence = 0ms) {
  ClientOptions options;
  options.timeout = timeout;
  options.silence = silence;
  return options;
}

struct Timed {
  Response response;
  std::chrono::milliseconds took{};
};

Timed timed_request(const HostAddress& host, const ClientOptions& options,
                    const std::string& method = "GET", const std::string& path = "/api/v1/report") {
  const auto began = Clock::now();
  Timed timed{request(host, method, path, options), {}};
  timed.took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - began);
  return timed;
}

// What a request that got no usable answer must look like.
void expect_no_answer(const Response& response) {
  EXPECT_EQ(response.status, 0);
  EXPECT_NE(response.error, "");
  EXPECT_TRUE(response.body.empty()) << response.body.size() << " bytes kept of no answer";
}

TEST(AgentClient, AnAnswerIsItsStatusAndBodyWhateverTheStatus) {
  Scripted agent(answering(200, R"({"verdict": "drift"})"));
  const auto ok = request(agent.address(), "GET", "/api/v1/report", within(5s));
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, R"({"verdict": "drift"})");
  EXPECT_EQ(ok.error, "");
  ASSERT_EQ(agent.heads().size(), 1U);
  EXPECT_TRUE(agent.heads()[0].starts_with("GET /api/v1/report HTTP/1.1\r\n")) << agent.heads()[0];

  // A refusal is an answer too: its status and words, for the caller to read.
  Scripted refusing(answering(404, R"({"error": "no such env"})"));
  const auto refused = request(refusing.address(), "GET", "/api/v1/report", within(5s));
  EXPECT_EQ(refused.status, 404);
  EXPECT_EQ(refused.body, R"({"error": "no such env"})");
  EXPECT_EQ(refused.error, "");
}

TEST(AgentClient, TheTokenIsSentAsABearerTokenOnlyWhenSet) {
  Scripted agent(answering(200, "{}"));
  auto options = within(5s);
  options.token = "s3cret-token";
  ASSERT_EQ(request(agent.address(), "GET", "/api/v1/report", options).status, 200);
  ASSERT_EQ(request(agent.address(), "GET", "/api/v1/report", within(5s)).status, 200);
  const auto heads = agent.heads();
  ASSERT_EQ(heads.size(), 2U);
  EXPECT_EQ(header(heads[0], "Authorization"), "Bearer s3cret-token");
  EXPECT_EQ(header(heads[0], "Accept"), "application/json");
  EXPECT_EQ(header(heads[1], "Authorization"), std::nullopt) << heads[1];
  EXPECT_EQ(header(heads[1], "Accept"), "application/json");
}

// Agents without a token take a change of state only with a header that
// browsers cannot send across sites (docs/api.md).
TEST(AgentClient, APostCarriesNoBodyAndAHeaderBrowsersCannotSend) {
  Scripted agent(answering(201, "{}"));
  EXPECT_EQ(request(agent.address(), "POST", "/api/v1/gate?env=%2Fopt", within(5s)).status, 201);
  EXPECT_EQ(request(agent.address(), "GET", "/api/v1/report", within(5s)).status, 201);
  const auto heads = agent.heads();
  ASSERT_EQ(heads.size(), 2U);
  EXPECT_TRUE(heads[0].starts_with("POST /api/v1/gate?env=%2Fopt HTTP/1.1\r\n")) << heads[0];
  EXPECT_EQ(header(heads[0], "Content-Length"), "0");
  EXPECT_EQ(header(heads[0], "X-Requested-By"), "fleetctl");
  EXPECT_EQ(header(heads[1], "X-Requested-By"), std::nullopt)
      << "a GET changes nothing: " << heads[1];
}

// A redirect is the answer, not an errand: the token given for one agent
// never goes to whatever host an answer names.
TEST(AgentClient, ARedirectIsNotFollowedSoTheTokenNeverReachesAnotherHost) {
  Scripted elsewhere(answering(200, R"({"schema_version": 1, "verdict": "compliant"})"));
  for (const int status : {301, 302, 307, 308}) {
    for (const std::string host : {"127.0.0.1", "localhost"}) {
      Scripted agent(answering(status, "",
                               "Location: http://" + host + ":" + std::to_string(elsewhere.port()) +
                                   "/api/v1/report\r\n"));
      auto options = within(5s);
      options.token = "s3cret-token";
      const auto response = request(agent.address(), "GET", "/api/v1/report", options);
      EXPECT_EQ(response.status, status);
      EXPECT_EQ(response.body, "");
      ASSERT_EQ(agent.heads().size(), 1U);
      EXPECT_EQ(header(agent.heads()[0], "Authorization"), "Bearer s3cret-token");
    }
  }
  EXPECT_TRUE(elsewhere.heads().empty()) << elsewhere.heads()[0];
}

TEST(AgentClient, ARefusedConnectionIsNoAnswerAndSaysWhatWasAsked) {
  const auto nobody = nobody_listening();
  auto options = within(30s);
  options.server = "Prometheus";
  const auto [response, took] = timed_request(nobody, options);
  expect_no_answer(response);
  // What the caller names, and where: an operator checks that port.
  EXPECT_NE(response.error.find("Prometheus"), std::string::npos) << response.error;
  EXPECT_NE(response.error.find(std::to_string(nobody.port)), std::string::npos) << response.error;
  EXPECT_LT(took, 5s) << "a refusal is known at once, not at the timeout";
}

TEST(AgentClient, AServerThatAcceptsAndNeverAnswersIsGivenUpAtTheTimeout) {
  RogueServer silent(RogueServer::Behaviour::silent);
  const auto [response, took] = timed_request(at_port(silent.port()), within(700ms));
  expect_no_answer(response);
  EXPECT_GE(took, 650ms);
  EXPECT_LT(took, 10s);
}

// Silence is a stopped or stuck agent: given up then, long before the
// timeout meant for a slow but working one.
TEST(AgentClient, ASilentServerIsGivenUpAfterTheSilenceNotTheTimeout) {
  RogueServer silent(RogueServer::Behaviour::silent);
  const auto [response, took] = timed_request(at_port(silent.port()), within(20s, 300ms));
  expect_no_answer(response);
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 5s);
}

TEST(AgentClient, ASilenceLongerThanTheTimeoutDoesNotExtendIt) {
  RogueServer silent(RogueServer::Behaviour::silent);
  const auto [response, took] = timed_request(at_port(silent.port()), within(500ms, 30s));
  expect_no_answer(response);
  EXPECT_LT(took, 5s);
}

// Each byte comes well within the silence: only the deadline of the
// whole request can end it.
TEST(AgentClient, HeadersDrippedWithinTheSilenceAreCutAtTheDeadline) {
  Scripted dripping([](Scripted& server, int client) {
    const std::string status = "HTTP/1.1 200 OK\r\nX-Slow: ";
    for (std::size_t at = 0; send_all(client, std::string(1, status[at % status.size()])); ++at) {
      if (!server.pause(40ms)) {
        return;
      }
    }
  });
  const auto [response, took] = timed_request(dripping.address(), within(700ms, 300ms));
  expect_no_answer(response);
  EXPECT_GE(took, 650ms);
  EXPECT_LT(took, 10s);
}

TEST(AgentClient, ABodyDrippedWithinTheSilenceIsCutAtTheDeadline) {
  Scripted dripping([](Scripted& server, int client) {
    if (!send_all(client, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n{")) {
      return;
    }
    while (server.pause(40ms) && send_all(client, " ")) {
    }
  });
  const auto [response, took] = timed_request(dripping.address(), within(700ms, 300ms));
  expect_no_answer(response);
  EXPECT_GE(took, 650ms);
  EXPECT_LT(took, 10s);
}

// Half a report is no report: a caller must not find one in the body.
TEST(AgentClient, AnAnswerThatStopsMidwayIsNoAnswerAfterTheSilence) {
  Scripted stopping([](Scripted& server, int client) {
    if (send_all(client,
                 "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{\"verdict\": \"compliant\"")) {
      server.hold();
    }
  });
  const auto [response, took] = timed_request(stopping.address(), within(20s, 300ms));
  EXPECT_EQ(response.status, 0);
  EXPECT_NE(response.error, "");
  EXPECT_LT(took, 5s) << "the silence, not the timeout";
  // Part of an answer is no answer: nothing of it is kept beside status 0,
  // whichever way the answer ended.
  EXPECT_TRUE(response.body.empty()) << "kept of no answer: " << response.body;

  // The same half answer, and then the connection closes.
  Scripted breaking([](Scripted&, int client) {
    send_all(client, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{\"verdict\": \"compliant\"");
  });
  const auto broken = request(breaking.address(), "GET", "/api/v1/report", within(20s, 300ms));
  EXPECT_EQ(broken.status, 0);
  EXPECT_NE(broken.error, "");
  EXPECT_TRUE(broken.body.empty()) << "kept of no answer: " << broken.body;
}

TEST(AgentClient, AServerThatClosesWithoutAnsweringIsNoAnswerAtOnce) {
  Scripted closing([](Scripted&, int) {});
  const auto [response, took] = timed_request(closing.address(), within(30s));
  expect_no_answer(response);
  EXPECT_LT(took, 5s);
}

// An agent behind a TLS-only port reads our plain request as a bad
// handshake and answers with a TLS alert record: that is no HTTP answer.
TEST(AgentClient, AServerThatSpeaksTlsIsNoAnswer) {
  Scripted tls([](Scripted&, int client) {
    // A fatal alert, protocol_version (70), in a TLS 1.2 record.
    send_all(client, std::string("\x15\x03\x03\x00\x02\x02\x46", 7));
  });
  const auto [response, took] = timed_request(tls.address(), within(30s));
  expect_no_answer(response);
  EXPECT_LT(took, 5s);
  EXPECT_EQ(tls.heads().size(), 1U) << "the request went in plain HTTP";
}

TEST(AgentClient, AnAnswerLargerThanTheBoundIsRefusedWithoutReadingItAll) {
  RogueServer huge(RogueServer::Behaviour::huge);
  auto options = within(30s);
  options.max_response_bytes = 1 << 20;
  const auto [response, took] = timed_request(at_port(huge.port()), options);
  expect_no_answer(response);
  EXPECT_LT(took, 10s) << "refused when past the bound, not at the timeout";
  // What the server got off its hands: the bound and the sockets' buffers,
  // not its 2 GiB.
  EXPECT_LT(huge.bytes_sent(), std::size_t{64} << 20);
}

TEST(AgentClient, AnAnswerOfExactlyTheBoundIsReadAndOneByteMoreIsNot) {
  const std::string body(4096, 'x');
  Scripted agent(answering(200, body));
  auto options = within(5s);
  options.max_response_bytes = body.size();
  const auto fits = request(agent.address(), "GET", "/", options);
  EXPECT_EQ(fits.status, 200);
  EXPECT_EQ(fits.body, body);
  options.max_response_bytes = body.size() - 1;
  expect_no_answer(request(agent.address(), "GET", "/", options));
}

TEST(AgentClient, AChunkedAnswerIsBoundedLikeAnyOther) {
  const std::string chunk(1024, 'c');
  Scripted agent([&](Scripted&, int client) {
    if (!send_all(client, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")) {
      return;
    }
    for (int i = 0; i < 64; ++i) {
      if (!send_all(client, "400\r\n" + chunk + "\r\n")) {
        return;
      }
    }
    send_all(client, "0\r\n\r\n");
  });
  auto options = within(5s);
  options.max_response_bytes = 16 << 10;
  expect_no_answer(request(agent.address(), "GET", "/", options));
  options.max_response_bytes = 1 << 20;
  const auto whole = request(agent.address(), "GET", "/", options);
  EXPECT_EQ(whole.status, 200);
  EXPECT_EQ(whole.body.size(), 64U << 10);
}

// gzip of `size` zero bytes: a few kilobytes per megabyte.
std::string gzip_of_zeros(std::size_t size) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    throw std::runtime_error("deflateInit2");
  }
  std::string zeros(1 << 16, '\0');
  std::string out;
  char buffer[1 << 16];
  for (std::size_t left = size;;) {
    const std::size_t now = std::min(left, zeros.size());
    left -= now;
    stream.next_in = reinterpret_cast<Bytef*>(zeros.data());
    stream.avail_in = static_cast<uInt>(now);
    const int flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
    int code = Z_OK;
    do {
      stream.next_out = reinterpret_cast<Bytef*>(buffer);
      stream.avail_out = sizeof buffer;
      code = deflate(&stream, flush);
      out.append(buffer, sizeof buffer - stream.avail_out);
    } while (stream.avail_out == 0);
    if (flush == Z_FINISH) {
      deflateEnd(&stream);
      if (code != Z_STREAM_END) {
        throw std::runtime_error("deflate");
      }
      return out;
    }
  }
}

// A small answer that unpacks to 128 MiB: unpacked as it arrives (the
// client accepts gzip), it is refused once past the bound; read as sent,
// it would be its few kilobytes.
TEST(AgentClient, ACompressedAnswerIsBoundedByItsSizeUnpacked) {
  const std::string bomb = gzip_of_zeros(std::size_t{128} << 20);
  ASSERT_LT(bomb.size(), std::size_t{1} << 20);
  Scripted agent(answering(200, bomb, "Content-Encoding: gzip\r\n"));
  auto options = within(30s);
  options.max_response_bytes = 1 << 20;
  const auto peak_before = peak_rss_kib();
  const auto [response, took] = timed_request(agent.address(), options);
  if (response.status == 0) {
    expect_no_answer(response);
  } else {
    EXPECT_EQ(response.body, bomb) << "read as sent, or refused: never unpacked past the bound";
  }
  EXPECT_LT(took, 10s);
  // Unpacked whole, the 128 MiB would have raised the process' peak.
  EXPECT_LT(peak_rss_kib() - peak_before, 64L * 1024) << "KiB more at the peak";
}

// Headers are part of the answer: a server that sends header lines for
// ever is cut off at the request's time-out.
TEST(AgentClient, EndlessHeadersAreBoundedByTheTimeOut) {
  const std::size_t cap = std::size_t{48} << 20;
  Scripted flooding([cap](Scripted& server, int client) {
    if (!send_all(client, "HTTP/1.1 200 OK\r\n")) {
      return;
    }
    const std::string line = "X-Pad: " + std::string(1000, 'p') + "\r\n";
    std::string lines;
    for (int i = 0; i < 64; ++i) {
      lines += line;
    }
    while (server.sent() < cap) {
      if (!send_all(client, lines)) {
        return;
      }
      server.count_sent(lines.size());
    }
    server.hold();  // all the server would send: the client decides when to stop
  });
  auto options = within(1500ms);  // the bound under test
  options.max_response_bytes = 1 << 20;
  const auto [response, took] = timed_request(flooding.address(), options);
  expect_no_answer(response);
  // The head's bound (64 KiB) cuts it, and the time-out at the latest.
  EXPECT_LT(took, 2500ms);
}

// The bound named when an answer passes it is the one applied, however
// small: record_gate_decision's is 64 KiB.
TEST(AgentClient, TheRefusalOfALargeAnswerNamesItsBound) {
  Scripted agent(answering(200, std::string(100 << 10, 'x')));
  auto options = within(5s);
  options.max_response_bytes = 64 << 10;
  const auto response = request(agent.address(), "GET", "/", options);
  expect_no_answer(response);
  // Said in KiB under 1 MiB, not "larger than 0 MiB".
  EXPECT_EQ(response.error.find("than 0 MiB"), std::string::npos) << response.error;
}

}  // namespace
}  // namespace envcontract::fleet
