#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "discovery/python_env.hpp"
#include "facts/dynamic.hpp"
#include "facts/probe_request.hpp"
#include "probes/activation.hpp"
#include "probes/fact_names.hpp"
#include "probes/hang_diagnosis.hpp"
#include "probes/probe_lanes.hpp"

namespace envcontract::probes {

using facts::to_json;
using facts::to_string;

// What to run in an env: what the contract's checks requested (the agent
// builds it from the check-kind registry; probes know nothing of contracts),
// and how.
struct ProbePlan : facts::ProbeRequest {
  std::chrono::milliseconds identity_timeout{60'000};
  // Also run identity and imports without activation when activation changes
  // anything, to tell an activation artifact from a real fault.
  bool compare_bare = true;
  // Per stage process tree (process/containment.hpp).
  process::ResourceLimits resources;
  // All stages of one env together: a stage gets what is left of it, and a
  // stage with nothing left is not run. Zero: no deadline beyond each stage's.
  std::chrono::milliseconds env_deadline{0};
  // Set by the scan's watchdog or the agent's shutdown: stops what runs.
  const process::Cancellation* cancellation = nullptr;
  // The scan's lanes: with one spare, the bare comparison holds it, or a
  // chain of stages whose first import differs from identity's runs beside
  // the others, in an interpreter started at once, unless both it and another
  // use a device. None: each env's stages run one chain after another, the
  // bare comparison beside them.
  std::shared_ptr<const ProbeLanes> lanes;
};

using facts::StageStatus;

using facts::ProbeRecord;
using facts::StageResult;

using facts::ActivationArtifact;

using facts::DynamicFacts;

// Probes one env, stage by stage, each in its own subprocess under the env's
// activated environment (and bare, for comparison). Never throws for
// anything the env does.
DynamicFacts probe_env(const PythonEnv& env, const ActivatedEnvironment& activation,
                       const ProbePlan& plan);

// Whether activation changes more than the prompt, PATH and the variables
// conda and venv set for themselves (LD_LIBRARY_PATH, say): then identity
// and imports also run bare, in an interpreter of their own.
bool activation_changes_loading(const ActivatedEnvironment& activation);

// Runs `count` jobs on at most `limit` threads (0: the number of cores),
// calling `job(index)`; each job reports its own result, so a slow one never
// delays the others. Every job runs even when threads cannot be started
// (with none, on the calling thread); the first exception a job throws is
// rethrown once all have ended, never left to end the process.
void run_concurrently(std::size_t count, unsigned limit,
                      const std::function<void(std::size_t)>& job);

}  // namespace envcontract::probes
