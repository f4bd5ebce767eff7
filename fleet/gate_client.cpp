#include "fleet/gate_client.hpp"

#include <chrono>

#include "common/json_fields.hpp"
#include "common/json_from_outside.hpp"
#include "fleet/query_string.hpp"
#include "report/report_json.hpp"

namespace envcontract::fleet {

namespace {

using Json = report::Json;

std::string variable(const std::map<std::string, std::string>& variables, const char* name) {
  const auto found = variables.find(name);
  return found == variables.end() ? "" : found->second;
}

std::int64_t integer_field(const Json& object, const char* key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_number_integer() ? found->get<std::int64_t>() : 0;
}

}  // namespace

GateJob gate_job(const std::map<std::string, std::string>& variables) {
  GateJob job;
  if (variable(variables, "GITHUB_ACTIONS") == "true") {
    job.ci = "github";
    const std::string repository = variable(variables, "GITHUB_REPOSITORY");
    const std::string run = variable(variables, "GITHUB_RUN_ID");
    const std::string attempt = variable(variables, "GITHUB_RUN_ATTEMPT");
    const std::string name = variable(variables, "GITHUB_JOB");
    job.id = repository + (run.empty() ? "" : " run " + run) +
             (attempt.empty() ? "" : " attempt " + attempt) + (name.empty() ? "" : " job " + name);
    const std::string server = variable(variables, "GITHUB_SERVER_URL");
    if (!server.empty() && !repository.empty() && !run.empty()) {
      job.url = server + "/" + repository + "/actions/runs/" + run;
    }
  } else if (variable(variables, "GITLAB_CI") == "true") {
    job.ci = "gitlab";
    const std::string project = variable(variables, "CI_PROJECT_PATH");
    const std::string id = variable(variables, "CI_JOB_ID");
    job.id = project + (id.empty() ? "" : (project.empty() ? "job " : " job ") + id);
    job.url = variable(variables, "CI_JOB_URL");
  }
  return job;
}

GateVerdict ask_gate(const HostAddress& agent, const GateQuery& query,
                     const ClientOptions& options) {
  GateVerdict verdict;
  const auto response = request(agent, "POST",
                                "/api/v1/gate" + query_string({
                                                     {"contract", query.contract_digest},
                                                     {"env", query.env},
                                                     {"ci", query.job.ci},
                                                     {"job_id", query.job.id},
                                                     {"job_url", query.job.url},
                                                     {"bypass", query.bypass},
                                                 }),
                                options);
  if (response.status == 0) {
    verdict.why = response.error;
    return verdict;
  }
  const auto body =
      common::parse_outside_json(response.body, "the agent's answer", {options.max_response_bytes});
  const std::string error = body ? common::string_field(body.value(), "error") : "";
  if (response.status == 404 || response.status == 409 ||
      (response.status == 503 && !error.empty())) {
    verdict.kind = GateVerdict::Kind::refused;
    verdict.why = error.empty() ? "the agent answered " + std::to_string(response.status) : error;
    return verdict;
  }
  if (response.status != 200 || !body) {
    verdict.why = "the agent answered " + std::to_string(response.status) +
                  (!body           ? ": " + body.error()
                   : error.empty() ? ""
                                   : ": " + error);
    return verdict;
  }
  const auto& answer = body.value();
  const auto report = answer.is_object() ? answer.find("report") : answer.end();
  const auto decision = answer.is_object() ? answer.find("decision") : answer.end();
  if (report == answer.end() || !report->is_object() || decision == answer.end() ||
      !decision->is_object()) {
    verdict.why = "the agent's answer holds no report: is this an envcontract agent?";
    return verdict;
  }
  verdict.kind = GateVerdict::Kind::answered;
  verdict.report = report::report_from_json(*report);
  verdict.decision_id = integer_field(*decision, "id");
  verdict.probed = integer_field(answer, "probed");
  verdict.reused = integer_field(answer, "reused");
  const auto elapsed = answer.find("elapsed_ms");
  verdict.elapsed_ms =
      elapsed != answer.end() && elapsed->is_number() ? elapsed->get<double>() : 0.0;
  return verdict;
}

std::string record_gate_decision(const HostAddress& agent, const GateQuery& query,
                                 std::string_view outcome, const std::string& why) {
  ClientOptions options;
  options.timeout = std::chrono::seconds(5);
  options.max_response_bytes = 64 << 10;
  const auto response =
      request(agent, "POST",
              "/api/v1/gate/record" + query_string({
                                          {"outcome", std::string(outcome)},
                                          {"env", query.env},
                                          {"contract_name", query.contract_name},
                                          {"contract_sha256", query.contract_sha256},
                                          {"ci", query.job.ci},
                                          {"job_id", query.job.id},
                                          {"job_url", query.job.url},
                                          {"bypass", outcome == "go" ? "" : query.bypass},
                                          {"why", why},
                                      }),
              options);
  if (response.status == 201) {
    return "";
  }
  return response.status == 0 ? response.error
                              : "the agent answered " + std::to_string(response.status);
}

}  // namespace envcontract::fleet
