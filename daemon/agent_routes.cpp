#include "daemon/agent_routes.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <utility>
#include <vector>

#include "common/spelling.hpp"
#include "common/time_text.hpp"
#include "daemon/snapshot_routes.hpp"
#include "provisioning/provision_steps.hpp"
#include "web/web_assets.hpp"

namespace envcontract::daemon {
namespace {

using report::Json;

// The `limit` parameter, when given, into `limit`: a number from 1 to
// `most`. The 400 to answer when it is anything else.
std::optional<PlainResponse> read_limit(const PlainRequest& request, long most,
                                        std::size_t& limit) {
  if (!request.params.contains("limit")) {
    return std::nullopt;
  }
  const std::string text = request.param("limit");
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < 1 || value > most) {
    return error_answer(
        400, "limit must be a number from 1 to " + std::to_string(most) + ", got '" + text + "'");
  }
  limit = static_cast<std::size_t>(value);
  return std::nullopt;
}

// A parameter none of `known` names: the 400 saying which ones the endpoint takes.
std::optional<PlainResponse> unknown_parameter(const PlainRequest& request,
                                               const std::vector<std::string>& known,
                                               const std::string& takes) {
  for (const auto& [key, value] : request.params) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return error_answer(400, "unknown parameter '" + key + "'; " + takes);
    }
  }
  return std::nullopt;
}

// "Authorization: Bearer <token>" -> "<token>", or "".
std::string bearer_token(const PlainRequest& request) {
  const std::string header = request.header("Authorization");
  constexpr std::string_view prefix = "Bearer ";
  return header.size() > prefix.size() && header.compare(0, prefix.size(), prefix) == 0
             ? header.substr(prefix.size())
             : "";
}

// The 401 of a token missing (`missing` says what needs it) or wrong.
PlainResponse token_refused(const std::string& token, const std::string& missing) {
  auto answer = error_answer(
      401, token.empty() ? missing : "the bearer token does not match the agent's token_file");
  answer.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"envcontract\"");
  return answer;
}

// For what changes the host: a token the agent has, presented and right.
// The answer refusing it otherwise.
std::optional<PlainResponse> token_refusal(const Agent& agent, const PlainRequest& request,
                                           const std::string& what) {
  if (!agent.token_required()) {
    return error_answer(403, what +
                                 " over HTTP needs the agent's token, and this agent has none: set "
                                 "token_file in its config (docs/agent.md)");
  }
  const std::string token = bearer_token(request);
  if (token.empty() || !agent.token_matches(token)) {
    return token_refused(token, what +
                                    " needs 'Authorization: Bearer <token>' (the token is in "
                                    "the agent's token_file)");
  }
  return std::nullopt;
}

// The names a history of `scope` ("env" or "target") may be asked for:
// those of the store and of the last report.
std::vector<std::string> known_names(Agent& agent, const std::string& scope) {
  auto names = agent.history_names(scope);
  if (auto snapshot = agent.snapshot(); snapshot->report) {
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
  return names;
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

}  // namespace

PlainResponse healthz_answer(const std::string& version, std::chrono::seconds uptime) {
  return json_answer(200,
                     {{"status", "ok"}, {"version", version}, {"uptime_seconds", uptime.count()}});
}

PlainResponse report_answer(const AgentSnapshot& snapshot) {
  // During the first scan: the envs judged so far, verdict "pending".
  const auto& text = snapshot.report ? snapshot.report_text : snapshot.partial_text;
  if (!text) {
    return no_report_yet(snapshot);
  }
  PlainResponse answer;
  answer.shared.push_back(text);
  return answer;
}

PlainResponse history_answer(Agent& agent, const PlainRequest& request) {
  if (auto refused = unknown_parameter(request, {"env", "target", "check", "since", "limit"},
                                       "history takes env, target, check, since, limit")) {
    return std::move(*refused);
  }
  HistoryQuery query;
  query.env = request.param("env");
  query.target = request.param("target");
  query.check = request.param("check");
  if (!query.env.empty() && !query.target.empty()) {
    return error_answer(400, "give env or target, not both");
  }
  if (request.params.contains("since")) {
    const auto since = common::parse_rfc3339(request.param("since"));
    if (!since) {
      return error_answer(
          400,
          "since must be an RFC 3339 time such as 2026-11-24T09:00:00Z or a date such as "
          "2026-11-24, got '" +
              request.param("since") + "'");
    }
    query.since = common::rfc3339(*since);
  }
  if (auto refused = read_limit(request, 10000, query.limit)) {
    return std::move(*refused);
  }
  try {
    auto transitions = agent.history(query);
    if (transitions.empty() && (!query.env.empty() || !query.target.empty())) {
      // A name with no rows may be a typo: say so, with the names known.
      const std::string scope = query.env.empty() ? "target" : "env";
      const std::string& name = query.env.empty() ? query.target : query.env;
      const auto names = known_names(agent, scope);
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        return json_answer(404, {{"error", "no " + scope + " named '" + name +
                                               "' in this host's report or history" +
                                               common::did_you_mean(name, names)},
                                 {scope + "s", names}});
      }
    }
    return json_answer(200, {{"transitions", std::move(transitions)}});
  } catch (const std::exception& e) {
    return error_answer(500, std::string("cannot read the history: ") + e.what());
  }
}

PlainResponse provisions_answer(Agent& agent, const PlainRequest& request) {
  if (auto refused = unknown_parameter(request, {"limit"}, "provisions takes limit")) {
    return std::move(*refused);
  }
  std::size_t limit = 100;
  if (auto refused = read_limit(request, 1000, limit)) {
    return std::move(*refused);
  }
  try {
    return json_answer(200, {{"provisions", agent.provisions(limit)}});
  } catch (const std::exception& e) {
    return error_answer(500, std::string("the store could not be read: ") + e.what());
  }
}

PlainResponse provision_answer(Agent& agent, const PlainRequest& request, bool promote) {
  const std::string what = promote ? "promotion" : "provisioning";
  if (auto refused = token_refusal(agent, request, what)) {
    return std::move(*refused);
  }
  if (!agent.provisioning_enabled()) {
    return error_answer(
        403,
        "provisioning is not enabled on this agent: set provisioning.enabled (and "
        "provisioning.user, provisioning.envs_dir) in its config (docs/provisioning.md)");
  }
  if (const auto problem = agent.provisioning_problem(); !problem.empty()) {
    return error_answer(403, problem);
  }
  // Parameters in the query: the agent never reads request bodies.
  if (auto refused =
          promote ? unknown_parameter(request, {"env", "as"},
                                      "promote takes env and as (?env=NEW&as=NAME)")
                  : unknown_parameter(request, {"name"}, "provision takes name (?name=NEW)")) {
    return std::move(*refused);
  }
  const std::string name = request.param(promote ? "as" : "name");
  const std::string env = promote ? request.param("env") : "";
  // Names only: a path would reach outside the envs directory.
  for (const auto& [key, value] :
       promote ? std::vector<std::pair<std::string, std::string>>{{"env", env}, {"as", name}}
               : std::vector<std::pair<std::string, std::string>>{{"name", name}}) {
    if (const auto problem = provisioning::env_name_problem(value); !problem.empty()) {
      return error_answer(400, "'" + key + "': " + problem);
    }
  }
  const std::string from = request.remote_addr.empty() ? "" : " from " + request.remote_addr;
  const auto id = agent.request_provision(promote ? "promote" : "provision", name, env,
                                          "api: token holder" + from);
  if (!id) {
    return error_answer(503, id.error());
  }
  const std::string url = "/api/v1/provisions/" + std::to_string(id.value());
  auto answer = json_answer(202, {{"id", id.value()}, {"url", url}, {"state", "queued"}});
  answer.headers.emplace_back("Location", url);
  return answer;
}

PlainResponse provision_job_answer(const Agent& agent, const std::string& id) {
  const auto job = agent.provision_job(std::stoll(id));
  if (!job) {
    return error_answer(404, "no provision job " + id + " (the agent keeps the last " +
                                 std::to_string(ProvisionJobs::max_kept) +
                                 "; finished ones are in GET /api/v1/provisions)");
  }
  return json_answer(200, to_json(*job));
}

PlainResponse scan_answer(Agent& agent, const PlainRequest& request) {
  if (agent.token_required()) {
    const std::string token = bearer_token(request);
    if (token.empty() || !agent.token_matches(token)) {
      return token_refused(token,
                           "this agent needs 'Authorization: Bearer <token>' to scan "
                           "(the token is in the agent's token_file)");
    }
  } else if (request.header("X-Requested-By").empty()) {
    // A header no HTML form can set: without a token, it is what keeps a
    // page of another site from making a browser queue scans here.
    return error_answer(403,
                        "a scan request needs an 'X-Requested-By' header (any value, e.g. "
                        "'X-Requested-By: fleetctl'), or a token when the agent has one");
  }
  const auto id = agent.request_scan("api");
  // The state when the request was taken, not whatever the scheduler has
  // made of it a microsecond later: clients follow `url` for progress.
  const std::string url = "/api/v1/scans/" + std::to_string(id);
  auto answer = json_answer(202, {{"id", id}, {"url", url}, {"state", "queued"}});
  answer.headers.emplace_back("Location", url);
  return answer;
}

PlainResponse scan_ticket_answer(const Agent& agent, const std::string& id) {
  const auto ticket = agent.ticket(std::stoll(id));
  if (!ticket) {
    return error_answer(404, "no scan request " + id + " (the agent keeps the last 200)");
  }
  return json_answer(200, ticket_json(*ticket));
}

PlainResponse asset_answer(const std::string& path) {
  const auto* asset = web::find_asset(path);
  if (asset == nullptr) {
    return error_answer(404, "no such file: " + path);
  }
  PlainResponse answer;
  answer.body = std::string(asset->body);
  answer.content_type = std::string(asset->content_type);
  answer.headers = {{"Cache-Control", "no-cache"},
                    // The page loads nothing but itself, and talks only to this agent.
                    {"Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'"},
                    {"X-Content-Type-Options", "nosniff"}};
  return answer;
}

PlainResponse MetricsAnswer::answer(const Agent& agent) {
  const auto snapshot = agent.snapshot();
  const auto figures = agent_figures(*snapshot, agent);
  PlainResponse answer;
  answer.content_type = "text/plain; version=0.0.4; charset=utf-8";
  std::lock_guard lock(m_mutex);
  if (!m_report_series || m_report != snapshot->report || m_contract != snapshot->contract) {
    m_report_series =
        std::make_shared<const std::string>(render_report_metrics(*snapshot, m_version));
    m_report = snapshot->report;
    m_contract = snapshot->contract;
  }
  if (!m_agent_series || !(m_figures == figures)) {
    m_agent_series = std::make_shared<const std::string>(render_agent_metrics(figures));
    m_figures = figures;
  }
  answer.shared = {m_report_series, m_agent_series};
  return answer;
}

}  // namespace envcontract::daemon
