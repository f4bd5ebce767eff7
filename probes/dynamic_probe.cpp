#include "probes/dynamic_probe.hpp"

#include <stdlib.h>

#include <atomic>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "common/json_text.hpp"
#include "facts/stage_names.hpp"
#include "probes/ci_runner.hpp"
#include "probes/exec_prefix.hpp"
#include "probes/import_safety.hpp"
#include "probes/probe_program.hpp"
#include "probes/probe_report.hpp"
#include "probes/process_runner.hpp"
#include "probes/scratch_directory.hpp"
#include "probes/small_files.hpp"

namespace envcontract::probes {
namespace fs = std::filesystem;
namespace stage_names = facts::stage_names;

namespace {

constexpr std::size_t k_tail_bytes = 4096;

std::string tail(const std::string& text) {
  return text.size() <= k_tail_bytes ? text : text.substr(text.size() - k_tail_bytes);
}

std::string first_line(const std::string& text) {
  return trim(text.substr(0, text.find('\n')));
}

// What went wrong in a finished report, if anything: the first failed step.
std::optional<std::string> first_failure(const std::vector<ProbeRecord>& records) {
  for (const auto& record : records) {
    // A field of the wrong type was dropped when the record was read: say
    // what is missing rather than print an empty name.
    const std::string why = record.error_type.empty() && record.error.empty()
                                ? "no error recorded"
                                : record.error_type + ": " + first_line(record.error);
    if ((record.type == "import" || record.type == "smoke") && !record.ok) {
      const std::string subject =
          record.type == "smoke"
              ? record.type
              : "import " + (record.module.empty() ? "(unnamed module)" : record.module);
      return subject + ": " + why;
    }
    if (record.type == "devices" && !record.value) {
      return "device count " + record.expression + ": " + why;
    }
  }
  return std::nullopt;
}

// The step that was running when the process died: the first requested
// import without a record, or the stage itself.
std::string interrupted_step(const StageResult& stage, const Json& request) {
  if (request.contains("modules")) {
    for (const auto& module : request["modules"]) {
      bool seen = false;
      for (const auto& record : stage.records) {
        // The request is ours (strings); the records are not to be trusted.
        seen = seen || record.module == module.get<std::string>();
      }
      if (!seen) {
        return "import " + module.get<std::string>();
      }
    }
  }
  // The identity stage's one step is importing torch; once torch has told
  // its version, what follows is the stage's own.
  if (stage.stage == stage_names::identity) {
    const bool torch_seen = std::any_of(stage.records.begin(), stage.records.end(),
                                        [](const ProbeRecord& r) { return r.type == "torch"; });
    return torch_seen ? stage.stage : "import torch";
  }
  return stage.stage;
}

struct StageSpec {
  std::string name;
  Json request;
  std::chrono::milliseconds timeout;
  std::string timeout_origin = "";  // set when the env's deadline, not the stage's own, bounds it
};

// What is left of an env's time, shared by its stages in order.
class StageBudget {
 public:
  explicit StageBudget(const ProbePlan& plan)
      : m_plan(plan),
        m_deadline(plan.env_deadline.count() > 0
                       ? std::chrono::steady_clock::now() + plan.env_deadline
                       : std::chrono::steady_clock::time_point::max()) {}

  // Why the next stage may not start, or "".
  std::string exhausted() const {
    if (m_plan.cancellation != nullptr && m_plan.cancellation->cancelled()) {
      return "not run: " + m_plan.cancellation->reason();
    }
    if (std::chrono::steady_clock::now() >= m_deadline) {
      return "not run: the env's deadline of " + seconds(m_plan.env_deadline) +
             " passed before this stage (env_deadline in the agent's config)";
    }
    return "";
  }

  // `spec` with its timeout cut to what is left.
  StageSpec bounded(StageSpec spec) const {
    if (m_deadline == std::chrono::steady_clock::time_point::max()) {
      return spec;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        m_deadline - std::chrono::steady_clock::now());
    if (left < spec.timeout) {
      spec.timeout = std::max(left, std::chrono::milliseconds(1));
      spec.timeout_origin = " (what was left of the env's " + seconds(m_plan.env_deadline) +
                            " deadline, env_deadline in the agent's config)";
    }
    return spec;
  }

  ProcessLimits limits(std::chrono::milliseconds timeout) const {
    ProcessLimits limits;
    limits.timeout = timeout;
    limits.resources = m_plan.resources;
    limits.cancellation = m_plan.cancellation;
    return limits;
  }

 private:
  static std::string seconds(std::chrono::milliseconds duration) {
    return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(duration).count()) +
           " s";
  }

  const ProbePlan& m_plan;
  std::chrono::steady_clock::time_point m_deadline;
};

StageResult not_run(const std::string& name, Activation activation, const std::string& why) {
  StageResult stage;
  stage.stage = name;
  stage.activation = activation;
  stage.status = StageStatus::stopped;
  stage.summary = why;
  return stage;
}

Environment stage_environment(const Environment& base) {
  Environment environment = base;
  // Backend autoload can abort() a process when vendor libraries were loaded
  // first; the platforms' own probes turn it off, so do we (unless the env
  // says otherwise).
  environment.emplace("TORCH_DEVICE_BACKEND_AUTOLOAD", "0");
  environment.emplace("PYTHONDONTWRITEBYTECODE", "1");
  environment["PYTHONUNBUFFERED"] = "1";
  return environment;
}

// What the interpreter of a container target's env reports names paths as
// the container sees them; the env's static facts name them as the agent
// does (under the container's root), and so must these, or every import
// would seem to come from elsewhere.
void name_paths_as_the_agent(const PythonEnv& env, std::vector<ProbeRecord>& records) {
  if (env.exec.empty()) {
    return;
  }
  for (auto& record : records) {
    for (auto* path : {&record.file, &record.realpath}) {
      if (*path) {
        **path = seen_by_agent(env, **path);
      }
    }
    for (auto& entry : record.entries) {
      entry = seen_by_agent(env, entry);
    }
  }
}

StageResult run_stage(const PythonEnv& env, const Environment& environment, Activation activation,
                      const StageSpec& spec, const StageBudget& budget) {
  StageResult stage;
  stage.stage = spec.name;
  stage.activation = activation;
  const auto credentials = credentials_of(env);
  ScratchDirectory directory("envcontract-probe", credentials, scratch_root(env));
  Json request = spec.request;
  if (!directory.ok() || !directory.write("probe.py", probe_program_source()) ||
      !directory.write("request.json", common::json_text(request)) || !directory.hand_over()) {
    stage.status = StageStatus::probe_error;
    stage.summary = "cannot prepare a private directory for the probe: " + directory.error();
    return stage;
  }
  ProcessSpec process;
  process.argv = {seen_by_env(env, env.python), directory.file("probe.py").string(),
                  directory.file("request.json").string(), directory.file("result.jsonl").string(),
                  directory.file("stacks.txt").string()};
  process.environment = stage_environment(environment);
  process.working_dir = seen_by_env(env, env.prefix);
  process.credentials = credentials;
  const ProcessLimits limits = budget.limits(spec.timeout);
  const auto read_stacks = [&] { return directory.read("stacks.txt", 256 * 1024); };
  const auto result = run_process(env_process(env, process), limits, [&](pid_t pid) {
    stage.hang = diagnose_hang(command_below_prefix(pid, env.exec), read_stacks);
  });
  stage.duration = result.duration;
  stage.process = result.describe();
  stage.stdout_tail = tail(result.out);
  stage.stderr_tail = tail(result.err);
  auto report = parse_probe_report(directory.read("result.jsonl", 8 * 1024 * 1024).value_or(""));
  stage.records = std::move(report.records);
  name_paths_as_the_agent(env, stage.records);

  using Outcome = ProcessResult::Outcome;
  if (result.outcome == Outcome::failed_to_start) {
    stage.status = StageStatus::probe_error;
    stage.summary = "cannot run the env's interpreter: " + result.describe();
  } else if (result.outcome == Outcome::timed_out) {
    stage.status = StageStatus::hung;
    stage.summary = interrupted_step(stage, request) + " did not finish within " +
                    std::to_string(spec.timeout.count()) + " ms" + spec.timeout_origin +
                    (stage.hang ? ": " + stage.hang->summary : "");
  } else if (result.outcome == Outcome::cancelled) {
    stage.status = StageStatus::stopped;
    stage.summary = interrupted_step(stage, request) + " was " + result.describe();
  } else if (!report.error.empty()) {
    stage.status = StageStatus::probe_error;
    stage.summary = report.error;
  } else if (result.outcome == Outcome::signaled) {
    stage.status = StageStatus::crashed;
    stage.summary = interrupted_step(stage, request) + " " + result.describe() +
                    (stage.stderr_tail.empty() ? "" : ": " + first_line(stage.stderr_tail));
  } else if (!report.started) {
    stage.status = StageStatus::probe_error;
    stage.summary = "the probe reported nothing (" + result.describe() +
                    "): the interpreter could not run it" +
                    // What stopped it, in its own words (a missing library, a container
                    // that cannot be entered).
                    (stage.stderr_tail.empty() ? "" : ": " + first_line(stage.stderr_tail));
  } else if (!report.ended) {
    stage.status = result.exit_code == 0 ? StageStatus::probe_error : StageStatus::crashed;
    stage.summary = interrupted_step(stage, request) + " ended the process (" + result.describe() +
                    ") before the probe finished";
  } else if (const auto failure = first_failure(stage.records)) {
    stage.status = StageStatus::failed;
    stage.summary = *failure;
  } else {
    stage.status = StageStatus::ok;
    stage.summary = "ok";
  }
  return stage;
}

// A shell command: its exit status and output are the facts; judging them
// against what the contract expects is the judge's job.
StageResult run_command_stage(const PythonEnv& env, const Environment& environment,
                              const ProbePlan::Command& command, const StageBudget& budget) {
  StageResult stage;
  stage.stage = stage_names::command(command.id);
  stage.activation = Activation::activated;
  ProcessSpec process;
  process.argv = command.ci_runner ? ci_runner_argv(command.run)
                                   : std::vector<std::string>{"/bin/bash", "-c", command.run};
  process.environment = layered_environment(environment, command.layers);
  for (const auto& [name, value] : command.extra) {
    process.environment[name] = value;
  }
  // A workdir the contract names is the env's own path (inside its container).
  process.working_dir = command.workdir.empty()
                            ? std::filesystem::path(seen_by_env(env, env.prefix))
                            : std::filesystem::path(command.workdir);
  process.credentials = credentials_of(env);
  const auto bounded = budget.bounded({stage.stage, Json(), command.timeout});
  const ProcessLimits limits = budget.limits(bounded.timeout);
  // A shell dumps no Python stacks.
  const auto result = run_process(env_process(env, process), limits, [&](pid_t pid) {
    stage.hang = diagnose_hang(command_below_prefix(pid, env.exec), {});
  });
  stage.duration = result.duration;
  stage.process = result.describe();
  stage.stdout_tail = tail(result.out);
  stage.stderr_tail = tail(result.err);
  constexpr std::size_t k_kept_output = 64 * 1024;
  ProbeRecord record;
  record.type = "command";
  record.run = command.run;
  if (result.outcome == ProcessResult::Outcome::exited) {
    record.exit_code = result.exit_code;
  }
  record.output = result.out.substr(0, k_kept_output);
  stage.records.push_back(std::move(record));
  using Outcome = ProcessResult::Outcome;
  switch (result.outcome) {
    case Outcome::failed_to_start:
      stage.status = StageStatus::probe_error;
      stage.summary = "cannot run bash: " + result.describe();
      break;
    case Outcome::timed_out:
      stage.status = StageStatus::hung;
      stage.summary = "`" + first_line(command.run) + "` did not finish within " +
                      std::to_string(bounded.timeout.count()) + " ms" + bounded.timeout_origin +
                      (stage.hang ? ": " + stage.hang->summary : "");
      break;
    case Outcome::cancelled:
      stage.status = StageStatus::stopped;
      stage.summary = "`" + first_line(command.run) + "` was " + result.describe();
      break;
    case Outcome::signaled:
      stage.status = StageStatus::crashed;
      stage.summary = "`" + first_line(command.run) + "` " + result.describe();
      break;
    case Outcome::exited:
      stage.status = StageStatus::ok;
      stage.summary = result.describe();
      break;
  }
  return stage;
}

std::vector<StageSpec> stage_specs(const ProbePlan& plan) {
  std::vector<StageSpec> specs;
  specs.push_back(
      {std::string(stage_names::identity), {{"stage", "identity"}}, plan.identity_timeout});
  if (!plan.imports.empty()) {
    specs.push_back({std::string(stage_names::imports),
                     {{"stage", "imports"},
                      {"modules", plan.imports},
                      {"report_torch_after", plan.torch_after_imports}},
                     plan.imports_timeout});
  }
  for (const auto& devices : plan.devices) {
    specs.push_back(
        {stage_names::devices(devices.id),
         {{"stage", "devices"}, {"expression", devices.expression}, {"imports", devices.imports}},
         devices.timeout});
  }
  for (const auto& smoke : plan.smokes) {
    specs.push_back(
        {stage_names::smoke(smoke.id), {{"stage", "smoke"}, {"code", smoke.code}}, smoke.timeout});
  }
  return specs;
}

// Activation matters when it changes more than the prompt and PATH.
bool activation_changes_loading(const ActivatedEnvironment& activation) {
  for (const auto& change : environment_changes(activation.bare, activation.activated)) {
    if (change.name != "PS1" && change.name != "PATH" && !change.name.starts_with("CONDA_") &&
        !change.name.starts_with("VIRTUAL_ENV")) {
      return true;
    }
  }
  return false;
}

}  // namespace

DynamicFacts probe_env(const PythonEnv& env, const ActivatedEnvironment& activation,
                       const ProbePlan& plan) {
  DynamicFacts facts;
  // What it imports is held to the rule before any of its code runs; a scan
  // did that with its static facts, anyone else (or a scan whose static
  // facts failed) has it done here.
  PythonEnv checked;
  if (!env.imports_checked) {
    checked = env;
    refuse_unsafe_imports(checked, activation);
  }
  facts.refused = code_refusal(env.imports_checked ? env : checked);
  if (!facts.refused.empty()) {
    return facts;
  }
  const auto specs = stage_specs(plan);
  const StageBudget budget(plan);
  bool torch_imports = false;
  for (const auto& spec : specs) {
    const bool needs_torch =
        spec.name != stage_names::identity && spec.name != stage_names::imports;
    if (needs_torch && !torch_imports) {
      StageResult skipped;
      skipped.stage = spec.name;
      skipped.summary = "skipped: torch does not import in this env";
      facts.stages.push_back(std::move(skipped));
      continue;
    }
    if (const auto why = budget.exhausted(); !why.empty()) {
      facts.stages.push_back(not_run(spec.name, Activation::activated, why));
      continue;
    }
    auto stage =
        run_stage(env, activation.activated, Activation::activated, budget.bounded(spec), budget);
    if (spec.name == stage_names::identity) {
      torch_imports = stage.status == StageStatus::ok;
    }
    facts.stages.push_back(std::move(stage));
  }
  // As the CI runner: after a fail-fast entry fails, later ones of its config do not run.
  std::map<std::string, std::string> failed_fail_fast;  // group -> the failed command's id
  for (const auto& command : plan.commands) {
    const std::string name = stage_names::command(command.id);
    if (const auto stop = failed_fail_fast.find(command.group);
        !command.group.empty() && stop != failed_fail_fast.end()) {
      auto stage = not_run(name, Activation::activated,
                           "not run: integration test " + stop->second +
                               " failed first, and its failure_policy is fail-fast (the CI "
                               "runner runs nothing after it)");
      ProbeRecord record;
      record.type = stage_names::fail_fast_stop;
      record.blocked_by = stop->second;
      stage.records.push_back(std::move(record));
      facts.stages.push_back(std::move(stage));
      continue;
    }
    if (const auto why = budget.exhausted(); !why.empty()) {
      facts.stages.push_back(not_run(name, Activation::activated, why));
      continue;
    }
    auto stage = run_command_stage(env, activation.activated, command, budget);
    const ProbeRecord* record = stage.records.empty() ? nullptr : &stage.records.front();
    const bool passed =
        stage.status == StageStatus::ok && record != nullptr && record->exit_code == 0;
    if (command.fail_fast && !command.group.empty() && !passed) {
      failed_fail_fast.emplace(command.group, command.id);
    }
    facts.stages.push_back(std::move(stage));
  }
  if (!plan.compare_bare || !activation_changes_loading(activation)) {
    return facts;
  }
  // The same identity and imports stages without activation, to tell
  // "broken" from "works only when activated".
  for (const auto& spec : specs) {
    if (spec.name != stage_names::identity && spec.name != stage_names::imports) {
      continue;
    }
    if (!budget.exhausted().empty()) {
      break;  // a comparison only: nothing is lost when it is not made
    }
    auto bare = run_stage(env, activation.bare, Activation::bare, budget.bounded(spec), budget);
    if (!budget.exhausted().empty()) {
      break;  // cut short: comparing it would invent an activation artifact
    }
    const auto activated =
        std::find_if(facts.stages.begin(), facts.stages.end(),
                     [&](const auto& stage) { return stage.stage == spec.name; });
    if (activated != facts.stages.end() &&
        (bare.status == StageStatus::ok) != (activated->status == StageStatus::ok)) {
      ActivationArtifact artifact;
      artifact.stage = spec.name;
      artifact.bare = bare.status;
      artifact.activated = activated->status;
      artifact.summary = activated->status == StageStatus::ok
                             ? "works only when activated: without activation, " + bare.summary
                             : "works only without activation: activated, " + activated->summary;
      facts.artifacts.push_back(std::move(artifact));
    }
    facts.stages.push_back(std::move(bare));
  }
  return facts;
}

void run_concurrently(std::size_t count, unsigned limit,
                      const std::function<void(std::size_t)>& job) {
  if (limit == 0) {
    limit = std::max(1U, std::thread::hardware_concurrency());
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> workers;
  const std::size_t worker_count = std::min<std::size_t>(limit, count);
  for (std::size_t i = 0; i < worker_count; ++i) {
    workers.emplace_back([&] {
      for (std::size_t index; (index = next.fetch_add(1)) < count;) {
        job(index);
      }
    });
  }
  for (auto& worker : workers) {
    worker.join();
  }
}

}  // namespace envcontract::probes
