#include "discovery/python_env.hpp"

namespace envcontract::discovery {

std::string code_refusal(const PythonEnv& env) {
  if (!env.run_as.problem.empty()) {
    return "none of this env's code runs: " + env.run_as.problem;
  }
  if (!env.unsafe.empty()) {
    const auto& first = env.unsafe.front();
    return "none of this env's code runs: " + first.path.string() + " is " + first.why +
           " (owner " + first.owner + ", group " + first.group + ", mode " + mode_text(first.mode) +
           ")" +
           (env.unsafe.size() > 1 ? ", and " + std::to_string(env.unsafe.size() - 1) + " more"
                                  : "");
  }
  if (!env.imports_unchecked.empty()) {
    return "none of this env's code runs: " + env.imports_unchecked;
  }
  if (!env.exec.empty() && !env.exec.runtime_client && env.run_as.is_root() &&
      !env.exec.argv.empty()) {
    // nsenter or a command line leaves the container's seccomp profile,
    // device cgroup and capability bounds behind: as root, that is the host.
    return "none of this env's code runs: it would run as root through " + env.exec.argv.front() +
           ", outside container " + env.exec.target +
           "'s confinement; give run_root_envs_as another user, or use the runtime's own exec "
           "(docs/containers.md)";
  }
  return "";
}

std::optional<process::Credentials> credentials_of(const PythonEnv& env) {
  if (!env.run_as.switch_credentials) {
    return std::nullopt;
  }
  return process::Credentials{env.run_as.uid, env.run_as.gid, env.run_as.groups};
}

Json to_json(const Discovery& discovery) {
  auto envs = Json::array();
  for (const auto& env : discovery.envs) {
    envs.push_back(to_json(env));
  }
  auto problems = Json::array();
  for (const auto& problem : discovery.problems) {
    problems.push_back({{"path", problem.path.string()}, {"problem", problem.problem}});
  }
  return {{"envs", envs}, {"problems", problems}};
}

}  // namespace envcontract::discovery
