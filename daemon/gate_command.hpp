#pragma once

#include <filesystem>
#include <iosfwd>
#include <map>
#include <string>

#include "daemon/gate_contract.hpp"
#include "daemon/scanner.hpp"

namespace envcontract::daemon {

struct GateOptions {
  GateContractInputs contract;  // workspace "" : the CI's ($GITHUB_WORKSPACE, $CI_PROJECT_DIR)
  std::string env;              // --env NAME|PREFIX; "": the job shell's, else every env
  std::string bypass;           // --bypass REASON (or $ENVCONTRACT_GATE_BYPASS)
  std::filesystem::path junit;  // --junit FILE: the report as JUnit too
  ScanSettings settings;        // discovery as `scan` has it, before the env is chosen
  // The local agent asked for the verdict ("host:port" on loopback; "none":
  // never asked; default $ENVCONTRACT_AGENT, else 127.0.0.1:9714).
  std::string agent;
  // Why the agent's verdict would not be the one asked for (discovery or
  // image flags of the gate's own), or "": then the gate judges itself.
  std::string own_judgement_because;
  // The job's environment: the CI's variables (GITHUB_ACTIONS, GITLAB_CI,
  // GITHUB_STEP_SUMMARY, GITHUB_WORKSPACE, CI_PROJECT_DIR), the job shell's
  // env (CONDA_PREFIX, VIRTUAL_ENV), ENVCONTRACT_PLATFORM,
  // ENVCONTRACT_RUNNER_LABELS, ENVCONTRACT_GATE_BYPASS, ENVCONTRACT_AGENT,
  // and what names the job (gate_agent.hpp: gate_job).
  std::map<std::string, std::string> variables;
};

// `envcontractd gate`: judges the env a CI job is about to use against the
// contract the job brings, prints what the CI shows (docs/ci.md) and
// returns 0 go, 1 the env breaks the contract, 2 the agent cannot tell
// (no contract, no env, an env that could not be judged). With a bypass a
// stopped job goes anyway (0), and the output says so.
int run_gate(const GateOptions& options, std::ostream& out, std::ostream& err);

// The variables run_gate reads, from this process's environment.
std::map<std::string, std::string> gate_variables_from_environment();

}  // namespace envcontract::daemon
