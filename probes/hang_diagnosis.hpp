#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "discovery/python_env.hpp"
#include "facts/dynamic.hpp"
#include "probes/fact_names.hpp"
#include "process/process_runner.hpp"

namespace envcontract::probes {

using facts::to_json;

using facts::ThreadSample;

using facts::StackFrame;

using facts::HangDiagnosis;

// Samples `pid` before it is killed: per thread state, CPU over `interval`
// and wait channel from /proc; the Python stacks the probe program dumps on
// SIGUSR1 into a file that `read_python_stacks` reads (nullopt while the
// file does not exist: the probe creates it when its handler is in place);
// the native stack of the busiest thread from eu-stack (elfutils), run as
// `sampler`, the user whose code hangs (the env's credentials: unset when the
// env's code runs as the agent's own user), with CAP_SYS_PTRACE alone.
using StackReader = std::function<std::optional<std::string>()>;
// `pidfd`, when not -1, pins the process `pid` names (one the caller did not
// start, whose pid could be reused once it ends): the signal goes through it,
// and a process that ended while it was sampled gives no samples.
HangDiagnosis diagnose_hang(pid_t pid, const StackReader& read_python_stacks,
                            const std::optional<process::Credentials>& sampler,
                            std::chrono::milliseconds interval = std::chrono::milliseconds(300),
                            int pidfd = -1);

// Classification and summary from thread samples and the busiest stack.
void classify_hang(HangDiagnosis& diagnosis);

// Parses `eu-stack -m` output into the frames of thread `tid`.
std::vector<StackFrame> parse_eu_stack(const std::string& output, pid_t tid);

}  // namespace envcontract::probes
