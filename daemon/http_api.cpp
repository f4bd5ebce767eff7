#include "daemon/http_api.hpp"

#include <spdlog/spdlog.h>

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <mutex>
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
#include "daemon/agent_routes.hpp"
#include "daemon/bounded_http_server.hpp"
#include "daemon/connection_admission.hpp"
#include "daemon/gate_routes.hpp"
#include "daemon/http_routes.hpp"
#include "daemon/metrics.hpp"
#include "daemon/snapshot_routes.hpp"
#include "provisioning/provision_steps.hpp"
#include "report/report_json.hpp"
#include "web/web_assets.hpp"

namespace envcontract::daemon {
namespace {

using report::Json;

constexpr std::size_t k_max_request_body = 64 * 1024;

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

std::string PlainRequest::param(const std::string& name) const {
  const auto found = params.find(name);
  return found == params.end() ? std::string() : found->second;
}

std::string PlainRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key.size() == name.size() &&
        std::equal(key.begin(), key.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      return value;
    }
  }
  return {};
}

std::string PlainResponse::text() const {
  std::string all = body;
  for (const auto& piece : shared) {
    if (piece) {
      all += *piece;
    }
  }
  return all;
}

struct HttpServer::Impl {
  Impl(const HttpSettings& settings_, Agent* agent_, std::string version_, RequestHandler handler_);

  Agent* agent;  // null when `handler` answers instead (the fleet view)
  MetricsAnswer metrics;
  std::string version;
  RequestHandler handler;
  HttpSettings settings;
  HostPolicy hosts;
  std::size_t max_connections = 256;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::thread thread;  // of start()
  int port = 0;        // bound
  BoundedServer server;

  // Decides and answers every request read whole; its body, if any, is
  // never read.
  PlainResponse dispatch(ServedRequest& request);
  // Why a request could not be read, for its client.
  PlainResponse failure_answer(RequestFailure failure) const;
  // The agent's answer to a request of a known route.
  PlainResponse answer(const RouteMatch& route, const ServedRequest& request);
  PlainResponse gate(Endpoint endpoint, ServedRequest& request);
};

namespace {

ServerSettings server_settings(const HttpSettings& settings) {
  ServerSettings server;
  // Threads past the connections accepted would never serve: the bound on
  // connections holds whatever http_threads says.
  const std::size_t max_connections = std::max<std::size_t>(1, settings.max_connections);
  server.threads =
      static_cast<unsigned>(std::clamp<std::size_t>(settings.threads, 1, max_connections));
  server.bounds = ConnectionBounds::of(max_connections, settings.max_connections_per_client);
  server.idle_thread_life = settings.idle_thread_life;
  server.limits.request_timeout = settings.timeout;
  return server;
}

// A plain handler's view of a request (HEAD is answered as GET).
PlainRequest plain_request(const ServedRequest& request) {
  const RequestHead& head = request.head;
  return {head.method == "HEAD" ? "GET" : head.method, head.path, head.params, head.headers,
          request.remote_addr};
}

}  // namespace

HttpServer::Impl::Impl(const HttpSettings& settings_, Agent* agent_, std::string version_,
                       RequestHandler handler_)
    : agent(agent_),
      metrics(version_),
      version(std::move(version_)),
      handler(std::move(handler_)),
      settings(settings_),
      max_connections(std::max<std::size_t>(1, settings_.max_connections)),
      server(
          server_settings(settings_), [this](ServedRequest& request) { return dispatch(request); },
          [this](RequestFailure failure) { return failure_answer(failure); }) {}

// The CI gate's endpoints (daemon/gate_routes.hpp). A job's gate has no
// token (the agent's is root's): a header no HTML form can set keeps a page
// of another site from making a browser ask for gates or record decisions.
PlainResponse HttpServer::Impl::gate(Endpoint endpoint, ServedRequest& request) {
  if (endpoint != Endpoint::gate_decisions && request.head.header("X-Requested-By").empty()) {
    return error_answer(403,
                        "a gate request needs an 'X-Requested-By' header (any value, e.g. "
                        "'X-Requested-By: envcontract-gate')");
  }
  const PlainRequest plain = plain_request(request);
  PlainResponse answer = endpoint == Endpoint::gate          ? gate_answer(*agent, plain)
                         : endpoint == Endpoint::gate_record ? gate_record_answer(*agent, plain)
                                                             : gate_decisions_answer(*agent, plain);
  request.answer_within = settings.timeout;  // the gate may have waited for a scan
  return answer;
}

PlainResponse HttpServer::Impl::answer(const RouteMatch& route, const ServedRequest& request) {
  switch (route.endpoint) {
    case Endpoint::healthz:
      return healthz_answer(version, std::chrono::duration_cast<std::chrono::seconds>(
                                         std::chrono::steady_clock::now() - started));
    case Endpoint::report:
      return report_answer(*agent->snapshot());
    case Endpoint::env:
      return env_answer(*agent->snapshot(), route.argument);
    case Endpoint::history:
      return history_answer(*agent, plain_request(request));
    case Endpoint::contract:
      return contract_answer(*agent->snapshot());
    case Endpoint::compliance:
      return compliance_answer(*agent->snapshot());
    case Endpoint::plan:
      return plan_answer(*agent->snapshot(), plain_request(request),
                         {agent->provisioning_enabled(), agent->token_required()});
    case Endpoint::provisions:
      return provisions_answer(*agent, plain_request(request));
    case Endpoint::provision:
    case Endpoint::promote:
      return provision_answer(*agent, plain_request(request), route.endpoint == Endpoint::promote);
    case Endpoint::provision_job:
      return provision_job_answer(*agent, route.argument);
    case Endpoint::scan:
      return scan_answer(*agent, plain_request(request));
    case Endpoint::scan_ticket:
      return scan_ticket_answer(*agent, route.argument);
    case Endpoint::metrics:
      return metrics.answer(*agent);
    case Endpoint::asset:
      return asset_answer(route.argument);
    case Endpoint::gate:
    case Endpoint::gate_record:
    case Endpoint::gate_decisions:
      break;  // gate(): answered within the request's deadline
  }
  return error_answer(500, "no handler for this endpoint");
}

PlainResponse HttpServer::Impl::dispatch(ServedRequest& request) {
  const RequestHead& head = request.head;
  if (request.health_checks_only && head.path != "/healthz" && head.path != "/metrics") {
    PlainResponse refused = error_answer(
        503,
        "the agent's connections are all taken (http_max_connections, at most "
        "http_max_connections_per_client from one address); this one was kept for health "
        "checks and answers only /healthz and /metrics: retry shortly");
    refused.headers.emplace_back("Retry-After", "1");
    return refused;
  }
  const std::string length = head.header("Content-Length");
  std::uint64_t declared = 0;
  const auto [end, error] = std::from_chars(length.data(), length.data() + length.size(), declared);
  if (error == std::errc::result_out_of_range ||
      (error == std::errc() && declared > k_max_request_body)) {
    return error_answer(
        413, "request body too large (at most " + std::to_string(k_max_request_body) + " bytes)");
  }
  if (!host_allowed(head.header("Host"), hosts)) {
    return error_answer(421, "this server does not answer for host '" +
                                 printable(head.header("Host"), 200) +
                                 "'; ask it by IP address or localhost, or add the name to " +
                                 settings.allowed_hosts_setting);
  }
  if (head.field_count > k_max_header_fields) {
    return error_answer(431, "too many header fields (" + std::to_string(head.field_count) +
                                 "; at most " + std::to_string(k_max_header_fields) + ")");
  }
  if (handler) {
    return handler(plain_request(request));
  }
  const auto route = match_route(head.method, head.path);
  if (route.outcome == RouteMatch::Outcome::not_found) {
    return json_answer(404, {{"error", "no such endpoint: " + head.method + " " + head.path},
                             {"endpoints", endpoint_list()}});
  }
  if (route.outcome == RouteMatch::Outcome::wrong_method) {
    PlainResponse refused = error_answer(
        405, head.method + " is not allowed on " + head.path + "; use " + route.allowed);
    refused.headers.emplace_back("Allow", route.allowed);
    return refused;
  }
  if (route.endpoint == Endpoint::gate || route.endpoint == Endpoint::gate_record ||
      route.endpoint == Endpoint::gate_decisions) {
    return gate(route.endpoint, request);
  }
  return answer(route, request);
}

PlainResponse HttpServer::Impl::failure_answer(RequestFailure failure) const {
  switch (failure) {
    case RequestFailure::too_large:
      return error_answer(431, "request too large: the request line and headers may be at most " +
                                   std::to_string(ConnectionLimits{}.request_bytes / 1024) +
                                   " KiB");
    case RequestFailure::past_deadline:
      return error_answer(408, "the request took longer than " + settings.timeout_setting);
    case RequestFailure::target_too_long:
      return error_answer(414, "request target too long");
    case RequestFailure::malformed:
      break;
  }
  return error_answer(400, "malformed request");
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
    : m_impl(std::make_unique<Impl>(settings, agent, std::move(version), std::move(handler))) {
  m_impl->hosts = make_host_policy(
      parse_listen_address(settings.listen).value_or(ListenAddress{}).host, settings.allowed_hosts);
}

HttpServer::~HttpServer() {
  stop();
  if (m_impl->thread.joinable()) {
    m_impl->thread.join();
  }
}

common::Result<int> HttpServer::bind(const ListenAddress& address) {
  auto& impl = *m_impl;
  impl.hosts.names.push_back(address.host);
  auto port = impl.server.bind(address.host, address.port, static_cast<int>(impl.max_connections));
  if (port) {
    impl.port = port.value();
  }
  return port;
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
  m_impl->server.serve();
}

void HttpServer::stop() {
  m_impl->server.stop();
}

std::string HttpServer::liveness_problem() const {
  // Busy threads are not stuck ones: each connection is bounded by
  // http_timeout, so under any load a waiting connection gets a thread
  // within it. A connection that has waited several time-outs means every
  // thread hangs.
  return m_impl->server.liveness_problem(
      std::max<std::chrono::milliseconds>(std::chrono::seconds(30), 3 * m_impl->settings.timeout));
}

}  // namespace envcontract::daemon
