#include "daemon/http_api.hpp"

#include <httplib.h>
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
constexpr const char* k_json = "application/json";

// A plain handler's view of a request (HEAD is answered as GET).
PlainRequest plain_request(const httplib::Request& request) {
  PlainRequest plain{request.method == "HEAD" ? "GET" : request.method,
                     request.path,
                     request.params,
                     {},
                     request.remote_addr};
  plain.headers.assign(request.headers.begin(), request.headers.end());
  return plain;
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

namespace {

using SharedText = std::shared_ptr<const std::string>;

// The answer's body and then the texts it shares with every request (the
// report, the two halves of /metrics), the shared ones not copied into the
// response: httplib writes a content provider's bytes straight to the
// socket, where a body set with set_content is a copy per request (tens of
// KB). A client that accepts a compressed answer still gets one, made of a
// copy: httplib compresses only a body it holds.
void send_answer(const httplib::Request& request, httplib::Response& response,
                 PlainResponse answer) {
  response.status = answer.status;
  for (const auto& [name, value] : answer.headers) {
    response.set_header(name, value);
  }
  std::erase(answer.shared, nullptr);
  std::size_t total = answer.body.size();
  for (const auto& piece : answer.shared) {
    total += piece->size();
  }
  const auto encodings = request.get_header_value("Accept-Encoding");
  // A body of its own (the shared texts copied into it) when nothing is
  // shared, for an error (the
  // server's error handler keeps only a body it can see), when compressed
  // (httplib compresses only a body it holds), or empty (httplib 0.11.4
  // asserts that a provider has something to write).
  if (answer.shared.empty() || answer.status >= 400 || total == 0 ||
      encodings.find("gzip") != std::string::npos || encodings.find("br") != std::string::npos) {
    for (const auto& piece : answer.shared) {
      answer.body += *piece;
    }
    response.set_content(std::move(answer.body), answer.content_type);
    return;
  }
  std::vector<SharedText> pieces;
  if (!answer.body.empty()) {
    pieces.push_back(std::make_shared<const std::string>(std::move(answer.body)));
  }
  pieces.insert(pieces.end(), answer.shared.begin(), answer.shared.end());
  response.set_content_provider(
      total, answer.content_type,
      [pieces = std::move(pieces)](std::size_t offset, std::size_t size, httplib::DataSink& sink) {
        // The pieces' bytes from `offset`, as many as asked for.
        std::size_t start = 0;
        for (const auto& piece : pieces) {
          const std::size_t end = start + piece->size();
          if (size > 0 && offset < end) {
            const std::size_t from = offset - start;
            const std::size_t count = std::min(size, piece->size() - from);
            if (!sink.write(piece->data() + from, count)) {
              return false;
            }
            offset += count;
            size -= count;
          }
          start = end;
        }
        return true;
      });
}

void send_json(httplib::Response& response, int status, const Json& body) {
  response.status = status;
  response.set_content(common::json_text(body, 2) + "\n", k_json);
}

void send_error(httplib::Response& response, int status, const std::string& message) {
  send_json(response, status, {{"error", message}});
}

}  // namespace

struct HttpServer::Impl {
  Impl(Agent* agent_, std::string version_, RequestHandler handler_)
      : agent(agent_),
        metrics(version_),
        version(std::move(version_)),
        handler(std::move(handler_)) {}

  Agent* agent;  // null when `handler` answers instead (the fleet view)
  MetricsAnswer metrics;
  std::string version;
  RequestHandler handler;
  HttpSettings settings;
  BoundedServer server;
  HostPolicy hosts;
  std::size_t max_connections = 256;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
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
  // The agent's answer to a request of a known route.
  PlainResponse answer(const RouteMatch& route, const httplib::Request& request);
  void gate(Endpoint endpoint, const httplib::Request& request, httplib::Response& response);
};

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
  const PlainRequest plain = plain_request(request);
  PlainResponse answer = endpoint == Endpoint::gate          ? gate_answer(*agent, plain)
                         : endpoint == Endpoint::gate_record ? gate_record_answer(*agent, plain)
                                                             : gate_decisions_answer(*agent, plain);
  answer_current_request_within(settings.timeout);
  send_answer(request, response, std::move(answer));
}

PlainResponse HttpServer::Impl::answer(const RouteMatch& route, const httplib::Request& request) {
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

httplib::Server::HandlerResponse HttpServer::Impl::dispatch(const httplib::Request& request,
                                                            httplib::Response& response) {
  constexpr std::size_t k_max_headers = 100;
  const auto handled = httplib::Server::HandlerResponse::Handled;
  gather_current_answer();
  // The body, if any, is never read: the connection is not reused after it.
  if (request.has_header("Transfer-Encoding") ||
      request.get_header_value("Content-Length") != "0" ||
      request.get_header_value_count("Content-Length") > 1) {
    current_request_outcome().close_after = true;
  }
  if (serving_health_checks_only() && request.path != "/healthz" && request.path != "/metrics") {
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
  if (current_request_outcome().header_count > k_max_headers) {
    send_error(response, 431,
               "too many header fields (" + std::to_string(current_request_outcome().header_count) +
                   "; at most " + std::to_string(k_max_headers) + ")");
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
  if (route.endpoint == Endpoint::gate || route.endpoint == Endpoint::gate_record ||
      route.endpoint == Endpoint::gate_decisions) {
    gate(route.endpoint, request, response);
  } else {
    send_answer(request, response, answer(route, request));
  }
  return handled;
}

void HttpServer::Impl::answer_with_handler(const httplib::Request& request,
                                           httplib::Response& response) {
  send_answer(request, response, handler(plain_request(request)));
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
    if (current_request_over_budget()) {
      send_error(response, 431,
                 "request too large: the request line, headers and body may be at most " +
                     std::to_string(ConnectionLimits{}.request_bytes / 1024) + " KiB");
    } else if (current_request_past_deadline()) {
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
    current_request_outcome().status = response.status;
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
  server.serve_through_queue(
      threads, ConnectionBounds::of(impl.max_connections, settings.max_connections_per_client),
      settings.idle_thread_life);
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
  // Busy threads are not stuck ones: each connection is bounded by
  // http_timeout, so under any load a waiting connection gets a thread
  // within it. A connection that has waited several time-outs means every
  // thread hangs.
  return m_impl->server.liveness_problem(
      std::max<std::chrono::milliseconds>(std::chrono::seconds(30), 3 * m_impl->settings.timeout));
}

}  // namespace envcontract::daemon
