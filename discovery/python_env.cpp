#include "discovery/python_env.hpp"

namespace envcontract::discovery {

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
