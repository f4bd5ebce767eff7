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

void send_json(httplib::Response& response, int status, const Json& body) {
  response.status = status;
  response.set_content(common::json_text(body, 2) + "\n", k_json);
}

void send_error(httplib::Response& response, int status, const std::string& message) {
  send_json(response, status, {{"error", message}});
}

// A plain handler's view of a request (HEAD is answered as GET), and its
// answer sent.
PlainRequest plain_request(const httplib::Request& request) {
  return {request.method == "HEAD" ? "GET" : request.method, request.path, request.params};
}

void send_answer(httplib::Response& response, PlainResponse answer) {
  response.status = answer.status;
  for (const auto& [name, value] : answer.headers) {
    response.set_header(name, value);
  }
  response.set_content(std::move(answer.body), answer.content_type);
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

namespace {

using SharedText = std::shared_ptr<const std::string>;

// Answers with `first` and then `second` (texts every request shares: the
// report, the two halves of /metrics), without copying them into the
// response: httplib writes a content provider's bytes straight to the
// socket, where a body set with set_content is a copy per request (tens of
// KB). A client that accepts a compressed answer still gets one, made of a
// copy: httplib compresses only a body it holds.
void send_shared(const httplib::Request& request, httplib::Response& response, SharedText first,
                 SharedText second, const char* type) {
  if (!second) {
    static const auto nothing = std::make_shared<const std::string>();
    second = nothing;
  }
  const auto encodings = request.get_header_value("Accept-Encoding");
  const std::size_t total = first->size() + second->size();
  // httplib 0.11.4 asserts that a provider has something to write.
  if (encodings.find("gzip") != std::string::npos || encodings.find("br") != std::string::npos ||
      total == 0) {
    response.set_content(*first, type);
    response.body += *second;
    return;
  }
  response.set_content_provider(
      total, type,
      [first = std::move(first), second = std::move(second)](std::size_t offset, std::size_t length,
                                                             httplib::DataSink& sink) {
        const std::size_t end = offset + length;
        if (offset < first->size()) {
          const std::size_t stop = std::min(end, first->size());
          if (!sink.write(first->data() + offset, stop - offset)) {
            return false;
          }
          offset = stop;
        }
        if (offset < end) {
          return sink.write(second->data() + (offset - first->size()), end - offset);
        }
        return true;
      });
}

// The `limit` parameter, when given, into `limit`: a number from 1 to
// `most`. False (with a 400 sent) when it is anything else.
bool read_limit(const httplib::Request& request, long most, std::size_t& limit,
                httplib::Response& response) {
  if (!request.has_param("limit")) {
    return true;
  }
  const std::string text = request.get_param_value("limit");
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < 1 || value > most) {
    send_error(response, 400,
               "limit must be a number from 1 to " + std::to_string(most) + ", got '" + text + "'");
    return false;
  }
  limit = static_cast<std::size_t>(value);
  return true;
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
  Impl(Agent* agent_, std::string version_, RequestHandler handler_)
      : agent(agent_), version(std::move(version_)), handler(std::move(handler_)) {}

  Agent* agent;  // null when `handler` answers instead (the fleet view)
  // /metrics: the report's series as last rendered, and what from; the
  // agent's own series likewise.
  std::mutex metrics_mutex;
  std::shared_ptr<const std::string> metrics_text;
  std::shared_ptr<const report::Report> metrics_report;
  ContractHandle metrics_contract;
  std::shared_ptr<const std::string> metrics_agent_text;
  AgentFigures metrics_figures;
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
  void healthz(httplib::Response& response);
  void report(const httplib::Request& request, httplib::Response& response);
  void env(const std::string& name, httplib::Response& response);
  void history(const httplib::Request& request, httplib::Response& response);
  void contract(httplib::Response& response);
  void compliance(httplib::Response& response);
  void plan(const httplib::Request& request, httplib::Response& response);
  void provisions(const httplib::Request& request, httplib::Response& response);
  void scan(const httplib::Request& request, httplib::Response& response);
  void gate(Endpoint endpoint, const httplib::Request& request, httplib::Response& response);
  void provision(const httplib::Request& request, httplib::Response& response, bool promote);
  void provision_job(const std::string& id, httplib::Response& response);
  // For what changes the host: a token the agent has, presented and right.
  // False (with the answer sent) otherwise.
  bool token_presented(const httplib::Request& request, httplib::Response& response,
                       const std::string& what);
  void scan_ticket(const std::string& id, httplib::Response& response);
  void metrics(const httplib::Request& request, httplib::Response& response);
  static void asset(const std::string& path, httplib::Response& response);

  // The latest report, or an answer saying why there is none.
  std::shared_ptr<const AgentSnapshot> with_report(httplib::Response& response) {
    auto snapshot = agent->snapshot();
    if (!snapshot->report) {
      send_answer(response, no_report_yet(*snapshot));
      return nullptr;
    }
    return snapshot;
  }
};

void HttpServer::Impl::healthz(httplib::Response& response) {
  const auto uptime =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started);
  send_json(response, 200,
            {{"status", "ok"}, {"version", version}, {"uptime_seconds", uptime.count()}});
}

void HttpServer::Impl::report(const httplib::Request& request, httplib::Response& response) {
  // During the first scan: the envs judged so far, verdict "pending".
  if (const auto snapshot = agent->snapshot(); !snapshot->report && snapshot->partial_text) {
    send_shared(request, response, snapshot->partial_text, nullptr, k_json);
    return;
  }
  if (auto snapshot = with_report(response)) {
    send_shared(request, response, snapshot->report_text, nullptr, k_json);
  }
}

void HttpServer::Impl::env(const std::string& name, httplib::Response& response) {
  send_answer(response, env_answer(*agent->snapshot(), name));
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
  if (!read_limit(request, 10000, query.limit, response)) {
    return;
  }
  try {
    auto transitions = agent->history(query);
    if (transitions.empty() && (!query.env.empty() || !query.target.empty())) {
      // A name with no rows may be a typo: say so, with the names known.
      const std::string scope = query.env.empty() ? "target" : "env";
      const std::string& name = query.env.empty() ? query.target : query.env;
      auto names = agent->history_names(scope);
      if (auto snapshot = agent->snapshot(); snapshot->report) {
        if (scope == "env") {
          for (const auto& env : snapshot->report->envs) {
            names.push_back(env.name);
          }
        } else {
          for (const auto& target : snapshot->report->targets) {
            names.push_back(target.name);
          }
        }
      }
      std::sort(names.begin(), names.end());
      names.erase(std::unique(names.begin(), names.end()), names.end());
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        send_json(
            response, 404,
            {{"error", "no " + scope + " named '" + name + "' in this host's report or history" +
                           common::did_you_mean(name, names)},
             {scope + "s", names}});
        return;
      }
    }
    send_json(response, 200, {{"transitions", std::move(transitions)}});
  } catch (const std::exception& e) {
    send_error(response, 500, std::string("cannot read the history: ") + e.what());
  }
}

void HttpServer::Impl::contract(httplib::Response& response) {
  send_answer(response, contract_answer(*agent->snapshot()));
}

void HttpServer::Impl::plan(const httplib::Request& request, httplib::Response& response) {
  send_answer(response, plan_answer(*agent->snapshot(), plain_request(request),
                                    {agent->provisioning_enabled(), agent->token_required()}));
}

void HttpServer::Impl::provisions(const httplib::Request& request, httplib::Response& response) {
  std::size_t limit = 100;
  for (const auto& [key, value] : request.params) {
    if (key != "limit") {
      send_error(response, 400, "unknown parameter '" + key + "'; provisions takes limit");
      return;
    }
  }
  if (!read_limit(request, 1000, limit, response)) {
    return;
  }
  try {
    send_json(response, 200, {{"provisions", agent->provisions(limit)}});
  } catch (const std::exception& e) {
    send_error(response, 500, std::string("the store could not be read: ") + e.what());
  }
}

void HttpServer::Impl::compliance(httplib::Response& response) {
  send_answer(response, compliance_answer(*agent->snapshot()));
}

bool HttpServer::Impl::token_presented(const httplib::Request& request, httplib::Response& response,
                                       const std::string& what) {
  if (!agent->token_required()) {
    send_error(response, 403,
               what +
                   " over HTTP needs the agent's token, and this agent has none: set "
                   "token_file in its config (docs/agent.md)");
    return false;
  }
  const std::string token = bearer_token(request);
  if (token.empty() || !agent->token_matches(token)) {
    response.set_header("WWW-Authenticate", "Bearer realm=\"envcontract\"");
    send_error(response, 401,
               token.empty() ? what +
                                   " needs 'Authorization: Bearer <token>' (the token is in "
                                   "the agent's token_file)"
                             : "the bearer token does not match the agent's token_file");
    return false;
  }
  return true;
}

// POST /api/v1/provision?name=NEW and POST /api/v1/promote?env=NEW&as=NAME:
// queued as a job; 202 with where to follow it.
void HttpServer::Impl::provision(const httplib::Request& request, httplib::Response& response,
                                 bool promote) {
  const std::string what = promote ? "promotion" : "provisioning";
  if (!token_presented(request, response, what)) {
    return;
  }
  if (!agent->provisioning_enabled()) {
    send_error(response, 403,
               "provisioning is not enabled on this agent: set provisioning.enabled (and "
               "provisioning.user, provisioning.envs_dir) in its config (docs/provisioning.md)");
    return;
  }
  if (const auto problem = agent->provisioning_problem(); !problem.empty()) {
    send_error(response, 403, problem);
    return;
  }
  // Parameters in the query: the agent never reads request bodies.
  for (const auto& [key, value] : request.params) {
    const bool known = promote ? (key == "env" || key == "as") : key == "name";
    if (!known) {
      send_error(response, 400,
                 "unknown parameter '" + key + "'; " +
                     (promote ? "promote takes env and as (?env=NEW&as=NAME)"
                              : "provision takes name (?name=NEW)"));
      return;
    }
  }
  const std::string name = request.get_param_value(promote ? "as" : "name");
  const std::string env = promote ? request.get_param_value("env") : "";
  // Names only: a path would reach outside the envs directory.
  for (const auto& [key, value] :
       promote ? std::vector<std::pair<std::string, std::string>>{{"env", env}, {"as", name}}
               : std::vector<std::pair<std::string, std::string>>{{"name", name}}) {
    if (const auto problem = provisioning::env_name_problem(value); !problem.empty()) {
      send_error(response, 400, "'" + key + "': " + problem);
      return;
    }
  }
  const std::string from = request.remote_addr.empty() ? "" : " from " + request.remote_addr;
  const auto id = agent->request_provision(promote ? "promote" : "provision", name, env,
                                           "api: token holder" + from);
  if (!id) {
    send_error(response, 503, id.error());
    return;
  }
  const std::string url = "/api/v1/provisions/" + std::to_string(id.value());
  response.set_header("Location", url);
  send_json(response, 202, {{"id", id.value()}, {"url", url}, {"state", "queued"}});
}

void HttpServer::Impl::provision_job(const std::string& text, httplib::Response& response) {
  const auto job = agent->provision_job(std::stoll(text));  // the route takes 1 to 15 digits
  if (!job) {
    send_error(response, 404,
               "no provision job " + text + " (the agent keeps the last " +
                   std::to_string(ProvisionJobs::max_kept) +
                   "; finished ones are in GET /api/v1/provisions)");
    return;
  }
  send_json(response, 200, to_json(*job));
}

void HttpServer::Impl::scan(const httplib::Request& request, httplib::Response& response) {
  if (agent->token_required()) {
    const std::string token = bearer_token(request);
    if (token.empty() || !agent->token_matches(token)) {
      response.set_header("WWW-Authenticate", "Bearer realm=\"envcontract\"");
      send_error(response, 401,
                 token.empty() ? "this agent needs 'Authorization: Bearer <token>' to scan "
                                 "(the token is in the agent's token_file)"
                               : "the bearer token does not match the agent's token_file");
      return;
    }
  } else if (request.get_header_value("X-Requested-By").empty()) {
    // A header no HTML form can set: without a token, it is what keeps a
    // page of another site from making a browser queue scans here.
    send_error(response, 403,
               "a scan request needs an 'X-Requested-By' header (any value, e.g. "
               "'X-Requested-By: fleetctl'), or a token when the agent has one");
    return;
  }
  const auto id = agent->request_scan("api");
  // The state when the request was taken, not whatever the scheduler has
  // made of it a microsecond later: clients follow `url` for progress.
  const Json body = {
      {"id", id}, {"url", "/api/v1/scans/" + std::to_string(id)}, {"state", "queued"}};
  response.set_header("Location", "/api/v1/scans/" + std::to_string(id));
  send_json(response, 202, body);
}

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
  send_answer(response, std::move(answer));
}

void HttpServer::Impl::scan_ticket(const std::string& text, httplib::Response& response) {
  const auto ticket = agent->ticket(std::stoll(text));  // the route takes 1 to 15 digits
  if (!ticket) {
    send_error(response, 404, "no scan request " + text + " (the agent keeps the last 200)");
    return;
  }
  send_json(response, 200, ticket_json(*ticket));
}

void HttpServer::Impl::metrics(const httplib::Request& request, httplib::Response& response) {
  const auto snapshot = agent->snapshot();
  // The report's series are the same text until the next report or
  // contract, and the agent's until one of its figures changes: each is
  // rendered once for every scrape of it.
  const auto figures = agent_figures(*snapshot, *agent);
  SharedText report_series;
  SharedText agent_series;
  {
    std::lock_guard lock(metrics_mutex);
    if (!metrics_text || metrics_report != snapshot->report ||
        metrics_contract != snapshot->contract) {
      metrics_text = std::make_shared<const std::string>(render_report_metrics(*snapshot, version));
      metrics_report = snapshot->report;
      metrics_contract = snapshot->contract;
    }
    if (!metrics_agent_text || !(metrics_figures == figures)) {
      metrics_agent_text = std::make_shared<const std::string>(render_agent_metrics(figures));
      metrics_figures = figures;
    }
    report_series = metrics_text;
    agent_series = metrics_agent_text;
  }
  send_shared(request, response, std::move(report_series), std::move(agent_series),
              "text/plain; version=0.0.4; charset=utf-8");
}

void HttpServer::Impl::asset(const std::string& path, httplib::Response& response) {
  const auto* asset = web::find_asset(path);
  if (asset == nullptr) {
    send_error(response, 404, "no such file: " + path);
    return;
  }
  response.set_content(std::string(asset->body), std::string(asset->content_type));
  response.set_header("Cache-Control", "no-cache");
  // The page loads nothing but itself, and talks only to this agent->
  response.set_header("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'");
  response.set_header("X-Content-Type-Options", "nosniff");
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
  switch (route.endpoint) {
    case Endpoint::healthz:
      healthz(response);
      break;
    case Endpoint::report:
      report(request, response);
      break;
    case Endpoint::env:
      env(route.argument, response);
      break;
    case Endpoint::history:
      history(request, response);
      break;
    case Endpoint::contract:
      contract(response);
      break;
    case Endpoint::compliance:
      compliance(response);
      break;
    case Endpoint::plan:
      plan(request, response);
      break;
    case Endpoint::provisions:
      provisions(request, response);
      break;
    case Endpoint::provision:
      provision(request, response, false);
      break;
    case Endpoint::promote:
      provision(request, response, true);
      break;
    case Endpoint::provision_job:
      provision_job(route.argument, response);
      break;
    case Endpoint::scan:
      scan(request, response);
      break;
    case Endpoint::scan_ticket:
      scan_ticket(route.argument, response);
      break;
    case Endpoint::gate:
    case Endpoint::gate_record:
    case Endpoint::gate_decisions:
      gate(route.endpoint, request, response);
      break;
    case Endpoint::metrics:
      metrics(request, response);
      break;
    case Endpoint::asset:
      asset(route.argument, response);
      break;
  }
  return handled;
}

void HttpServer::Impl::answer_with_handler(const httplib::Request& request,
                                           httplib::Response& response) {
  send_answer(response, handler(plain_request(request)));
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
