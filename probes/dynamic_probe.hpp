#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "facts/probe_request.hpp"
#include "probes/activation.hpp"
#include "probes/hang_diagnosis.hpp"
#include "probes/python_env.hpp"

namespace envcontract::probes {

// What to run in an env: what the contract's checks requested (the agent
// builds it from the check-kind registry; probes know nothing of contracts),
// and how.
struct ProbePlan : facts::ProbeRequest {
  std::chrono::milliseconds identity_timeout{60'000};
  // Also run identity and imports without activation when activation changes
  // anything, to tell an activation artifact from a real fault.
  bool compare_bare = true;
  // Per stage process tree (probes/containment.hpp).
  ResourceLimits resources;
  // All stages of one env together: a stage gets what is left of it, and a
  // stage with nothing left is not run. Zero: no deadline beyond each stage's.
  std::chrono::milliseconds env_deadline{0};
  // Set by the scan's watchdog or the agent's shutdown: stops what runs.
  const Cancellation* cancellation = nullptr;
};

enum class StageStatus {
  ok,           // the step did what it was asked
  failed,       // env code raised: an import error, an exception in a snippet
  crashed,      // the process died: a signal, or an exit in the middle
  hung,         // it ran out of time and was killed (see `hang`)
  probe_error,  // the probe's own report is missing or malformed
  stopped,      // cut short or not run: the env's deadline, the scan's watchdog, shutdown
  skipped,      // not run, with the reason in `summary`
};

std::string to_string(StageStatus status);

struct StageResult {
  std::string stage;  // identity, imports, devices:<id>, smoke:<id>, command:<id>
  Activation activation = Activation::activated;
  StageStatus status = StageStatus::skipped;
  std::string summary;           // one line a person can act on
  Json records = Json::array();  // the probe program's records (without start/end)
  std::string process;           // "exit 0", "killed by SIGABRT", "timed out after ..."
  std::string stdout_tail;
  std::string stderr_tail;
  std::chrono::milliseconds duration{0};
  std::optional<HangDiagnosis> hang;
};

// A stage whose outcome depends on activation.
struct ActivationArtifact {
  std::string stage;
  StageStatus bare = StageStatus::skipped;
  StageStatus activated = StageStatus::skipped;
  std::string summary;  // "works only when activated: ..."
};

struct DynamicFacts {
  std::vector<StageResult> stages;
  std::vector<ActivationArtifact> artifacts;
  // Why none of the env's code ran (code_refusal), or "".
  std::string refused;
};

// Probes one env, stage by stage, each in its own subprocess under the env's
// activated environment (and bare, for comparison). Never throws for
// anything the env does.
DynamicFacts probe_env(const PythonEnv& env, const ActivatedEnvironment& activation,
                       const ProbePlan& plan);

// Runs `count` jobs on at most `limit` threads (0: the number of cores),
// calling `job(index)`; each job reports its own result, so a slow one never
// delays the others.
void run_concurrently(std::size_t count, unsigned limit,
                      const std::function<void(std::size_t)>& job);

Json to_json(const StageResult& stage);
Json to_json(const DynamicFacts& facts);

}  // namespace envcontract::probes
