#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "fleet/host_address.hpp"

namespace envcontract::fleet {

struct ClientOptions {
  std::chrono::milliseconds timeout{10'000};  // the whole request, connect to last byte
  // The longest the server may send nothing while the request runs (0: the
  // whole timeout). An agent answers from a report it holds ready: one that
  // accepts and stays silent is stopped or stuck, and is given up then.
  std::chrono::milliseconds silence{0};
  std::size_t max_response_bytes = 64 << 20;  // a report of thousands of envs fits
  std::string token;                          // sent as a bearer token when set
  // What is asked, for the hint of a refused connection: "the agent",
  // "Prometheus".
  std::string server = "the agent";
};

struct Response {
  int status = 0;  // 0: no HTTP answer
  std::string body;
  std::string error;  // why there is no usable answer; "" when status is set
};

// One request to an agent, bounded in time and size whatever the server
// does: refuses to connect, never answers, drips bytes, or sends gigabytes
// (fleet/http_exchange.hpp). An answer is never unpacked: its bound is the
// bytes that came. Redirects are answers, never followed.
Response request(const HostAddress& host, const std::string& method, const std::string& path,
                 const ClientOptions& options);

}  // namespace envcontract::fleet
