#include "discovery/exec_prefix.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "process/containment.hpp"
#include "process/small_files.hpp"
#include "process/system_root.hpp"

namespace envcontract::discovery {
namespace {

constexpr const char* k_uid = "{uid}";
constexpr const char* k_gid = "{gid}";

// Runs inside the container, as the env's user, with the environment the
// prefix left it (but the process runner's kill marker, ENVCONTRACT_PROBE,
// which finds the command's descendants where there is no cgroup of ours).
// Fixed text: the working directory arrives as $1, the resource limits as
// $2 ("FLAG:SOFT:HARD" words for ulimit, for a command a runtime's daemon
// starts, out of reach of the limits the process runner sets on the client;
// only ever lowered) and the command as the rest, the variables on stdin
// (NAME=value, NUL-terminated, an empty entry last); bash reads a pipe byte
// by byte, so what follows is left to the command. It enters the working
// directory before it exports the variables (one named `dir` moves
// nothing), and reads them into a name of its own (one named `entry` is
// exported as the env set it).
constexpr const char* k_bootstrap = R"sh(
dir=$1
limits=$2
shift 2
for limit in $limits; do
  flag=${limit%%:*} rest=${limit#*:}
  soft=${rest%%:*} hard=${rest#*:}
  now=$(ulimit -H "-$flag")
  if [ "$now" = unlimited ] || [ "$now" -gt "$hard" ]; then
    ulimit "-$flag" "$hard" || exit 126  # soft and hard: a soft above the hard is refused
  fi
  now=$(ulimit -H "-$flag")
  if [ "$now" != unlimited ] && [ "$soft" -gt "$now" ]; then
    soft=$now
  fi
  ulimit -S "-$flag" "$soft" || exit 126
done
cd -- "$dir" || exit 126
for name in $(compgen -e); do
  [ "$name" = ENVCONTRACT_PROBE ] || unset -v "$name" 2>/dev/null
done
while IFS= read -r -d '' __envcontract_entry && [ -n "$__envcontract_entry" ]; do
  export -- "$__envcontract_entry" 2>/dev/null ||
    printf 'envcontract: %s cannot be set inside the container\n' "${__envcontract_entry%%=*}" >&2
done
unset -v __envcontract_entry
exec "$@"
)sh";

bool names_user(const std::vector<std::string>& argv) {
  return std::any_of(argv.begin(), argv.end(), [](const std::string& word) {
    return word.find(k_uid) != std::string::npos || word.find(k_gid) != std::string::npos;
  });
}

std::string replaced(std::string word, const std::string& from, const std::string& to) {
  for (auto at = word.find(from); at != std::string::npos; at = word.find(from, at + to.size())) {
    word.replace(at, from.size(), to);
  }
  return word;
}

ExecPrefix runtime_exec_prefix(const std::string& target, const std::string& client,
                               const std::string& container) {
  // -i: stdin carries the environment; no -t, so stdout and stderr stay
  // apart. The runtime starts bash with the image's own environment: the
  // variables that would make bash run a file or trace its commands (and so
  // print the exports that follow) are emptied before it starts.
  // ENVCONTRACT_PROBE without a value: the client passes its own in (the
  // process runner's marker, which finds the command's processes, started
  // by the runtime and not ours).
  return {target,
          {client, "exec", "-i", "--user", "{uid}:{gid}", "-e", "BASH_ENV=", "-e", "ENV=", "-e",
           "SHELLOPTS=", "-e", "BASHOPTS=", "-e", "PS4=", "-e", process::k_probe_marker, "--",
           container},
          true,
          true,
          0,
          0};
}

std::string exe_of(pid_t pid) {
  std::error_code error;
  return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", error).string();
}

// The command a runtime's client had started inside the container: the
// first-started process in the pid namespace of `container_process` that
// carries the client's marker, runs as `uid` and stands in another root than
// the agent's (the client and its monitor, on the host, may carry it too).
// `client` itself when there is none yet.
pid_t command_started_by_runtime(pid_t client, uid_t uid, pid_t container_process) {
  const std::string marker = process::probe_marker_of(client);
  if (marker.empty()) {
    return client;
  }
  struct stat ours {};
  if (::stat("/", &ours) != 0) {
    return client;
  }
  if (container_process <= 0) {
    return client;  // no container process known: nothing is looked for host-wide
  }
  // `client` itself too: run through an exec session (discovery/exec_session.hpp)
  // the process sampled is the command inside, marked, not a client.
  const pid_t first = process::first_started_of(
      process::find_marked_processes_in(marker, container_process), uid, [&](pid_t marked) {
        struct stat theirs {};
        const std::string root = "/proc/" + std::to_string(marked) + "/root";
        return ::stat(root.c_str(), &theirs) == 0 &&
               !(theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino);
      });
  return first > 0 ? first : client;
}

}  // namespace

ExecPrefix docker_exec_prefix(const std::string& target, const std::string& client,
                              const std::string& container) {
  return runtime_exec_prefix(target, client, container);
}

ExecPrefix podman_exec_prefix(const std::string& target, const std::string& client,
                              const std::string& container) {
  return runtime_exec_prefix(target, client, container);
}

ExecPrefix nsenter_exec_prefix(const std::string& target, const std::string& nsenter, pid_t pid) {
  // No --cgroup: the command stays in the probe's cgroup, where a time-out
  // kills all of it. Entering the mount namespace sets the root to the
  // container's.
  return {target,
          {nsenter, "--target", std::to_string(pid), "--mount", "--pid", "--uts", "--ipc", "--net",
           "--setgid", k_gid, "--setuid", k_uid, "--"},
          true,
          false,
          0,
          0};
}

ExecPrefix generic_exec_prefix(const std::string& target, std::vector<std::string> argv,
                               bool switches_user) {
  const bool switches = switches_user && names_user(argv);
  return {target, std::move(argv), switches, false, 0, 0};
}

process::ProcessSpec through_prefix(const ExecPrefix& prefix, const process::ProcessSpec& inside) {
  process::ProcessSpec outer;
  const uid_t uid = inside.credentials ? inside.credentials->uid : ::geteuid();
  const gid_t gid = inside.credentials ? inside.credentials->gid : ::getegid();
  for (const auto& word : prefix.argv) {
    outer.argv.push_back(
        replaced(replaced(word, k_uid, std::to_string(uid)), k_gid, std::to_string(gid)));
  }
  outer.argv.insert(outer.argv.end(), {"/bin/bash", "--noprofile", "--norc", "-c", k_bootstrap,
                                       "envcontract-exec", inside.working_dir.string()});
  // The limits' word: empty where the prefix's own child is the command's
  // ancestor (nsenter, bwrap), whose limits it inherits.
  outer.argv.emplace_back();
  if (prefix.runtime_client) {
    outer.tree_outside = true;
    outer.limits_word = outer.argv.size() - 1;
    outer.unprivileged_inside = uid != 0;
    outer.inside_process = prefix.root_process;
  }
  outer.argv.insert(outer.argv.end(), inside.argv.begin(), inside.argv.end());
  outer.environment["PATH"] = process::k_system_path;
  outer.environment["LANG"] = "C.UTF-8";
  for (const char* name : {"DOCKER_HOST", "CONTAINER_HOST"}) {
    // The runtime's client needs them; nothing else gets the agent's own.
    if (const char* value = std::getenv(name); value != nullptr && prefix.runtime_client) {
      outer.environment[name] = value;
    }
  }
  for (const auto& [name, value] : inside.environment) {
    // A NUL would end the entry early: such a value cannot be passed whole.
    if (name.find('\0') == std::string::npos && value.find('\0') == std::string::npos) {
      outer.stdin_data += name + "=" + value;
      outer.stdin_data.push_back('\0');
    }
  }
  outer.stdin_data.push_back('\0');
  outer.stdin_data += inside.stdin_data;
  outer.working_dir = "/";
  if (!prefix.switches_user) {
    outer.credentials = inside.credentials;
  }
  return outer;
}

std::string seen_by_env(const facts::PythonEnv& env, const std::filesystem::path& path) {
  // Only processes started through an exec prefix see the env's root as
  // theirs; without one they run on the agent's paths.
  return env.exec.empty() ? path.string() : facts::path_inside_root(env.system_root, path.string());
}

std::string seen_by_agent(const facts::PythonEnv& env, const std::string& path) {
  if (env.exec.empty() || path.empty() || path.front() != '/') {
    return path;
  }
  return process::under_root(env.system_root, path).string();
}

std::filesystem::path scratch_root(const facts::PythonEnv& env) {
  if (env.exec.empty()) {
    return "/";
  }
  if (env.exec.root_process > 0) {
    return "/proc/" + std::to_string(env.exec.root_process) + "/root";
  }
  return env.system_root;
}

process::ProcessIdentity scratch_root_process(const facts::PythonEnv& env) {
  return env.exec.empty()
             ? process::ProcessIdentity{}
             : process::ProcessIdentity{env.exec.root_process, env.exec.root_process_start};
}

process::ProcessSpec env_process(const facts::PythonEnv& env, const process::ProcessSpec& spec) {
  return env.exec.empty() ? spec : through_prefix(env.exec, spec);
}

pid_t command_below_prefix(pid_t pid, const ExecPrefix& prefix, uid_t uid) {
  if (prefix.empty()) {
    return pid;
  }
  if (prefix.runtime_client) {
    return command_started_by_runtime(pid, uid, prefix.root_process);
  }
  std::error_code error;
  const auto program = std::filesystem::canonical(prefix.argv.front(), error);
  pid_t current = pid;
  for (int depth = 0; depth < 8; ++depth) {
    if (exe_of(current) != program.string()) {
      return current;
    }
    constexpr process::FileLimits k_children{"list of child processes", 64 * 1024, false, 0};
    const auto children = process::read_file_bounded(
        "/proc/" + std::to_string(current) + "/task/" + std::to_string(current) + "/children",
        k_children);
    std::istringstream words(children.text.value_or(""));
    pid_t child = 0;
    if (!(words >> child) || child <= 0) {
      break;
    }
    current = child;
  }
  return pid;
}

}  // namespace envcontract::discovery
