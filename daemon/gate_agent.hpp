#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "daemon/gate_decision_record.hpp"
#include "fleet/host_address.hpp"
#include "report/report.hpp"

// The job's side of asking the local agent for a gate's verdict
// (POST /api/v1/gate, docs/ci.md): who the job is, whether the agent on the
// port may be trusted, its answer, and the record of a decision the job's
// gate made itself.
namespace envcontract::daemon {

// The job as its CI names it, from the CI's variables (GitHub Actions:
// GITHUB_REPOSITORY, GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT, GITHUB_JOB,
// GITHUB_SERVER_URL; GitLab CI: CI_PROJECT_PATH, CI_JOB_ID, CI_JOB_URL).
struct GateJob {
  std::string ci;  // github, gitlab, "" for another CI
  std::string id;
  std::string url;
};
GateJob gate_job(const std::map<std::string, std::string>& variables);

// Why the agent's port on this machine cannot be trusted with a job's
// verdict, or "" when every socket listening there is root's. Any local
// user can listen on a free port: an agent that is not running must not be
// stood in for by a process that answers "go" for every env.
std::string listener_problem(int port);

struct AgentQuery {
  std::string contract_digest;  // LoadedContract::judged_sha256
  std::string contract_name;
  std::string contract_sha256;  // the file's
  std::string env;              // the env's prefix, "" for every env
  GateJob job;
  std::string bypass;
};

struct AgentVerdict {
  enum class Kind {
    answered,     // `report` holds the env's report, judged now by the agent
    refused,      // the agent cannot judge it (another contract, an env it does not know)
    unreachable,  // no agent, one not to be trusted, or no usable answer
  };
  Kind kind = Kind::unreachable;
  std::string why;  // refused or unreachable: in words
  report::Json report;
  std::int64_t decision_id = 0;  // the agent's record of the decision
  std::int64_t probed = 0;
  std::int64_t reused = 0;
  double elapsed_ms = 0;
};

// Asks the agent at `agent` (a loopback address) to judge the env.
AgentVerdict ask_agent(const fleet::HostAddress& agent, const AgentQuery& query);

// Tells the agent what the job's gate decided itself; "" or why it was not
// recorded.
std::string record_own_decision(const fleet::HostAddress& agent, const AgentQuery& query,
                                GateDecisionRecord::Outcome outcome, const std::string& why);

// "127.0.0.1", "::1", "localhost": the gate asks only the agent of the
// machine the job runs on.
bool is_loopback(const fleet::HostAddress& agent);

}  // namespace envcontract::daemon
