#pragma once

#include "facts/env.hpp"
#include "process/process_runner.hpp"

// One engine exec per container and user, not one per process. A container
// engine's client (docker exec, podman exec) costs 0.07-0.15 s to start,
// and an env's probe is several processes (activation, the probe's
// interpreters, each command). While a scan holds an ExecSessionScope, the
// first process of an env run through a runtime's exec starts a session
// instead: one exec of the client running a small fixed bash server inside
// the container, as the env's user, with the probe's limits set once by the
// exec bootstrap (discovery/exec_prefix.cpp). Each process is then a request to
// that server, which starts it in a subshell with exactly the environment,
// working directory and argv it was sent, its stdin /dev/null, its stdout
// and stderr two FIFOs the agent made in the session's private directory
// (and reads as it reads a child's pipes), and a marker of its own, by which
// the agent finds its processes inside to kill them at a time-out or at its
// end and to sample a hang. The server says when each has ended, and with
// what status, on the client's stdout.
//
// What a session shares is what the processes of one user in one container
// share anyway: envs run as the same user there can already signal and
// trace each other's processes. Envs run as different users never share a
// session. A session that cannot start, or has ended, is not used: the
// process is run through its own exec, as without a scope.
namespace envcontract::discovery {

// Runs `inside` (argv, environment and working directory as the env's
// processes name them, seen_by_env) for `env` to its end, as
// run_process(env_process(env, inside), ...) does: through a session of its
// container when its exec prefix is a runtime's client and a scope is held,
// else through its exec prefix, or directly.
process::ProcessResult run_env_process(const facts::PythonEnv& env,
                                       const process::ProcessSpec& inside,
                                       const process::ProcessLimits& limits,
                                       const process::TimeoutHook& on_timeout = {});

// While one lives (scopes nest, from any thread), runtime execs go through
// sessions; when the last one ends, every session is closed and what ran in
// it is ended.
class ExecSessionScope {
 public:
  ExecSessionScope();
  ~ExecSessionScope();
  ExecSessionScope(const ExecSessionScope&) = delete;
  ExecSessionScope& operator=(const ExecSessionScope&) = delete;
};

// How many sessions were started since the agent started (a figure for
// tests and benchmarks).
std::size_t exec_sessions_started();

}  // namespace envcontract::discovery
