#include "daemon/snapshot_routes.hpp"

#include <algorithm>

#include "report/report_json.hpp"

namespace envcontract::daemon {

using report::Json;

PlainResponse no_report_yet(const AgentSnapshot& snapshot) {
  return json_answer(503, {{"error", "no scan has finished yet; the first one is running"},
                           {"scanning", snapshot.scanning}});
}

PlainResponse env_answer(const AgentSnapshot& snapshot, const std::string& name) {
  if (!snapshot.report) {
    return no_report_yet(snapshot);
  }
  const auto& report = *snapshot.report;
  std::vector<std::string> names;
  for (const auto& env : report.envs) {
    if (env.name == name) {
      Json body = report::to_json(env);
      body["host"] = report.host;
      body["scanned_at"] = report.scanned_at;
      body["scan_id"] = report.scan_id ? Json(*report.scan_id) : Json(nullptr);
      return json_answer(200, body);
    }
    names.push_back(env.name);
  }
  return json_answer(404, {{"error", "no env named '" + name + "' on this host"}, {"envs", names}});
}

PlainResponse compliance_answer(const AgentSnapshot& snapshot) {
  if (!snapshot.report) {
    return no_report_yet(snapshot);
  }
  const auto& report = *snapshot.report;
  return json_answer(report.verdict == report::Verdict::compliant ? 200 : 503,
                     {{"verdict", to_string(report.verdict)},
                      {"host", report.host},
                      {"scanned_at", report.scanned_at},
                      {"compliant_envs", report.compliant_envs},
                      {"reasons", report.reasons}});
}

PlainResponse contract_answer(const AgentSnapshot& snapshot) {
  if (!snapshot.contract) {
    return error_answer(503, "no contract is loaded");
  }
  const auto& identity = snapshot.contract->identity;
  return json_answer(200,
                     {{"name", identity.name},
                      {"path", identity.path},
                      {"sha256", identity.sha256},
                      {"source", snapshot.contract_source},
                      {"loaded_at", snapshot.contract_loaded_at},
                      {"reload_error",
                       snapshot.reload_error.empty() ? Json(nullptr) : Json(snapshot.reload_error)},
                      {"contract", contracts::to_json(snapshot.contract->contract)}});
}

PlainResponse plan_answer(const AgentSnapshot& snapshot, const PlainRequest& request,
                          const ProvisioningOffer& offer) {
  for (const auto& [key, value] : request.params) {
    if (key != "env") {
      return error_answer(400, "unknown parameter '" + key + "'; plan takes env");
    }
  }
  if (!snapshot.report) {
    return no_report_yet(snapshot);
  }
  if (!snapshot.plan) {
    return error_answer(503, "no plan could be made of the last report (the agent's log says why)");
  }
  Json plan = *snapshot.plan;
  plan["provisioning"] = {{"enabled", offer.enabled}, {"token_required", offer.token_required}};
  const auto env = request.params.find("env");
  if (env == request.params.end()) {
    return json_answer(200, plan);
  }
  Json envs = Json::array();
  for (const auto& entry : plan["envs"]) {
    if (entry.value("env", std::string()) == env->second) {
      envs.push_back(entry);
    }
  }
  if (envs.empty()) {
    const auto& reported = snapshot.report->envs;
    const bool known = std::any_of(reported.begin(), reported.end(),
                                   [&](const auto& entry) { return entry.name == env->second; });
    if (!known) {
      return error_answer(404, "no env '" + env->second + "' in the last report");
    }
    // Known and compliant: nothing to do.
  }
  plan["envs"] = envs;
  return json_answer(200, plan);
}

}  // namespace envcontract::daemon
