#include "facts/env.hpp"

#include <cstdio>

namespace envcontract::facts {

std::string path_inside_root(const std::filesystem::path& root, const std::string& path) {
  std::string prefix = root.string();
  while (prefix.size() > 1 && prefix.back() == '/') {
    prefix.pop_back();
  }
  if (prefix.empty() || prefix == "/") {
    return path;
  }
  if (path == prefix) {
    return "/";
  }
  return path.starts_with(prefix + "/") ? path.substr(prefix.size()) : path;
}

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
  auto unsafe = Json::array();
  for (const auto& path : env.unsafe) {
    unsafe.push_back(to_json(path));
  }
  return {{"name", env.name},
          {"prefix", env.prefix.string()},
          {"kind", to_string(env.kind)},
          {"python", env.python.string()},
          {"python_version", env.python_version},
          {"python_version_conflict",
           env.python_version_conflict.empty() ? Json(nullptr) : Json(env.python_version_conflict)},
          {"owner", env.owner},
          {"system_root", env.system_root.string()},
          {"container", env.exec.empty() ? Json(nullptr) : Json(env.exec.target)},
          {"found_by", env.found_by},
          {"problems", problem_texts(env.problems)},
          {"run_as", to_json(env.run_as)},
          {"unsafe", unsafe},
          {"imports_unchecked",
           env.imports_unchecked.empty() ? Json(nullptr) : Json(env.imports_unchecked)}};
}

std::optional<CodeRefusal> code_refusal(const PythonEnv& env) {
  using Kind = CodeRefusal::Kind;
  const std::string none_runs = "none of this env's code runs: ";
  if (!env.run_as.problem.empty()) {
    return CodeRefusal{Kind::run_as_unavailable, none_runs + env.run_as.problem};
  }
  if (!env.unsafe.empty()) {
    const auto& first = env.unsafe.front();
    return CodeRefusal{
        Kind::unsafe_permissions,
        none_runs + first.path.string() + " is " + first.why + " (owner " + first.owner +
            ", group " + first.group + ", mode " + mode_text(first.mode) + ")" +
            (env.unsafe.size() > 1 ? ", and " + std::to_string(env.unsafe.size() - 1) + " more"
                                   : "")};
  }
  if (!env.imports_unchecked.empty()) {
    return CodeRefusal{Kind::imports_unchecked, none_runs + env.imports_unchecked};
  }
  if (!env.exec.empty() && !env.exec.runtime_client && env.run_as.is_root() &&
      !env.exec.argv.empty()) {
    return CodeRefusal{Kind::unconfined_root,
                       none_runs + "it would run as root through " + env.exec.argv.front() +
                           ", outside container " + env.exec.target +
                           "'s confinement; give run_root_envs_as another user, or use the "
                           "runtime's own exec (docs/containers.md)"};
  }
  return std::nullopt;
}

std::vector<std::string> problem_texts(const std::vector<EnvProblem>& problems) {
  std::vector<std::string> texts;
  texts.reserve(problems.size());
  for (const auto& problem : problems) {
    texts.push_back(problem.text);
  }
  return texts;
}

Json to_json(const RunAs& run_as) {
  return {{"user", run_as.user},
          {"uid", run_as.uid},
          {"gid", run_as.gid},
          {"groups", run_as.groups},
          {"reason", run_as.reason},
          {"problem", run_as.problem.empty() ? Json(nullptr) : Json(run_as.problem)}};
}

std::string mode_text(unsigned mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", mode & 07777);
  return text;
}

Json to_json(const UnsafePath& unsafe) {
  return {{"path", unsafe.path.string()},
          {"owner", unsafe.owner},
          {"group", unsafe.group},
          {"mode", mode_text(unsafe.mode)},
          {"why", unsafe.why}};
}

Json to_json(const FileProblem& problem) {
  return {{"path", problem.path.string()}, {"problem", problem.problem}};
}

}  // namespace envcontract::facts
