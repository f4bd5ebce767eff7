#include "contracts/search_path_agreement.hpp"

#include <algorithm>
#include <set>

#include "common/python_names.hpp"

namespace envcontract::contracts {
namespace {

bool within(const std::string& path, const std::string& dir) {
  return !dir.empty() && (path == dir || path.starts_with(dir + "/"));
}

// Inside the standard library proper, not one of the site dirs a conda or
// pyenv prefix keeps under it (lib/pythonX.Y/site-packages).
bool in_stdlib(const std::string& path, const std::string& stdlib) {
  return within(path, stdlib) && !within(path, stdlib + "/site-packages") &&
         !within(path, stdlib + "/dist-packages");
}

CheckResult disagreement_result() {
  CheckResult result;
  result.id = "env:search-path";
  result.kind = "env_search_path";
  result.severity = Severity::required;
  result.status = CheckStatus::error;
  return result;
}

// The version the interpreter reported against the one the files were read
// for: another Python reads other site dirs, so nothing read from files
// holds (a bin/python named python3.10 that is another Python).
std::optional<CheckResult> version_agreement(const EnvFactsView& facts) {
  const std::string running = facts.interpreter_version();
  const std::string& read_for = facts.python_version();
  if (running.empty() || read_for.empty() ||
      common::python_major_minor(running) == common::python_major_minor(read_for)) {
    return std::nullopt;
  }
  CheckResult result = disagreement_result();
  result.actual = {{"interpreter", running}, {"files", read_for}};
  result.diagnosis = Diagnosis{
      "facts_disagree",
      "the interpreter is Python " + running + "; the env's files were read for Python " +
          read_for + ": checks read from files judged another Python's packages",
      {{"interpreter_python", running},
       {"files_python", read_for},
       {"python", facts.facts().env.python.string()}},
      "the env's interpreter is not the Python its name and records say: recreate the env, or "
      "report it with the env's facts (envcontractd facts --json)"};
  return result;
}

}  // namespace

std::optional<CheckResult> search_path_agreement(const EnvFactsView& facts) {
  const auto& module_files = facts.files().module_files;
  const std::string stdlib = facts.files().search_path.stdlib.string();
  Json disagreements = Json::array();
  Json interpreter_path = nullptr;
  std::set<std::string> compared;
  static const std::vector<facts::StageResult> none;
  const auto& stages = facts.has_dynamic_facts() ? facts.facts().dynamic->stages : none;
  for (const auto& stage : stages) {
    // The static search path is the activated environment's: only imports
    // made under it compare.
    if (stage.activation != facts::Activation::activated) {
      continue;
    }
    for (const auto& record : stage.records) {
      if (record.type == "search_path" && interpreter_path.is_null()) {
        interpreter_path = record.entries;
      }
      const std::string imported = record.realpath.value_or("");
      const std::string module = record.module.substr(0, record.module.find('.'));
      if (record.type != "import" || imported.empty() || module.empty() ||
          !compared.insert(module).second) {
        continue;
      }
      const auto located = module_files.find(module);
      const std::string expected = located ? located->real : "";
      // Static facts index the standard library too; when they do not know
      // where it is (a base they could not find), a module from it is not
      // held against the env: the missing base is noted in the facts.
      const bool agrees = !expected.empty() ? within(imported, expected)
                                            : stdlib.empty() || in_stdlib(imported, stdlib);
      if (agrees) {
        continue;
      }
      disagreements.push_back({{"module", module},
                               {"interpreter", imported},
                               {"files", expected.empty() ? Json(nullptr) : Json(expected)},
                               {"activation", to_string(stage.activation)}});
    }
  }
  if (auto versions = version_agreement(facts)) {
    return versions;
  }
  if (disagreements.empty()) {
    return std::nullopt;
  }
  const Json& first = disagreements.front();
  const std::string module = first["module"].get<std::string>();
  const std::string files = first["files"].is_string() ? first["files"].get<std::string>() : "";
  CheckResult result = disagreement_result();
  result.actual = disagreements;
  result.diagnosis = Diagnosis{
      "facts_disagree",
      "the interpreter imports " + module + " from " + first["interpreter"].get<std::string>() +
          (files.empty() ? ", where the env's files do not lead"
                         : "; the env's files say " + files) +
          (disagreements.size() > 1
               ? "; " + std::to_string(disagreements.size() - 1) + " more listed"
               : "") +
          ": checks read from files may have judged another copy",
      {{"disagreements", disagreements},
       {"interpreter_sys_path", interpreter_path},
       {"static_search_path", to_json(facts.files().search_path)}},
      "look for what moves sys.path outside the files the agent reads: a sitecustomize or "
      "usercustomize module, a .pth file that runs code, PYTHONPATH set by a login script; "
      "if none explains it, report it with the env's facts (envcontractd facts --json)"};
  return result;
}

}  // namespace envcontract::contracts
