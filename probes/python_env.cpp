#include "probes/python_env.hpp"

namespace envcontract::probes {

std::string to_string(EnvKind kind) {
  switch (kind) {
    case EnvKind::conda:
      return "conda";
    case EnvKind::venv:
      return "venv";
    case EnvKind::interpreter:
      return "interpreter";
  }
  return "conda";
}

Json to_json(const PythonEnv& env) {
  return {{"name", env.name},
          {"prefix", env.prefix.string()},
          {"kind", to_string(env.kind)},
          {"python", env.python.string()},
          {"python_version", env.python_version},
          {"owner", env.owner},
          {"found_by", env.found_by},
          {"problems", env.problems}};
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

}  // namespace envcontract::probes
