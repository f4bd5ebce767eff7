#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "fleet/agent_client.hpp"
#include "fleet/host_address.hpp"
#include "report/report.hpp"

// Asking an agent for a CI gate's verdict (POST /api/v1/gate, docs/ci.md)
// and telling it what a job's gate decided itself: shared by
// `envcontractd gate` (the local agent) and `fleetctl gate` (another host's).
namespace envcontract::fleet {

// The job as its CI names it, from the CI's variables (GitHub Actions:
// GITHUB_REPOSITORY, GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT, GITHUB_JOB,
// GITHUB_SERVER_URL; GitLab CI: CI_PROJECT_PATH, CI_JOB_ID, CI_JOB_URL).
struct GateJob {
  std::string ci;  // github, gitlab, "" for another CI
  std::string id;
  std::string url;
};
GateJob gate_job(const std::map<std::string, std::string>& variables);

struct GateQuery {
  std::string
      contract_digest;        // the contract as judged (contracts::judged_sha256); "": the agent's
  std::string contract_name;  // for a record of the job's own decision
  std::string contract_sha256;  // the file's, likewise
  std::string env;              // the env's prefix on the agent's host, "" for every env
  GateJob job;
  std::string bypass;
};

struct GateVerdict {
  enum class Kind {
    answered,     // `report` holds the env's report, judged now by the agent
    refused,      // the agent cannot judge it (another contract, an env it does not know)
    unreachable,  // no agent, or no usable answer
  };
  Kind kind = Kind::unreachable;
  std::string why;  // refused or unreachable: in words
  report::Report report;
  std::int64_t decision_id = 0;  // the agent's record of the decision
  std::int64_t probed = 0;       // envs whose code ran for the answer
  std::int64_t reused = 0;       // envs whose facts were fresh
  double elapsed_ms = 0;
};

// One POST /api/v1/gate, bounded by `options` (its timeout covers a probe
// of the env when its files changed).
GateVerdict ask_gate(const HostAddress& agent, const GateQuery& query,
                     const ClientOptions& options);

// POST /api/v1/gate/record: "" or why it was not recorded. `outcome` is
// go, drift or unknown.
std::string record_gate_decision(const HostAddress& agent, const GateQuery& query,
                                 std::string_view outcome, const std::string& why);

}  // namespace envcontract::fleet
