#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "facts/activation.hpp"
#include "facts/env.hpp"

// What running an env's code showed, stage by stage, each in its own
// process: how it ended, what the probe program reported, and why it hung
// (docs/probes.md, "Dynamic probes").
namespace envcontract::facts {

using Json = nlohmann::ordered_json;

struct ThreadSample {
  pid_t tid = 0;
  std::string name;        // /proc/.../comm
  char state = '?';        // R running, S sleeping, D uninterruptible (I/O), ...
  double cpu_percent = 0;  // over the sampling interval
  std::string wchan;       // kernel function it waits in ("futex_do_wait"), "" when running
};

struct StackFrame {
  std::string function;  // "" when the symbol is unknown
  std::string library;   // file name of the module: libxpurt.so.1
};

// Why a process that ran out of time is stuck, from the outside.
struct HangDiagnosis {
  // spin: a thread burns CPU (a busy wait); blocked: every thread sleeps (a
  // deadlock, or a wait on a device); io: a thread is in uninterruptible I/O.
  std::string classification;
  std::vector<ThreadSample> threads;
  pid_t busiest_tid = 0;
  std::vector<StackFrame> native_stack;  // of the busiest thread (the main one when none is busy)
  std::string native_stack_problem;      // why the native stack is missing
  std::string python_stacks;             // faulthandler's dump of every thread
  // "1 of 66 threads running at ~100% CPU in xpu_wait (libxpurt.so.1); 65 parked in futex wait"
  std::string summary;
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

// One record of what a stage's process reported: the probe program's JSON
// Lines, or the command runner's own. Its fields come from a process the
// env's code ran in, so they are only ever data, typed here once at the edge
// (probe_record_from_json): judges never meet the JSON.
struct ProbeRecord {
  // import, torch, torch_after_imports, devices, smoke, search_path, command,
  // or stage_names::fail_fast_stop
  std::string type;
  std::string module;                   // import: the module's name
  bool ok = false;                      // import, smoke: it raised nothing
  std::string error_type;               // import, devices, smoke: the exception's class
  std::string error;                    // its message
  std::string traceback;                // its traceback, the last 8,000 characters
  std::optional<std::string> file;      // import, torch: the module's __file__
  std::optional<std::string> realpath;  // import: the same with symlinks resolved
  std::vector<std::string> warnings;    // import: the warnings it raised
  std::string stderr_text;              // import: what C code wrote to fd 2 meanwhile
  std::optional<double> seconds;        // import, smoke: how long it took
  // torch: torch.__version__; search_path: the interpreter's own (3.10.13)
  std::optional<std::string> version;
  std::optional<std::string> cuda;    // torch, torch_after_imports: torch.version.cuda
  std::optional<std::string> hip;     // torch, torch_after_imports: torch.version.hip
  std::string expression;             // devices: the contract's expression
  std::optional<std::int64_t> value;  // devices: its value, when it was an integer
  std::string output;                 // smoke, command: what it printed
  std::string run;                    // command: the command line
  std::optional<int> exit_code;       // command: its exit status, when it exited
  std::string blocked_by;             // fail_fast_stop: the test that failed first
  std::vector<std::string> entries;   // search_path: the interpreter's sys.path
};

// A record as the probe program wrote it (a JSON object whose "type" is a
// string): a field of another type than its own is taken as absent.
ProbeRecord probe_record_from_json(const Json& json);
Json to_json(const ProbeRecord& record);

// How a stage's process ended, as the process runner saw it (a stage's
// `process` says the same in words): what the judges act on.
struct ProcessEnd {
  enum class How {
    unknown,          // no process of its own ran (not run, or its directory not made)
    in_fork,          // finished in a process forked from the interpreter, which went on
    exited,           // exit_code says how
    signaled,         // killed by `signal`
    timed_out,        // killed at its time-out
    cancelled,        // stopped by the agent (shutdown, the scan's deadline)
    failed_to_start,  // never ran the program (StageResult::exec_failure says why)
  };
  How how = How::unknown;
  int exit_code = -1;  // for exited
  int signal = 0;      // for signaled

  bool exited() const { return how == How::exited; }
  bool exited_with(int code) const { return exited() && exit_code == code; }
};

struct StageResult {
  std::string stage;  // identity, imports, devices:<id>, smoke:<id>, command:<id>
  Activation activation = Activation::activated;
  StageStatus status = StageStatus::skipped;
  std::string summary;               // one line a person can act on
  std::vector<ProbeRecord> records;  // what its process reported (without start and end)
  std::string process;               // "exit 0", "killed by SIGABRT", "timed out after ..."
  ProcessEnd end;                    // the same, typed
  std::string stdout_tail;
  std::string stderr_tail;
  std::chrono::milliseconds duration{0};
  std::optional<HangDiagnosis> hang;
  // For a stage whose process ended early, was stopped or ran out of time:
  // the step it was in ("import torch", or the stage's own name), what a
  // person runs again to see it. "" otherwise.
  std::string interrupted_step;
  // Stopped before it began (the env's deadline had passed, the scan ended,
  // an integration test failed first): `summary` says why. A stage cut
  // short while it ran is stopped too, with this false.
  bool not_run = false;
  // Why its interpreter never ran, when exec itself refused it.
  enum class ExecFailure {
    none,            // it started, or failed before its exec (the agent's own setup)
    missing,         // no such file: the interpreter, or the ELF interpreter it names
    not_executable,  // not a format the kernel runs
    refused,         // another refusal: permissions, limits
  };
  ExecFailure exec_failure = ExecFailure::none;
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
  // Why none of the env's code ran (code_refusal, made with what the probes
  // checked themselves when the scan had not: facts/env.hpp), or nullopt.
  std::optional<CodeRefusal> refused;
};

Json to_json(const HangDiagnosis& diagnosis);
Json to_json(const StageResult& stage);
Json to_json(const ActivationArtifact& artifact);
Json to_json(const DynamicFacts& facts);

}  // namespace envcontract::facts
