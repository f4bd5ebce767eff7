#include "fleet/agent_client.hpp"

#include "fleet/http_exchange.hpp"

namespace envcontract::fleet {
namespace {

ExchangeRequest exchange_of(const HostAddress& host, const std::string& method,
                            const std::string& path, const ClientOptions& options) {
  ExchangeRequest exchange;
  exchange.host = host.host;
  exchange.port = host.port;
  exchange.method = method;
  exchange.target = path;
  exchange.headers = {{"Accept", "application/json"}};
  if (!options.token.empty()) {
    exchange.headers.emplace_back("Authorization", "Bearer " + options.token);
  }
  if (method == "POST") {
    // Agents without a token accept requests to change state only with a
    // header that browsers cannot send across sites (docs/api.md). The
    // exchange sends Content-Length: 0 for a POST without a body.
    exchange.headers.emplace_back("X-Requested-By", "fleetctl");
  }
  return exchange;
}

// What an operator checks when nothing took the connection: that the
// server asked for runs and listens on that port.
std::string connection_failure(const HostAddress& host, const std::string& server) {
  return "cannot connect to " + host.host + " port " + std::to_string(host.port) +
         " (connection refused or host unreachable: is " + server +
         " running and listening there?)";
}

}  // namespace

Response request(const HostAddress& host, const std::string& method, const std::string& path,
                 const ClientOptions& options) {
  ExchangeBounds bounds;
  bounds.deadline = options.timeout;
  bounds.silence = options.silence;
  bounds.max_body_bytes = options.max_response_bytes;
  auto exchange = http_exchange(exchange_of(host, method, path, options), bounds);
  Response response;
  switch (exchange.failure) {
    case ExchangeFailure::none:
      response.status = exchange.status;
      response.body = std::move(exchange.body);
      break;
    case ExchangeFailure::body_past_bound:
      // Its status is no answer: a report cut short is no report.
      response.error = exchange.error + "; is this an envcontract agent?";
      break;
    case ExchangeFailure::not_connected:
      response.error = connection_failure(host, options.server);
      break;
    default:
      response.error = exchange.error;
      break;
  }
  return response;
}

}  // namespace envcontract::fleet
