#include "daemon/gate_agent.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "common/json_from_outside.hpp"
#include "fleet/agent_client.hpp"
#include "fleet/query_string.hpp"

namespace envcontract::daemon {

namespace {

using Json = report::Json;

std::string variable(const std::map<std::string, std::string>& variables, const char* name) {
  const auto found = variables.find(name);
  return found == variables.end() ? "" : found->second;
}

// Every socket listening on `port` in one of /proc/net/tcp{,6}: its owner's uid.
std::vector<unsigned long> listener_uids(const char* table, int port) {
  std::vector<unsigned long> uids;
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot;
    std::string local;
    std::string remote;
    std::string state;
    std::string queues;
    std::string timer;
    std::string retransmits;
    unsigned long uid = 0;
    if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid)) {
      continue;
    }
    const auto colon = local.rfind(':');
    if (state != "0A" || colon == std::string::npos) {
      continue;  // 0A: LISTEN
    }
    if (std::stoi(local.substr(colon + 1), nullptr, 16) == port) {
      uids.push_back(uid);
    }
  }
  return uids;
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

std::string listener_problem(int port) {
  std::vector<unsigned long> uids = listener_uids("/proc/net/tcp", port);
  const auto six = listener_uids("/proc/net/tcp6", port);
  uids.insert(uids.end(), six.begin(), six.end());
  for (const auto uid : uids) {
    if (uid != 0) {
      return "port " + std::to_string(port) + " is held by uid " + std::to_string(uid) +
             ", not root: the agent runs as root, so what answers there is not asked";
    }
  }
  return "";
}

bool is_loopback(const fleet::HostAddress& agent) {
  return agent.host == "127.0.0.1" || agent.host == "::1" || agent.host == "localhost";
}

AgentVerdict ask_agent(const fleet::HostAddress& agent, const AgentQuery& query) {
  AgentVerdict verdict;
  if (const auto problem = listener_problem(agent.port); !problem.empty()) {
    verdict.why = problem;
    return verdict;
  }
  fleet::ClientOptions options;
  // The env's code may have to run again (its files changed): as long as a
  // scan of it may take, within reason for a job that waits.
  options.timeout = std::chrono::minutes(10);
  options.max_response_bytes = 16 << 20;
  const auto response = fleet::request(agent, "POST",
                                       "/api/v1/gate" + fleet::query_string({
                                                            {"contract", query.contract_digest},
                                                            {"env", query.env},
                                                            {"ci", query.job.ci},
                                                            {"job_id", query.job.id},
                                                            {"job_url", query.job.url},
                                                            {"bypass", query.bypass},
                                                        }),
                                       options);
  // Asked again after the answer: a listener that took the port while the
  // request ran is not believed either.
  if (const auto problem = listener_problem(agent.port); !problem.empty()) {
    verdict.why = problem;
    return verdict;
  }
  if (response.status == 0) {
    verdict.why = response.error;
    return verdict;
  }
  const auto body =
      common::parse_outside_json(response.body, "the agent's answer", {options.max_response_bytes});
  const auto text_of = [&body](const char* key) {
    if (!body || !body.value().is_object()) {
      return std::string();
    }
    const auto found = body.value().find(key);
    return found != body.value().end() && found->is_string() ? found->get<std::string>()
                                                             : std::string();
  };
  if (response.status == 404 || response.status == 409 ||
      (response.status == 503 && !text_of("error").empty())) {
    verdict.kind = AgentVerdict::Kind::refused;
    verdict.why = text_of("error");
    return verdict;
  }
  if (response.status != 200 || !body) {
    verdict.why =
        "the agent answered " + std::to_string(response.status) +
        (body ? (text_of("error").empty() ? "" : ": " + text_of("error")) : ": " + body.error());
    return verdict;
  }
  const auto& answer = body.value();
  const auto report = answer.find("report");
  const auto decision = answer.find("decision");
  if (!answer.is_object() || report == answer.end() || !report->is_object() ||
      decision == answer.end() || !decision->is_object()) {
    verdict.why = "the agent's answer holds no report: is this an envcontract agent?";
    return verdict;
  }
  verdict.kind = AgentVerdict::Kind::answered;
  verdict.report = *report;
  const auto number = [](const Json& object, const char* key) {
    const auto found = object.find(key);
    return found != object.end() && found->is_number_integer() ? found->get<std::int64_t>() : 0;
  };
  verdict.decision_id = number(*decision, "id");
  verdict.probed = number(answer, "probed");
  verdict.reused = number(answer, "reused");
  const auto elapsed = answer.find("elapsed_ms");
  verdict.elapsed_ms =
      elapsed != answer.end() && elapsed->is_number() ? elapsed->get<double>() : 0.0;
  return verdict;
}

std::string record_own_decision(const fleet::HostAddress& agent, const AgentQuery& query,
                                GateDecisionRecord::Outcome outcome, const std::string& why) {
  if (const auto problem = listener_problem(agent.port); !problem.empty()) {
    return problem;
  }
  fleet::ClientOptions options;
  options.timeout = std::chrono::seconds(5);
  options.max_response_bytes = 64 << 10;
  const auto response = fleet::request(
      agent, "POST",
      "/api/v1/gate/record" +
          fleet::query_string({
              {"outcome", to_string(outcome)},
              {"env", query.env},
              {"contract_name", query.contract_name},
              {"contract_sha256", query.contract_sha256},
              {"ci", query.job.ci},
              {"job_id", query.job.id},
              {"job_url", query.job.url},
              {"bypass", outcome == GateDecisionRecord::Outcome::go ? "" : query.bypass},
              {"why", why},
          }),
      options);
  if (response.status == 201) {
    return "";
  }
  return response.status == 0 ? response.error
                              : "the agent answered " + std::to_string(response.status);
}

}  // namespace envcontract::daemon
