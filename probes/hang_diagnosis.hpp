#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "probes/python_env.hpp"

namespace envcontract::probes {

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

// Samples `pid` before it is killed: per thread state, CPU over `interval`
// and wait channel from /proc; the Python stacks the probe program dumps on
// SIGUSR1 into a file that `read_python_stacks` reads (nullopt while the
// file does not exist: the probe creates it when its handler is in place);
// the native stack of the busiest thread from eu-stack (elfutils).
using StackReader = std::function<std::optional<std::string>()>;
HangDiagnosis diagnose_hang(pid_t pid, const StackReader& read_python_stacks,
                            std::chrono::milliseconds interval = std::chrono::milliseconds(300));

// Classification and summary from thread samples and the busiest stack.
void classify_hang(HangDiagnosis& diagnosis);

// Parses `eu-stack -m` output into the frames of thread `tid`.
std::vector<StackFrame> parse_eu_stack(const std::string& output, pid_t tid);

Json to_json(const HangDiagnosis& diagnosis);

}  // namespace envcontract::probes
