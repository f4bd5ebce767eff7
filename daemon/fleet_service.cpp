#include "daemon/fleet_service.hpp"

#include <cmath>

#include "daemon/agent_routes.hpp"

namespace envcontract::daemon {
namespace {

using report::Json;

constexpr std::string_view k_hosts_prefix = "/api/v1/fleet/hosts/";
constexpr std::string_view k_report_suffix = "/report";

const std::vector<std::string>& fleet_endpoints() {
  static const std::vector<std::string> endpoints = {"GET /", "GET /healthz", "GET /api/v1/fleet",
                                                     "GET /api/v1/fleet/hosts/HOST/report"};
  return endpoints;
}

}  // namespace

FleetService::FleetService(std::unique_ptr<fleet::FleetSource> source,
                           fleet::ClientOptions agent_client, std::string version)
    : m_source(std::move(source)),
      m_agent_client(std::move(agent_client)),
      m_version(std::move(version)) {}

PlainResponse FleetService::answer(const PlainRequest& request) {
  const std::string& path = request.path;
  const bool host_report_path = path.size() > k_hosts_prefix.size() + k_report_suffix.size() &&
                                path.starts_with(k_hosts_prefix) && path.ends_with(k_report_suffix);
  const bool page = path == "/" || path == "/fleet.html" || path == "/fleet.js" ||
                    path == "/dom.js" || path == "/style.css";
  const bool known = path == "/healthz" || path == "/api/v1/fleet" || host_report_path || page;
  if (!known) {
    return json_answer(404, {{"error", "no such endpoint: " + request.method + " " + path},
                             {"endpoints", fleet_endpoints()}});
  }
  if (request.method != "GET") {
    auto response =
        error_answer(405, request.method + " is not allowed on " + path + "; use GET or HEAD");
    response.headers.emplace_back("Allow", "GET, HEAD");
    return response;
  }
  if (path == "/healthz") {
    return json_answer(200, {{"status", "ok"}, {"version", m_version}, {"mode", "fleet"}});
  }
  if (path == "/api/v1/fleet") {
    return fleet(request);
  }
  if (host_report_path) {
    return host_report(path.substr(k_hosts_prefix.size(),
                                   path.size() - k_hosts_prefix.size() - k_report_suffix.size()));
  }
  return asset(path);
}

PlainResponse FleetService::fleet(const PlainRequest& request) {
  const auto filter = fleet::parse_fleet_filter(request.params);
  if (!filter) {
    return error_answer(400, filter.error());
  }
  const auto snapshot = m_source->snapshot();
  if (!snapshot.hosts) {
    return json_answer(502, {{"error", snapshot.problem.empty() ? "the fleet has not been read yet"
                                                                : snapshot.problem},
                             {"source", snapshot.source}});
  }
  auto view = fleet::fleet_view(*snapshot.hosts, *filter, snapshot.source, snapshot.history);
  if (!filter->to_json().empty()) {
    // The chart follows the filters: the hosts they show, over time.
    view["history"] = fleet::history_json(filtered_history(*filter, view));
  }
  // How old the hosts are, always, taken when the answer is made: one
  // older than the source's refresh says why (docs/fleet.md, "How fresh an
  // answer is"). Rounded down: an age shown at the refresh has its `stale`.
  view["as_of"] = snapshot.as_of;
  view["age_seconds"] = std::floor(snapshot.age_seconds() * 10) / 10;
  view["refresh_seconds"] = snapshot.refresh_seconds;
  if (const std::string stale = snapshot.stale(); !stale.empty()) {
    view["stale"] = stale;
  }
  if (!snapshot.problem.empty()) {
    view["problem"] = "showing the fleet as of " + snapshot.as_of + ": " + snapshot.problem;
  }
  return json_answer(200, view);
}

fleet::ComplianceHistory FleetService::filtered_history(const fleet::FleetFilter& filter,
                                                        const Json& view) {
  // Only values some host of the fleet has now are asked for: a request's
  // made-up values (or bytes that are not text) cost no query.
  const auto known = [&](const std::string& value, const char* list) {
    if (value.empty()) {
      return true;
    }
    for (const auto& each : view[list]) {
      if (fleet::same_value(value, each.get<std::string>())) {
        return true;
      }
    }
    return false;
  };
  if (!known(filter.platform, "platforms") || !known(filter.check, "checks_known") ||
      !known(filter.cause, "causes_known")) {
    fleet::ComplianceHistory none;
    none.problem =
        "no host of the fleet has this platform, failing check or cause now: no chart is asked "
        "for it";
    return none;
  }
  return m_source->history(filter);
}

PlainResponse FleetService::host_report(const std::string& host) {
  const auto snapshot = m_source->snapshot();
  const fleet::HostReport* found = nullptr;
  if (snapshot.hosts) {
    for (const auto& each : *snapshot.hosts) {
      if (each.address.text == host) {
        found = &each;
      }
    }
  }
  if (found == nullptr) {
    return error_answer(404, "no host '" + host + "' in the fleet (" + snapshot.source + ")");
  }
  if (found->address.port <= 0) {
    return error_answer(502, "'" + host + "' is not an address of an agent");
  }
  int status = 0;
  auto report = fleet::get_json(found->address, "/api/v1/report", m_agent_client, &status);
  if (!report) {
    return error_answer(502, host + ": " + report.error());
  }
  return json_answer(200, *report);
}

PlainResponse FleetService::asset(const std::string& path) {
  return asset_answer(path == "/" ? "/fleet.html" : path);
}

}  // namespace envcontract::daemon
