#include "fleet/agent_client.hpp"

#include <httplib.h>
#include <netdb.h>

#include <future>
#include <thread>

namespace envcontract::fleet {
namespace {

std::string seconds(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(duration.count()) / 1000.0);
  return text;
}

std::string describe(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection:
      return "cannot connect (connection refused, host unreachable or its name unknown)";
    case httplib::Error::ConnectionTimeout:
      return "connection timed out";
    case httplib::Error::Read:
      return "the connection broke while reading the answer";
    case httplib::Error::Write:
      return "the connection broke while sending the request";
    case httplib::Error::Canceled:
      return "canceled";
    default:
      return httplib::to_string(error);
  }
}

// httplib says only "connection" when a name does not resolve; operators
// need to tell a typo or a DNS outage from an agent that is down.
std::string connection_failure(const HostAddress& host, const std::string& server) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int code = ::getaddrinfo(host.host.c_str(), nullptr, &hints, &found);
  if (found != nullptr) {
    ::freeaddrinfo(found);
  }
  if (code != 0) {
    return "cannot resolve the host name '" + host.host + "': " + ::gai_strerror(code) +
           " (a typo, or DNS is unreachable)";
  }
  return "cannot connect to " + host.host + " port " + std::to_string(host.port) +
         " (connection refused or host unreachable: is " + server +
         " running and listening there?)";
}

}  // namespace

Response request(const HostAddress& host, const std::string& method, const std::string& path,
                 const ClientOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + options.timeout;
  httplib::Client client(host.base_url());
  const auto seconds_of = [](std::chrono::milliseconds d) {
    return std::make_pair(static_cast<time_t>(d.count() / 1000),
                          static_cast<time_t>((d.count() % 1000) * 1000));
  };
  const auto [sec, usec] = seconds_of(options.timeout);
  const bool silence_bound = options.silence.count() > 0 && options.silence < options.timeout;
  const auto [read_sec, read_usec] = seconds_of(silence_bound ? options.silence : options.timeout);
  client.set_connection_timeout(sec, usec);
  client.set_read_timeout(read_sec, read_usec);
  client.set_write_timeout(sec, usec);
  const auto began = Clock::now();
  client.set_keep_alive(false);
  httplib::Headers headers = {{"Accept", "application/json"}};
  if (!options.token.empty()) {
    headers.emplace("Authorization", "Bearer " + options.token);
  }

  Response response;
  bool too_large = false;
  bool too_slow = false;
  httplib::Request req;
  req.method = method;
  req.path = path;
  req.headers = headers;
  if (method == "POST") {
    req.body = "";
    req.set_header("Content-Length", "0");
    // Agents without a token accept requests to change state only with a
    // header that browsers cannot send across sites (docs/api.md).
    req.set_header("X-Requested-By", "fleetctl");
  }
  // Read timeouts bound each read; the deadline bounds a server that drips.
  bool answered = false;  // a byte of the body came
  req.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
    answered = true;
    if (response.body.size() + length > options.max_response_bytes) {
      too_large = true;
      return false;
    }
    if (Clock::now() > deadline) {
      too_slow = true;
      return false;
    }
    response.body.append(data, length);
    return true;
  };
  req.progress = [&](uint64_t, uint64_t) {
    if (Clock::now() > deadline) {
      too_slow = true;
      return false;
    }
    return true;
  };
  httplib::Response answer;
  httplib::Error error = httplib::Error::Success;
  bool sent = false;
  // Timeouts inside httplib bound each read, not the request: a server that
  // drips its headers byte by byte would hold us for ever. Wait for the
  // deadline here and shut the socket down when it passes.
  std::promise<void> finished;
  auto done = finished.get_future();
  std::thread worker([&] {
    sent = client.send(req, answer, error);
    finished.set_value();
  });
  if (done.wait_until(deadline) == std::future_status::timeout) {
    too_slow = true;
    client.stop();
  }
  worker.join();
  if (too_large) {
    const std::size_t limit = options.max_response_bytes;
    response.error = "the answer is larger than " +
                     (limit >= (1U << 20) ? std::to_string(limit >> 20) + " MiB"
                                          : std::to_string(limit >> 10) + " KiB") +
                     "; is this an envcontract agent?";
    response.body.clear();
    return response;
  }
  if (too_slow || (!sent && Clock::now() > deadline)) {
    response.error = "no complete answer within " + seconds(options.timeout);
    response.body.clear();
    return response;
  }
  if (!sent && error == httplib::Error::Read && silence_bound &&
      Clock::now() - began >= options.silence - std::chrono::milliseconds(100)) {
    // httplib tells a read that timed out from a broken connection by nothing
    // but the time it took.
    response.error = std::string(answered ? "its answer stopped for "
                                          : "it accepted the connection and sent nothing for ") +
                     seconds(options.silence) + " (is it stopped or stuck?)";
    response.body.clear();  // part of an answer is no answer
    return response;
  }
  if (!sent) {
    response.body.clear();
    // The name is looked up again only while time remains: a resolver that
    // is down must not hold fleetctl past --timeout a second time.
    response.error = error == httplib::Error::Connection && Clock::now() < deadline
                         ? connection_failure(host, options.server)
                         : describe(error);
    return response;
  }
  response.status = answer.status;
  if (response.body.empty() && !answer.body.empty()) {
    response.body = answer.body;
  }
  return response;
}

}  // namespace envcontract::fleet
