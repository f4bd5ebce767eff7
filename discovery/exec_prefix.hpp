#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "facts/env.hpp"
#include "process/process_runner.hpp"
#include "process/scratch_directory.hpp"

// Running an env's code inside the container it belongs to: the same
// process, started through an exec prefix ("docker exec -i --user U:G NAME",
// "nsenter --target PID ...", a bwrap command line). What crosses into the
// container never passes through the prefix's own argv or environment:
//
// - the prefix runs with a fixed environment (PATH, LANG, and for a runtime
//   client the agent's DOCKER_HOST/CONTAINER_HOST), so an env's activation
//   cannot point a root docker or podman client at another daemon or
//   configuration;
// - the command's environment is written to the process's stdin,
//   NUL-separated, and a fixed bash script inside the container clears its
//   own environment, exports those variables, changes to the working
//   directory and execs the command (values never show in `ps`);
// - a prefix that switches users itself (docker's --user, nsenter's
//   --setuid) runs as the agent, with the env's uid and gid in its argv;
//   any other runs as the env's user, as the command would. Root is never
//   one of them outside a runtime's own exec (python_env.cpp's
//   code_refusal): nsenter and command lines leave the container's
//   seccomp, device cgroup and capability bounds behind.
namespace envcontract::discovery {

using facts::ExecPrefix;

// Presets. `client` is the runtime's command ("/usr/bin/docker").
ExecPrefix docker_exec_prefix(const std::string& target, const std::string& client,
                              const std::string& container);
ExecPrefix podman_exec_prefix(const std::string& target, const std::string& client,
                              const std::string& container);
// Enters the namespaces of `pid` (mount, pid, uts, ipc, net), as that user.
ExecPrefix nsenter_exec_prefix(const std::string& target, const std::string& nsenter, pid_t pid);
// Any argv. It runs as the env's user unless `switches_user` says that it
// switches to {uid} and {gid} itself (which it must then name).
ExecPrefix generic_exec_prefix(const std::string& target, std::vector<std::string> argv,
                               bool switches_user = false);

// The process that runs `inside` (argv, environment, working directory and
// stdin as the container names them, credentials of the env's user) through
// `prefix`.
process::ProcessSpec through_prefix(const ExecPrefix& prefix, const process::ProcessSpec& inside);

// A path of `env` as its own processes name it: inside its container (the
// container root's part taken off) when it has an exec prefix, else as is.
std::string seen_by_env(const facts::PythonEnv& env, const std::filesystem::path& path);
// A path that the env's processes named, as the agent names it.
std::string seen_by_agent(const facts::PythonEnv& env, const std::string& path);
// The tree whose /tmp holds a private directory for `env`'s processes, as
// the agent names it (process/scratch_directory.hpp): "/" on the host; in a
// container, the root its processes see when one of them is known, else
// its root.
std::filesystem::path scratch_root(const facts::PythonEnv& env);
// The process whose root scratch_root() names, when it is one's.
process::ProcessIdentity scratch_root_process(const facts::PythonEnv& env);
// `spec` (paths as seen_by_env gives them) as it runs for `env`: through its
// exec prefix when it has one, as it is otherwise.
process::ProcessSpec env_process(const facts::PythonEnv& env, const process::ProcessSpec& spec);

// The process below `pid` (a prefix's) that runs the command: the first
// descendant whose executable is not the prefix's own (bwrap forks twice,
// nsenter once). For a runtime's client, whose command the runtime starts,
// the first process in another root than the agent's that carries the
// client's kill marker and runs as `uid` (the env's user: a process of
// anyone else's that set the marker in its own environment is never the one
// sampled). `pid` itself when there is none.
pid_t command_below_prefix(pid_t pid, const ExecPrefix& prefix, uid_t uid);

}  // namespace envcontract::discovery
