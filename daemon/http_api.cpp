#include "daemon/http_api.hpp"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <regex>

#include "common/json_text.hpp"
#include "common/time_text.hpp"
#include "contracts/env_facts.hpp"
#include "daemon/metrics.hpp"
#include "web/web_assets.hpp"

namespace envcontract::daemon {
namespace {

using report::Json;

constexpr std::size_t k_max_request_body = 64 * 1024;
constexpr const char* k_json = "application/json";

void send_json(httplib::Response& response, int status, const Json& body) {
  response.status = status;
  response.set_content(common::json_text(body, 2) + "\n", k_json);
}

void send_error(httplib::Response& response, int status, const std::string& message) {
  send_json(response, status, {{"error", message}});
}

const std::vector<std::string>& endpoint_list() {
  static const std::vector<std::string> endpoints = {
      "GET /healthz",         "GET /api/v1/report",     "GET /api/v1/envs/{name}",
      "GET /api/v1/history",  "GET /api/v1/contract",   "GET /api/v1/compliance",
      "POST /api/v1/scan",    "GET /api/v1/scans/{id}", "GET /metrics",
      "GET / (the dashboard)"};
  return endpoints;
}

// The method a known path takes, or "" for an unknown path.
std::string allowed_method(const std::string& path) {
  static const std::regex get_paths(
      R"re(/healthz|/metrics|/|/index\.html|/app\.js|/style\.css|/api/v1/(report|history|contract|compliance|envs/[^/]+|scans/\d+))re");
  if (path == "/api/v1/scan") {
    return "POST";
  }
  return std::regex_match(path, get_paths) ? "GET" : "";
}

Json ticket_json(const ScanTicket& ticket) {
  return {{"id", ticket.id},
          {"state", ticket.state},
          {"reason", ticket.reason},
          {"queued_at", ticket.queued_at},
          {"finished_at", ticket.finished_at.empty() ? Json(nullptr) : Json(ticket.finished_at)},
          {"scan_id", ticket.scan_id ? Json(*ticket.scan_id) : Json(nullptr)},
          {"error", ticket.error.empty() ? Json(nullptr) : Json(ticket.error)}};
}

// "Authorization: Bearer <token>" -> "<token>", or "".
std::string bearer_token(const httplib::Request& request) {
  const std::string header = request.get_header_value("Authorization");
  constexpr std::string_view prefix = "Bearer ";
  return header.size() > prefix.size() && header.compare(0, prefix.size(), prefix) == 0
             ? header.substr(prefix.size())
             : "";
}

}  // namespace

struct HttpServer::Impl {
  Impl(Agent& agent_, std::string version_) : agent(agent_), version(std::move(version_)) {}

  Agent& agent;
  std::string version;
  httplib::Server server;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  void routes();
  void report(const httplib::Request&, httplib::Response& response);
  void env(const httplib::Request& request, httplib::Response& response);
  void history(const httplib::Request& request, httplib::Response& response);
  void contract(const httplib::Request&, httplib::Response& response);
  void compliance(const httplib::Request&, httplib::Response& response);
  void scan(const httplib::Request& request, httplib::Response& response);
  void scan_ticket(const httplib::Request& request, httplib::Response& response);

  // The latest report, or an answer saying why there is none.
  std::shared_ptr<const AgentSnapshot> with_report(httplib::Response& response) {
    auto snapshot = agent.snapshot();
    if (!snapshot->report) {
      send_json(response, 503,
                {{"error", "no scan has finished yet; the first one is running"},
                 {"scanning", snapshot->scanning}});
      return nullptr;
    }
    return snapshot;
  }
};

void HttpServer::Impl::report(const httplib::Request&, httplib::Response& response) {
  if (auto snapshot = with_report(response)) {
    response.set_content(*snapshot->report_text, k_json);
  }
}

void HttpServer::Impl::env(const httplib::Request& request, httplib::Response& response) {
  auto snapshot = with_report(response);
  if (!snapshot) {
    return;
  }
  const std::string name = request.matches[1];
  std::vector<std::string> names;
  for (const auto& env : contracts::array_field(*snapshot->report, "envs")) {
    if (contracts::string_field(env, "name") == name) {
      Json body = env;
      body["host"] = snapshot->report->value("host", "");
      body["scanned_at"] = snapshot->report->value("scanned_at", "");
      body["scan_id"] = snapshot->report->value("scan_id", Json(nullptr));
      send_json(response, 200, body);
      return;
    }
    names.push_back(contracts::string_field(env, "name"));
  }
  send_json(response, 404,
            {{"error", "no env named '" + name + "' on this host"}, {"envs", names}});
}

void HttpServer::Impl::history(const httplib::Request& request, httplib::Response& response) {
  static const std::vector<std::string> known = {"env", "target", "check", "since", "limit"};
  for (const auto& [key, value] : request.params) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      send_error(response, 400,
                 "unknown parameter '" + key + "'; history takes env, target, check, since, limit");
      return;
    }
  }
  HistoryQuery query;
  query.env = request.get_param_value("env");
  query.target = request.get_param_value("target");
  query.check = request.get_param_value("check");
  if (!query.env.empty() && !query.target.empty()) {
    send_error(response, 400, "give env or target, not both");
    return;
  }
  if (request.has_param("since")) {
    const auto since = common::parse_rfc3339(request.get_param_value("since"));
    if (!since) {
      send_error(response, 400,
                 "since must be an RFC 3339 time such as 2026-11-24T09:00:00Z or a date such as "
                 "2026-11-24, got '" +
                     request.get_param_value("since") + "'");
      return;
    }
    query.since = common::rfc3339(*since);
  }
  if (request.has_param("limit")) {
    const std::string text = request.get_param_value("limit");
    char* end = nullptr;
    errno = 0;
    const long limit = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || limit < 1 || limit > 10000) {
      send_error(response, 400, "limit must be a number from 1 to 10000, got '" + text + "'");
      return;
    }
    query.limit = static_cast<std::size_t>(limit);
  }
  try {
    send_json(response, 200, {{"transitions", agent.history(query)}});
  } catch (const std::exception& e) {
    send_error(response, 500, std::string("cannot read the history: ") + e.what());
  }
}

void HttpServer::Impl::contract(const httplib::Request&, httplib::Response& response) {
  const auto snapshot = agent.snapshot();
  if (!snapshot->contract) {
    send_error(response, 503, "no contract is loaded");
    return;
  }
  const auto& identity = snapshot->contract->identity;
  send_json(response, 200,
            {{"name", identity.name},
             {"path", identity.path},
             {"sha256", identity.sha256},
             {"source", snapshot->contract_source},
             {"loaded_at", snapshot->contract_loaded_at},
             {"reload_error",
              snapshot->reload_error.empty() ? Json(nullptr) : Json(snapshot->reload_error)},
             {"contract", contracts::to_json(snapshot->contract->contract)}});
}

void HttpServer::Impl::compliance(const httplib::Request&, httplib::Response& response) {
  auto snapshot = with_report(response);
  if (!snapshot) {
    return;
  }
  const auto& report = *snapshot->report;
  const std::string verdict = report.value("verdict", "error");
  send_json(response, verdict == "compliant" ? 200 : 503,
            {{"verdict", verdict},
             {"host", report.value("host", "")},
             {"scanned_at", report.value("scanned_at", "")},
             {"compliant_envs", contracts::array_field(report, "compliant_envs")},
             {"reasons", contracts::array_field(report, "reasons")}});
}

void HttpServer::Impl::scan(const httplib::Request& request, httplib::Response& response) {
  if (agent.token_required()) {
    const std::string token = bearer_token(request);
    if (token.empty() || !agent.token_matches(token)) {
      response.set_header("WWW-Authenticate", "Bearer realm=\"envcontract\"");
      send_error(response, 401,
                 token.empty() ? "this agent needs 'Authorization: Bearer <token>' to scan "
                                 "(the token is in the agent's token_file)"
                               : "the bearer token does not match the agent's token_file");
      return;
    }
  }
  const auto id = agent.request_scan("api");
  Json body = {{"id", id}, {"url", "/api/v1/scans/" + std::to_string(id)}};
  if (const auto ticket = agent.ticket(id)) {
    body["state"] = ticket->state;
  }
  response.set_header("Location", "/api/v1/scans/" + std::to_string(id));
  send_json(response, 202, body);
}

void HttpServer::Impl::scan_ticket(const httplib::Request& request, httplib::Response& response) {
  const std::string text = request.matches[1];
  const auto ticket = agent.ticket(std::stoll(text));  // the route only matches digits
  if (!ticket) {
    send_error(response, 404, "no scan request " + text + " (the agent keeps the last 200)");
    return;
  }
  send_json(response, 200, ticket_json(*ticket));
}

void HttpServer::Impl::routes() {
  server.Get("/healthz", [this](const httplib::Request&, httplib::Response& response) {
    const auto uptime = std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::steady_clock::now() - started);
    send_json(response, 200,
              {{"status", "ok"}, {"version", version}, {"uptime_seconds", uptime.count()}});
  });
  server.Get("/api/v1/report", [this](const auto& q, auto& r) { report(q, r); });
  server.Get(R"(/api/v1/envs/([^/]+))", [this](const auto& q, auto& r) { env(q, r); });
  server.Get("/api/v1/history", [this](const auto& q, auto& r) { history(q, r); });
  server.Get("/api/v1/contract", [this](const auto& q, auto& r) { contract(q, r); });
  server.Get("/api/v1/compliance", [this](const auto& q, auto& r) { compliance(q, r); });
  server.Post("/api/v1/scan", [this](const auto& q, auto& r) { scan(q, r); });
  server.Get(R"(/api/v1/scans/(\d{1,15}))", [this](const auto& q, auto& r) { scan_ticket(q, r); });
  server.Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
    const auto snapshot = agent.snapshot();
    response.set_content(render_metrics(*snapshot, agent.counters(), version),
                         "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Get(R"(/(|index\.html|app\.js|style\.css))", [](const httplib::Request& request,
                                                         httplib::Response& response) {
    const auto* asset = web::find_asset(request.path);
    if (asset == nullptr) {
      send_error(response, 404, "no such file: " + request.path);
      return;
    }
    response.set_content(std::string(asset->body), std::string(asset->content_type));
    response.set_header("Cache-Control", "no-cache");
    // The page loads nothing but itself, and talks only to this agent.
    response.set_header("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'");
    response.set_header("X-Content-Type-Options", "nosniff");
  });

  // Anything else: a JSON error. httplib answers every unrouted request with
  // 404; a known path asked with the wrong method becomes 405 with Allow.
  server.set_error_handler([](const httplib::Request& request, httplib::Response& response) {
    if (!response.body.empty()) {
      return;  // a handler's own error answer
    }
    const std::string allowed = allowed_method(request.path);
    if (response.status == 404 && !allowed.empty() && allowed != request.method) {
      response.set_header("Allow", allowed);
      send_error(response, 405,
                 request.method + " is not allowed on " + request.path + "; use " + allowed);
    } else if (response.status == 404) {
      send_json(response, 404,
                {{"error", "no such endpoint: " + request.method + " " + request.path},
                 {"endpoints", endpoint_list()}});
    } else if (response.status == 413) {
      send_error(
          response, 413,
          "request body too large (at most " + std::to_string(k_max_request_body) + " bytes)");
    } else if (response.status == 400) {
      send_error(response, 400,
                 "malformed request (a POST needs a Content-Length header: curl -d '' ...)");
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
        spdlog::error("{} {}: {}", request.method, request.path, what);
        send_error(response, 500, "internal error: " + what);
      });
  server.set_logger([](const httplib::Request& request, const httplib::Response& response) {
    spdlog::debug("{} {} -> {}", request.method, request.path, response.status);
  });
}

HttpServer::HttpServer(Agent& agent, std::string version)
    : m_impl(std::make_unique<Impl>(agent, std::move(version))) {
  auto& server = m_impl->server;
  const auto threads = std::max(1U, agent.config().http_threads);
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_payload_max_length(k_max_request_body);
  const auto timeout = agent.config().http_timeout;
  server.set_read_timeout(timeout);
  server.set_write_timeout(timeout);
  server.set_keep_alive_timeout(5);
  server.set_keep_alive_max_count(100);
  m_impl->routes();
}

HttpServer::~HttpServer() = default;

std::variant<int, std::string> HttpServer::bind(const ListenAddress& address) {
  auto& server = m_impl->server;
  if (address.host.find(':') != std::string::npos) {
    server.set_address_family(AF_INET6);
  }
  if (address.port == 0) {
    const int port = server.bind_to_any_port(address.host);
    if (port < 0) {
      return "cannot listen on " + address.host + ": " + std::strerror(errno);
    }
    return port;
  }
  if (!server.bind_to_port(address.host, address.port)) {
    return "cannot listen on " + address.host + ":" + std::to_string(address.port) + ": " +
           std::strerror(errno) + " (is another agent running? choose another --listen)";
  }
  return address.port;
}

void HttpServer::serve() {
  m_impl->server.listen_after_bind();
}

void HttpServer::stop() {
  m_impl->server.stop();
}

}  // namespace envcontract::daemon
