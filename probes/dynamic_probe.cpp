#include "probes/dynamic_probe.hpp"

#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <exception>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>

#include "common/json_text.hpp"
#include "discovery/exec_prefix.hpp"
#include "discovery/exec_session.hpp"
#include "facts/stage_names.hpp"
#include "probes/ci_runner.hpp"
#include "probes/first_import.hpp"
#include "probes/import_safety.hpp"
#include "probes/probe_program.hpp"
#include "probes/probe_report.hpp"
#include "probes/progress_watch.hpp"
#include "process/proc_stat.hpp"
#include "process/process_runner.hpp"
#include "process/scratch_directory.hpp"
#include "process/small_files.hpp"
#include "process/stall_guard.hpp"

namespace envcontract::probes {
namespace fs = std::filesystem;
namespace stage_names = facts::stage_names;

namespace {

constexpr std::size_t k_tail_bytes = 4096;

std::string tail(const std::string& text) {
  return text.size() <= k_tail_bytes ? text : text.substr(text.size() - k_tail_bytes);
}

std::string first_line(const std::string& text) {
  return process::trim(text.substr(0, text.find('\n')));
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
  // The imports stage's modules, or a devices stage's imports (made before
  // its expression).
  const char* imports = request.contains("modules")   ? "modules"
                        : request.contains("imports") ? "imports"
                                                      : nullptr;
  if (imports != nullptr) {
    for (const auto& module : request[imports]) {
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
  // The module the stage imports before anything else it does ("" when that
  // is not known): stages that share it share an interpreter that makes it.
  std::string first_import = "";
  // It imports torch: not run once identity shows torch does not import.
  bool needs_torch = false;
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

  process::ProcessLimits limits(std::chrono::milliseconds timeout) const {
    process::ProcessLimits limits;
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

// The runner's outcome as the facts keep it.
facts::ProcessEnd process_end(const process::ProcessResult& result) {
  using How = facts::ProcessEnd::How;
  using Outcome = process::ProcessResult::Outcome;
  facts::ProcessEnd end;
  switch (result.outcome) {
    case Outcome::exited:
      end.how = How::exited;
      end.exit_code = result.exit_code;
      break;
    case Outcome::signaled:
      end.how = How::signaled;
      end.signal = result.signal;
      break;
    case Outcome::timed_out:
      end.how = How::timed_out;
      break;
    case Outcome::cancelled:
      end.how = How::cancelled;
      break;
    case Outcome::failed_to_start:
      end.how = How::failed_to_start;
      break;
  }
  return end;
}

StageResult not_run(const std::string& name, Activation activation, const std::string& why) {
  StageResult stage;
  stage.stage = name;
  stage.activation = activation;
  stage.status = StageStatus::stopped;
  stage.not_run = true;
  stage.summary = why;
  return stage;
}

facts::Environment stage_environment(const facts::Environment& base) {
  facts::Environment environment = base;
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
        **path = discovery::seen_by_agent(env, **path);
      }
    }
    for (auto& entry : record.entries) {
      entry = discovery::seen_by_agent(env, entry);
    }
  }
}

// The stage as the probe program names it ("devices", not "devices:gpus").
std::string probe_stage_of(const StageSpec& spec) {
  const auto stage = spec.request.find("stage");
  return stage != spec.request.end() && stage->is_string() ? stage->get<std::string>() : "";
}

// A stage that ran to its end: failed at its first failed step, else ok.
void judge_by_records(StageResult& stage) {
  if (const auto failure = first_failure(stage.records)) {
    stage.status = StageStatus::failed;
    stage.summary = *failure;
  } else {
    stage.status = StageStatus::ok;
    stage.summary = "ok";
  }
}

// A stage's status and summary from its part of the probe's report.
// `process`: the stage was running when the interpreter ended, so how it
// ended is the stage's; null when the stage finished and the same
// interpreter went on to the next.
void judge_stage(StageResult& stage, const ProbeReport& report,
                 const process::ProcessResult* process, const Json& request,
                 const StageSpec& spec) {
  if (process == nullptr) {
    if (!report.error.empty()) {
      stage.status = StageStatus::probe_error;
      stage.summary = report.error;
    } else if (!report.ended || report.stage != probe_stage_of(spec)) {
      stage.status = StageStatus::probe_error;
      stage.summary = "the probe's report of this stage is out of order";
    } else {
      judge_by_records(stage);
    }
    return;
  }
  const process::ProcessResult& result = *process;
  using Outcome = process::ProcessResult::Outcome;
  if (result.outcome == Outcome::failed_to_start) {
    stage.status = StageStatus::probe_error;
    stage.summary = "cannot run the env's interpreter: " + result.describe();
    using Exec = facts::StageResult::ExecFailure;
    stage.exec_failure = result.exec_error == 0         ? Exec::none
                         : result.exec_error == ENOENT  ? Exec::missing
                         : result.exec_error == ENOEXEC ? Exec::not_executable
                                                        : Exec::refused;
  } else if (result.outcome == Outcome::timed_out && !spec.timeout_origin.empty()) {
    // Its time-out was cut to what was left of the env's deadline: it was
    // stopped before its own time-out, which is what would show a hang.
    stage.status = StageStatus::stopped;
    stage.interrupted_step = interrupted_step(stage, request);
    stage.summary = stage.interrupted_step + " was stopped after " +
                    std::to_string(spec.timeout.count()) + " ms" + spec.timeout_origin +
                    ", before its own time-out" + (stage.hang ? ": " + stage.hang->summary : "");
  } else if (result.outcome == Outcome::timed_out) {
    stage.status = StageStatus::hung;
    stage.interrupted_step = interrupted_step(stage, request);
    stage.summary = stage.interrupted_step + " did not finish within " +
                    std::to_string(spec.timeout.count()) + " ms" + spec.timeout_origin +
                    (stage.hang ? ": " + stage.hang->summary : "");
  } else if (result.outcome == Outcome::cancelled) {
    stage.status = StageStatus::stopped;
    stage.interrupted_step = interrupted_step(stage, request);
    stage.summary = stage.interrupted_step + " was " + result.describe();
  } else if (!report.error.empty()) {
    stage.status = StageStatus::probe_error;
    stage.summary = report.error;
  } else if (report.started && report.stage != probe_stage_of(spec)) {
    stage.status = StageStatus::probe_error;
    stage.summary = "the probe's report of this stage is out of order";
  } else if (result.outcome == Outcome::signaled) {
    stage.status = StageStatus::crashed;
    stage.interrupted_step = interrupted_step(stage, request);
    stage.summary = stage.interrupted_step + " " + result.describe() +
                    (stage.stderr_tail.empty() ? "" : ": " + first_line(stage.stderr_tail));
  } else if (!report.started) {
    stage.status = StageStatus::probe_error;
    stage.summary = "the probe reported nothing (" + result.describe() +
                    "): the interpreter could not run it" +
                    // What stopped it, in its own words (a missing library, a container
                    // that cannot be entered).
                    (stage.stderr_tail.empty() ? "" : ": " + first_line(stage.stderr_tail));
  } else if (!report.ended) {
    // The probe itself never ends before its end record, whatever its
    // step raises: an exit in the middle (0 too: os._exit, a library's
    // constructor calling exit) is the env's code ending its own process.
    stage.status = StageStatus::crashed;
    const std::string step = stage.interrupted_step = interrupted_step(stage, request);
    stage.summary = step + " ended the process (" + result.describe() + ") before " +
                    (step.starts_with("import ") ? "it returned" : "the probe finished");
  } else {
    judge_by_records(stage);
  }
}

// The number of lines at the start of a chain's progress `text` that name its
// stages in order: the stages the probe started. A line env code wrote there
// that is not the next stage's name ends the count.
std::size_t started_stages(const std::string& text, const std::vector<StageSpec>& specs,
                           std::size_t* end_of_lines = nullptr) {
  std::size_t lines = 0;
  std::size_t at = 0;
  for (std::size_t end = 0;
       lines < specs.size() && (end = text.find('\n', at)) != std::string::npos; at = end + 1) {
    if (text.compare(at, end - at, probe_stage_of(specs[lines])) != 0) {
      break;
    }
    ++lines;
  }
  if (end_of_lines != nullptr) {
    *end_of_lines = at;
  }
  return lines;
}

// Why the probe stopped a chain before its next stage ("stop REASON" after
// the names of those it started), or "": a fork of its interpreter would not
// have been what a fresh interpreter does (docs/probes.md, "Stages").
std::string chain_stop_reason(const std::string& text, const std::vector<StageSpec>& specs) {
  std::size_t at = 0;
  started_stages(text, specs, &at);
  constexpr std::string_view k_stop = "stop ";
  if (text.compare(at, k_stop.size(), k_stop) != 0) {
    return "";
  }
  const auto end = text.find('\n', at);
  if (end == std::string::npos) {
    return "";
  }
  // Env code can write this file too: a reason is kept short and on one line.
  return text.substr(at + k_stop.size(), std::min<std::size_t>(end - at - k_stop.size(), 200));
}

// What the interpreter is asked: one stage, or a chain whose shared first
// import it makes once, then runs each stage in a process forked from it
// (the last in itself).
Json chain_request(const std::vector<StageSpec>& specs) {
  if (specs.size() == 1) {
    return specs.front().request;
  }
  Json request = {{"chain", Json::array()}, {"first_import", specs.front().first_import}};
  for (const auto& spec : specs) {
    request["chain"].push_back(spec.request);
  }
  return request;
}

// The env's interpreter running the probe program from its private
// directory, as the env's user, from the env's prefix.
process::ProcessSpec probe_process(const PythonEnv& env, const facts::Environment& environment,
                                   const process::ScratchDirectory& directory,
                                   const std::optional<process::Credentials>& credentials) {
  process::ProcessSpec process;
  process.argv = {discovery::seen_by_env(env, env.python), directory.file("probe.py").string(),
                  directory.file("request.json").string(), directory.file("result.jsonl").string(),
                  directory.file("stacks.txt").string(),   directory.file("progress").string()};
  process.environment = stage_environment(environment);
  process.working_dir = discovery::seen_by_env(env, env.prefix);
  process.credentials = credentials;
  return process;
}

// How a chain's interpreter ended, and when each stage it showed started.
struct ChainEnd {
  const process::ProcessResult& result;
  std::chrono::steady_clock::time_point ended_at;
  const std::vector<std::chrono::steady_clock::time_point>& started_at;
  const std::vector<StageSpec>& bounded;  // the stages it showed, with their time-outs
  std::string stop_reason;
  std::size_t reached;  // the stages it reported
};

// The result of stage `i`, from its `report`. The last stage reached owns
// how the process ended (and the hang diagnosis, moved from `hang`), unless
// it finished and others were to follow it (which are then run again).
StageResult stage_reached(const PythonEnv& env, Activation activation,
                          const std::vector<StageSpec>& specs, ProbeReport& report, std::size_t i,
                          const ChainEnd& end, std::optional<HangDiagnosis>& hang) {
  const process::ProcessResult& result = end.result;
  StageResult stage;
  stage.stage = specs[i].name;
  stage.activation = activation;
  stage.records = std::move(report.records);
  name_paths_as_the_agent(env, stage.records);
  // A stage that finished timed itself; the one the process ended in had
  // the rest (the first one's includes the interpreter's start).
  if (report.seconds >= 0) {
    stage.duration = std::chrono::milliseconds(static_cast<long>(report.seconds * 1000));
  } else if (i < end.started_at.size()) {
    stage.duration =
        std::chrono::duration_cast<std::chrono::milliseconds>(end.ended_at - end.started_at[i]);
  }
  const bool finished_before_the_end =
      i + 1 < end.reached || (report.ended && i + 1 < specs.size());
  if (finished_before_the_end) {
    stage.process =
        "finished in a process forked from the interpreter after import " + specs[i].first_import;
    stage.end.how = facts::ProcessEnd::How::in_fork;
    if (i + 1 == end.reached && !end.stop_reason.empty()) {
      // What follows it runs in interpreters of its own, or is skipped.
      stage.process += "; the interpreter stopped after it (" + end.stop_reason + ")";
    }
    judge_stage(stage, report, nullptr, specs[i].request, specs[i]);
    return stage;
  }
  if (i == 0 || end.reached == 1) {
    stage.duration = result.duration;
  }
  stage.process = result.describe();
  stage.end = process_end(result);
  stage.stdout_tail = tail(result.out);
  stage.stderr_tail = tail(result.err);
  stage.hang = std::move(hang);
  judge_stage(stage, report, &result, specs[i].request,
              i < end.bounded.size() ? end.bounded[i] : specs[i]);
  // A stage whose start the progress file did not show (yet: it is read
  // every 20 ms; or never: env code wrote something else there) was held to
  // the time-out of the last one it did show: not its own, so not a hang of
  // its own either.
  if (i >= end.bounded.size() && result.outcome == process::ProcessResult::Outcome::timed_out) {
    stage.status = StageStatus::stopped;
    stage.interrupted_step = interrupted_step(stage, specs[i].request);
    stage.summary = stage.interrupted_step +
                    " was stopped at the time-out of the stage before it (" +
                    std::to_string(end.bounded.back().timeout.count()) +
                    " ms): the agent did not see it start in the probe's progress file" +
                    (stage.hang ? ": " + stage.hang->summary : "");
  }
  return stage;
}

// Runs `specs` in order from one interpreter (a chain of stages that make
// the same first import: the interpreter makes it once, and runs each stage
// in a process forked from it, the last in itself), each held to its own
// time-out from the moment it starts, as the probe tells through its progress
// file. Returns the results of the stages it reached, in order: one that hung
// or ended the process is the last, and those after it are left for the
// caller to run again in a new interpreter. Returns none when the interpreter
// declined the chain before its first stage. Why the interpreter stopped
// the chain early, before its first stage or a later one, goes to `stopped`.
std::vector<StageResult> run_chain(const PythonEnv& env, const facts::Environment& environment,
                                   Activation activation, const std::vector<StageSpec>& specs,
                                   const StageBudget& budget, std::string* stopped = nullptr) {
  using Clock = std::chrono::steady_clock;
  std::vector<StageResult> stages;
  const auto credentials = discovery::credentials_of(env);
  process::ScratchDirectory directory("envcontract-probe", credentials,
                                      discovery::scratch_root(env),
                                      discovery::scratch_root_process(env));
  if (!directory.ok() || !directory.write("probe.py", probe_program_source()) ||
      !directory.write("request.json", common::json_text(chain_request(specs))) ||
      !directory.hand_over()) {
    StageResult stage;
    stage.stage = specs.front().name;
    stage.activation = activation;
    stage.status = StageStatus::probe_error;
    stage.summary = "cannot prepare a private directory for the probe: " + directory.error();
    return {std::move(stage)};
  }
  const process::ProcessSpec process = probe_process(env, environment, directory, credentials);

  // Each stage's time-out, cut to what is left of the env's deadline when it
  // starts; the first one's covers the interpreter's start too.
  std::vector<StageSpec> bounded = {budget.bounded(specs.front())};
  std::vector<Clock::time_point> started_at = {Clock::now()};
  process::ProcessLimits limits = budget.limits(bounded.front().timeout);
  // Only a chain reads its progress while it runs: one stage has one time-out.
  // The file is read on a thread of its own (probes/progress_watch.hpp).
  std::optional<ProgressWatch> progress;
  if (specs.size() > 1) {
    progress.emplace(directory.reader(), "progress", 4096);
    limits.deadline = [&] {
      // Each line names the stage that starts, in order; a line env code wrote
      // there that is not the next stage's name moves nothing.
      const std::size_t lines = started_stages(progress->text(), specs);
      while (started_at.size() < lines) {
        started_at.push_back(Clock::now());
        bounded.push_back(budget.bounded(specs[started_at.size() - 1]));
      }
      return started_at.back() + bounded.back().timeout;
    };
  }
  std::optional<HangDiagnosis> hang;
  // The stack dump is read while the process runner waits: bounded, as the
  // progress is, and a dump whose earlier read is still blocked is not read.
  // Keyed by the tree whose /tmp holds it: once one dump there blocks, no
  // other is read from it (each would hold a blocked thread).
  const auto read_scratch = [reader = directory.reader(),
                             key = "stacks " + discovery::scratch_root(env).string()](
                                const char* name, std::size_t limit) {
    auto text = std::make_shared<std::optional<std::string>>();
    const auto stalled = process::run_bounded(
        key, std::string("reading the probe's ") + name, std::chrono::seconds(2), nullptr,
        [reader, text, name, limit](const process::Cancellation&) {
          if (reader) {
            *text = reader->read(name, limit);
          }
        });
    return stalled ? std::nullopt : *text;
  };
  const auto read_stacks = [&] { return read_scratch("stacks.txt", 256 * 1024); };
  const auto result = discovery::run_env_process(env, process, limits, [&](pid_t pid) {
    const pid_t interpreter = discovery::command_below_prefix(pid, env.exec, env.run_as.uid);
    // Every stage of a chain but its last runs in a process the interpreter
    // forked for it once it had named the stage in its progress (before
    // that, the interpreter itself is making the chain's first import).
    const bool forked = started_at.size() < specs.size() &&
                        started_stages(progress->text(), specs) >= started_at.size();
    // The interpreter names each process it forks, last line last; env code
    // could write there too, so the name is only taken for a child of the
    // interpreter of the same user.
    pid_t stage_process = interpreter;
    int pidfd = -1;
    if (forked) {
      const std::string named = read_scratch("forked", 64 * 1024).value_or("");
      const auto last = named.find_last_not_of('\n');
      const auto line =
          last == std::string::npos ? std::string() : named.substr(named.rfind('\n', last) + 1);
      const pid_t candidate = std::atoi(line.c_str());
#ifdef SYS_pidfd_open
      // Pinned first, then checked: the pid checked is then the one signalled.
      pidfd = candidate > 0 ? static_cast<int>(::syscall(SYS_pidfd_open, candidate, 0)) : -1;
#endif
      if (pidfd >= 0 && process::forked_child_or_self(interpreter, candidate) == candidate) {
        stage_process = candidate;
      }
    }
    hang = diagnose_hang(stage_process, read_stacks, discovery::credentials_of(env),
                         std::chrono::milliseconds(300), stage_process == interpreter ? -1 : pidfd);
    if (pidfd >= 0) {
      ::close(pidfd);
    }
  });
  const auto ended_at = Clock::now();
  auto reports = parse_probe_reports(directory.read("result.jsonl", 8 * 1024 * 1024).value_or(""));
  const std::string stop_reason =
      progress ? chain_stop_reason(directory.read("progress", 4096).value_or(""), specs) : "";
  if (stopped != nullptr) {
    *stopped = stop_reason;
  }
  if (reports.empty() && !stop_reason.empty() &&
      result.outcome == process::ProcessResult::Outcome::exited && result.exit_code == 0) {
    return {};  // the interpreter declined the chain before its first stage: none of it ran
  }
  if (reports.empty()) {
    reports.emplace_back();
  }
  const std::size_t reached = std::min(reports.size(), specs.size());
  const ChainEnd end{result, ended_at, started_at, bounded, stop_reason, reached};
  for (std::size_t i = 0; i < reached; ++i) {
    stages.push_back(stage_reached(env, activation, specs, reports[i], i, end, hang));
  }
  return stages;
}

// A shell command: its exit status and output are the facts; judging them
// against what the contract expects is the judge's job.
StageResult run_command_stage(const PythonEnv& env, const facts::Environment& environment,
                              const ProbePlan::Command& command, const StageBudget& budget) {
  StageResult stage;
  stage.stage = stage_names::command(command.id);
  stage.activation = Activation::activated;
  process::ProcessSpec process;
  process.argv = command.ci_runner ? ci_runner_argv(command.run)
                                   : std::vector<std::string>{"/bin/bash", "-c", command.run};
  process.environment = layered_environment(environment, command.layers);
  for (const auto& [name, value] : command.extra) {
    process.environment[name] = value;
  }
  // A workdir the contract names is the env's own path (inside its container).
  process.working_dir = command.workdir.empty()
                            ? std::filesystem::path(discovery::seen_by_env(env, env.prefix))
                            : std::filesystem::path(command.workdir);
  process.credentials = discovery::credentials_of(env);
  const auto bounded = budget.bounded({stage.stage, Json(), command.timeout});
  const process::ProcessLimits limits = budget.limits(bounded.timeout);
  // A shell dumps no Python stacks.
  const auto result = discovery::run_env_process(env, process, limits, [&](pid_t pid) {
    stage.hang = diagnose_hang(discovery::command_below_prefix(pid, env.exec, env.run_as.uid), {},
                               discovery::credentials_of(env));
  });
  stage.duration = result.duration;
  stage.process = result.describe();
  stage.end = process_end(result);
  stage.stdout_tail = tail(result.out);
  stage.stderr_tail = tail(result.err);
  constexpr std::size_t k_kept_output = 64 * 1024;
  ProbeRecord record;
  record.type = "command";
  record.run = command.run;
  if (result.outcome == process::ProcessResult::Outcome::exited) {
    record.exit_code = result.exit_code;
  }
  record.output = result.out.substr(0, k_kept_output);
  stage.records.push_back(std::move(record));
  using Outcome = process::ProcessResult::Outcome;
  switch (result.outcome) {
    case Outcome::failed_to_start:
      stage.status = StageStatus::probe_error;
      stage.summary = "cannot run bash: " + result.describe();
      break;
    case Outcome::timed_out:
      // Cut to what was left of the env's deadline, it was stopped before
      // its own time-out: not a hang.
      stage.status = bounded.timeout_origin.empty() ? StageStatus::hung : StageStatus::stopped;
      stage.summary =
          "`" + first_line(command.run) + "` " +
          (bounded.timeout_origin.empty() ? "did not finish within " : "was stopped after ") +
          std::to_string(bounded.timeout.count()) + " ms" + bounded.timeout_origin +
          (bounded.timeout_origin.empty() ? "" : ", before its own time-out") +
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

bool imports_torch(const std::vector<std::string>& imports) {
  return std::any_of(imports.begin(), imports.end(), [](const std::string& name) {
    return name.substr(0, name.find('.')) == "torch";
  });
}

// Each check's stages, and identity (import torch) only when a check needs
// torch: a torch check, or a stage whose own imports name it.
std::vector<StageSpec> stage_specs(const ProbePlan& plan) {
  std::vector<StageSpec> specs;
  const bool torch_needed =
      plan.torch_identity ||
      std::any_of(plan.devices.begin(), plan.devices.end(),
                  [](const auto& devices) { return imports_torch(devices.imports); }) ||
      std::any_of(plan.smokes.begin(), plan.smokes.end(),
                  [](const auto& smoke) { return snippet_imports(smoke.code, "torch"); });
  if (torch_needed) {
    specs.push_back({std::string(stage_names::identity),
                     {{"stage", "identity"}},
                     plan.identity_timeout,
                     "",
                     "torch"});
  }
  if (!plan.imports.empty()) {
    specs.push_back({std::string(stage_names::imports),
                     {{"stage", "imports"},
                      {"modules", plan.imports},
                      {"report_torch_after", plan.torch_after_imports}},
                     plan.imports_timeout,
                     "",
                     plan.imports.front()});
  }
  for (const auto& devices : plan.devices) {
    specs.push_back(
        {stage_names::devices(devices.id),
         {{"stage", "devices"}, {"expression", devices.expression}, {"imports", devices.imports}},
         devices.timeout,
         "",
         devices.imports.empty() ? "" : devices.imports.front(),
         imports_torch(devices.imports)});
  }
  for (const auto& smoke : plan.smokes) {
    specs.push_back({stage_names::smoke(smoke.id),
                     {{"stage", "smoke"}, {"code", smoke.code}},
                     smoke.timeout,
                     "",
                     first_import_of_snippet(smoke.code),
                     snippet_imports(smoke.code, "torch")});
  }
  // No check runs Python: the interpreter is still started once, so that an
  // env is never judged on files alone when its interpreter cannot start or
  // is another Python than its files say.
  if (specs.empty()) {
    specs.push_back({std::string(stage_names::interpreter),
                     {{"stage", "interpreter"}},
                     plan.identity_timeout,
                     "",
                     ""});
  }
  return specs;
}

// The stages every env runs first, and again without activation: identity and imports.
bool is_first_stage(const StageSpec& spec) {
  return spec.name == stage_names::identity || spec.name == stage_names::imports;
}

std::vector<StageSpec> first_stages(const std::vector<StageSpec>& specs) {
  std::vector<StageSpec> first;
  std::copy_if(specs.begin(), specs.end(), std::back_inserter(first), is_first_stage);
  return first;
}

bool needs_torch(const StageSpec& spec) {
  return spec.needs_torch;
}

// The results of `specs`, taken from `results` (by stage name), in their order.
std::vector<StageResult> in_order_of(const std::vector<StageSpec>& specs,
                                     std::map<std::string, StageResult>& results) {
  std::vector<StageResult> ordered;
  for (const auto& spec : specs) {
    if (auto found = results.find(spec.name); found != results.end()) {
      ordered.push_back(std::move(found->second));
    }
  }
  return ordered;
}

constexpr const char* k_torch_does_not_import = "skipped: torch does not import in this env";

StageResult skipped_stage(const std::string& name, Activation activation) {
  StageResult skipped;
  skipped.stage = name;
  skipped.activation = activation;
  skipped.summary = k_torch_does_not_import;
  return skipped;
}

// Runs the Python stages `specs` until each has a result, in as few
// interpreters as their first imports allow: the stages that import the same
// module first share an interpreter that imports it once and forks a process
// for each (the probe program's chain), since a fresh interpreter's first step
// would have been that very import; any other order of imports (torch_fl
// before torch) is kept, in an interpreter of its own. After a stage that hung
// or ended its interpreter, the rest of its chain starts in a new one. Devices
// and smoke stages are skipped once identity shows that torch does not import.
// Results are in the order of `specs`.
std::vector<StageResult> run_stages_in_order(const PythonEnv& env,
                                             const facts::Environment& environment,
                                             Activation activation,
                                             const std::vector<StageSpec>& specs,
                                             const StageBudget& budget) {
  std::map<std::string, StageResult> results;  // by stage name
  // An identity cut short (the env's deadline, the scan's end) says nothing
  // of torch: the stages after it are not run, for that reason, below.
  const auto skip_reason = [&](const StageSpec& spec) -> std::string {
    const auto identity = results.find(std::string(stage_names::identity));
    return needs_torch(spec) && identity != results.end() &&
                   identity->second.status != StageStatus::ok &&
                   identity->second.status != StageStatus::stopped
               ? k_torch_does_not_import
               : "";
  };
  // First imports whose interpreter stopped a chain, and why: what stopped it
  // (a thread, a device, a failed import) would stop the next one too, so
  // their stages run alone, each saying why.
  std::map<std::string, std::string> unchained;
  std::vector<StageSpec> pending = specs;
  while (!pending.empty()) {
    const StageSpec next = pending.front();
    if (!skip_reason(next).empty()) {
      results.emplace(next.name, skipped_stage(next.name, activation));
      pending.erase(pending.begin());
      continue;
    }
    if (const auto why = budget.exhausted(); !why.empty()) {
      for (const auto& spec : pending) {
        results.emplace(spec.name, not_run(spec.name, activation, why));
      }
      break;
    }
    const auto why_alone = unchained.find(next.first_import);
    std::vector<StageSpec> chain = {next};
    for (auto spec = pending.begin() + 1;
         spec != pending.end() && !next.first_import.empty() && why_alone == unchained.end();
         ++spec) {
      if (spec->first_import == next.first_import && skip_reason(*spec).empty()) {
        chain.push_back(*spec);
      }
    }
    std::string stopped;
    auto ran = run_chain(env, environment, activation, chain, budget, &stopped);
    if (!stopped.empty()) {
      unchained.emplace(next.first_import, stopped);
    }
    const bool declined = ran.empty();
    if (declined) {
      // The interpreter declined the chain before its first stage: that
      // stage alone, then.
      ran = run_chain(env, environment, activation, {next}, budget);
    }
    if (const auto why = unchained.find(next.first_import);
        (declined || chain.size() == 1) && why != unchained.end() && !ran.empty()) {
      ran.front().process += " (in an interpreter of its own: " + why->second + ")";
    }
    for (auto& stage : ran) {
      std::erase_if(pending, [&](const StageSpec& spec) { return spec.name == stage.stage; });
      results.emplace(stage.stage, std::move(stage));
    }
  }
  return in_order_of(specs, results);
}

// Whether a stage uses the env's accelerator: a device count, a snippet.
bool touches_devices(const StageSpec& spec) {
  return spec.name.starts_with(stage_names::devices("")) ||
         spec.name.starts_with(stage_names::smoke(""));
}

// The first imports whose chains may run beside the others, in order: each
// one other than the first stage's (identity's torch) and none, whose chain
// needs nothing of the first one's but whether torch imports (the imports of
// `[torch_fl, flag_gems, triton]`, a device count of torch_fl). A chain
// with a device count or a snippet only when no other stage of the env uses
// a device: two processes of one env on its accelerator at once are what
// none of its users' jobs are, and an accelerator in an exclusive compute
// mode would fail one of them, a verdict decided by timing.
std::vector<std::string> chains_to_run_beside(const std::vector<StageSpec>& specs) {
  const auto& first = specs.front().first_import;
  const auto runs_beside = [&](const StageSpec& spec) {
    return !spec.first_import.empty() && spec.first_import != first;
  };
  std::vector<std::string> modules;
  std::set<std::string> using_devices;  // the first imports of chains that do; "" for the rest
  for (const auto& spec : specs) {
    if (touches_devices(spec)) {
      using_devices.insert(runs_beside(spec) ? spec.first_import : std::string());
    }
    if (runs_beside(spec) &&
        std::find(modules.begin(), modules.end(), spec.first_import) == modules.end()) {
      modules.push_back(spec.first_import);
    }
  }
  if (using_devices.size() > 1 || using_devices.contains("")) {
    std::erase_if(modules,
                  [&](const std::string& module) { return using_devices.contains(module); });
  }
  return modules;
}

// Runs `specs` as run_stages_in_order does, each chain that may
// (chains_to_run_beside) beside the others when `lanes` has one spare (a
// lone env on a host of several cores), in an interpreter started at once
// rather than after them. Whether torch imports is the only thing such a
// chain waits for when it runs in order: its stages that need torch are
// marked afterwards as in order (skipped if torch did not import, not run if
// identity was cut short or not run), so that each stage's status and
// summary do not depend on how many lanes were spare, but under the env's
// deadline or the scan's end: a stage that needs no torch may then have
// finished beside where in order it was not run. (Processes and times do
// depend on them: such a stage ran, and its chain may hold the commands
// back until it ends.)
std::vector<StageResult> run_python_stages(const PythonEnv& env,
                                           const facts::Environment& environment,
                                           Activation activation,
                                           const std::vector<StageSpec>& specs,
                                           const StageBudget& budget, const ProbeLanes* lanes) {
  const auto others =
      lanes == nullptr || specs.empty() ? std::vector<std::string>() : chains_to_run_beside(specs);
  const auto with_first_import = [&](const std::string& module) {
    std::vector<StageSpec> chain;
    std::copy_if(specs.begin(), specs.end(), std::back_inserter(chain),
                 [&](const StageSpec& spec) { return spec.first_import == module; });
    return chain;
  };
  std::vector<std::future<std::vector<StageResult>>> beside;
  std::vector<std::string> moved_beside;
  for (const auto& module : others) {
    auto lane = lanes->spare();
    if (!lane) {
      break;
    }
    try {
      beside.push_back(std::async(std::launch::async, [&env, &environment, activation, &budget,
                                                       chain = with_first_import(module),
                                                       lane = std::move(lane)]() mutable {
        const ProbeLanes::Hold held = std::move(lane);  // given back as the chain ends
        return run_stages_in_order(env, environment, activation, chain, budget);
      }));
    } catch (const std::system_error&) {
      break;  // no thread to spare: in order with the others, then
    }
    moved_beside.push_back(module);
  }
  std::vector<StageSpec> in_order;
  std::copy_if(specs.begin(), specs.end(), std::back_inserter(in_order),
               [&](const StageSpec& spec) {
                 return std::find(moved_beside.begin(), moved_beside.end(), spec.first_import) ==
                        moved_beside.end();
               });
  auto ran = run_stages_in_order(env, environment, activation, in_order, budget);
  const auto identity = std::find_if(ran.begin(), ran.end(), [](const StageResult& stage) {
    return stage.stage == stage_names::identity;
  });
  const bool torch_failed = identity != ran.end() && identity->status != StageStatus::ok;
  // Identity cut short or not run (the env's deadline, the scan's end): in
  // order, what needs torch after it was not run either, for that reason.
  std::string not_run_why;
  if (torch_failed && identity->status == StageStatus::stopped) {
    not_run_why = identity->not_run ? identity->summary : budget.exhausted();
    if (not_run_why.empty()) {
      not_run_why = "not run: identity was cut short (" + identity->summary + ")";
    }
  }
  std::map<std::string, StageResult> results;  // by stage name
  for (auto& run : beside) {
    for (auto& stage : run.get()) {
      const auto spec = std::find_if(specs.begin(), specs.end(),
                                     [&](const StageSpec& s) { return s.name == stage.stage; });
      if (torch_failed && spec != specs.end() && needs_torch(*spec)) {
        stage = !not_run_why.empty() ? not_run(stage.stage, activation, not_run_why)
                                     : skipped_stage(stage.stage, activation);
      }
      results.emplace(stage.stage, std::move(stage));
    }
  }
  if (results.empty()) {
    return ran;
  }
  for (auto& stage : ran) {
    results.emplace(stage.stage, std::move(stage));
  }
  return in_order_of(specs, results);
}

}  // namespace

bool activation_changes_loading(const ActivatedEnvironment& activation) {
  for (const auto& change : environment_changes(activation.bare, activation.activated)) {
    if (change.name != "PS1" && change.name != "PATH" && !change.name.starts_with("CONDA_") &&
        !change.name.starts_with("VIRTUAL_ENV")) {
      return true;
    }
  }
  return false;
}

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
  facts.refused = discovery::code_refusal(env.imports_checked ? env : checked);
  if (facts.refused) {
    return facts;
  }
  const auto specs = stage_specs(plan);
  const StageBudget budget(plan);
  // The same identity and imports stages without activation, to tell
  // "broken" from "works only when activated": in interpreters of their own,
  // so alongside the activated stages, on a core a lone env leaves idle.
  const bool compare =
      plan.compare_bare && activation_changes_loading(activation) && budget.exhausted().empty();
  std::future<std::vector<StageResult>> bare_run;
  const auto run_bare = [&] {
    return run_python_stages(env, activation.bare, Activation::bare, first_stages(specs), budget,
                             plan.lanes.get());
  };
  if (compare) {
    // The env's second line of work: it holds a lane when one is spare, so
    // that a chain runs beside the others only on a core neither line holds,
    // and runs all the same when none is.
    auto bare_lane = plan.lanes ? plan.lanes->spare() : ProbeLanes::Hold();
    try {
      bare_run = std::async(std::launch::async, [run_bare, lane = std::move(bare_lane)]() mutable {
        const ProbeLanes::Hold held = std::move(lane);  // given back as the bare run ends
        return run_bare();
      });
    } catch (const std::system_error&) {
      bare_run = std::async(std::launch::deferred, run_bare);  // no thread to spare: after them
    }
  }
  facts.stages = run_python_stages(env, activation.activated, Activation::activated, specs, budget,
                                   plan.lanes.get());
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
  if (!compare) {
    return facts;  // a comparison only: nothing is lost when it is not made
  }
  auto bare_stages = bare_run.get();
  for (auto& bare : bare_stages) {
    // A stage the env's deadline or the scan's end cut short is stopped, and
    // so is every one after it; those before it finished and compare.
    if (bare.status == StageStatus::stopped) {
      break;  // comparing it would invent an activation artifact
    }
    const auto activated =
        std::find_if(facts.stages.begin(), facts.stages.end(),
                     [&](const auto& stage) { return stage.stage == bare.stage; });
    if (activated != facts.stages.end() &&
        (bare.status == StageStatus::ok) != (activated->status == StageStatus::ok)) {
      ActivationArtifact artifact;
      artifact.stage = bare.stage;
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
  std::mutex failure_mutex;
  std::exception_ptr failure;  // the first job's exception
  const auto work = [&] {
    for (std::size_t index; (index = next.fetch_add(1)) < count;) {
      try {
        job(index);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) {
          failure = std::current_exception();
        }
      }
    }
  };
  std::vector<std::thread> workers;
  const std::size_t worker_count = std::min<std::size_t>(limit, count);
  workers.reserve(worker_count);
  for (std::size_t i = 0; i < worker_count; ++i) {
    try {
      workers.emplace_back(work);
    } catch (...) {
      break;  // no thread to spare (the unit's task limit, memory): fewer workers
    }
  }
  if (workers.empty()) {
    work();  // not one: the calling thread does every job
  }
  for (auto& worker : workers) {
    worker.join();
  }
  if (failure) {
    std::rethrow_exception(failure);
  }
}

}  // namespace envcontract::probes
