#include "contracts/search_path_agreement.hpp"

#include <algorithm>
#include <set>

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

}  // namespace

std::optional<CheckResult> search_path_agreement(const EnvFactsView& facts) {
  const Json& static_facts = object_field(facts.raw(), "static");
  const Json& module_paths = object_field(static_facts, "module_paths");
  const Json& search_path = object_field(static_facts, "search_path");
  const std::string stdlib = string_field(search_path, "stdlib");
  Json disagreements = Json::array();
  Json interpreter_path = nullptr;
  std::set<std::string> compared;
  for (const auto& stage : array_field(object_field(facts.raw(), "dynamic"), "stages")) {
    // The static search path is the activated environment's: only imports
    // made under it compare.
    if (string_field(stage, "activation") != "activated") {
      continue;
    }
    for (const auto& record : array_field(stage, "records")) {
      if (string_field(record, "type") == "search_path" && interpreter_path.is_null()) {
        interpreter_path = array_field(record, "entries");
      }
      const std::string imported = string_field(record, "realpath");
      const std::string name = string_field(record, "module");
      const std::string module = name.substr(0, name.find('.'));
      if (string_field(record, "type") != "import" || imported.empty() || module.empty() ||
          !compared.insert(module).second) {
        continue;
      }
      const std::string expected = string_field(module_paths, module.c_str());
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
                               {"activation", string_field(stage, "activation")}});
    }
  }
  if (disagreements.empty()) {
    return std::nullopt;
  }
  const Json& first = disagreements.front();
  const std::string module = string_field(first, "module");
  const std::string files = string_field(first, "files");
  CheckResult result;
  result.id = "env:search-path";
  result.kind = "env_search_path";
  result.severity = Severity::required;
  result.status = CheckStatus::error;
  result.actual = disagreements;
  result.diagnosis = Diagnosis{
      "facts_disagree",
      "the interpreter imports " + module + " from " + string_field(first, "interpreter") +
          (files.empty() ? ", where the env's files do not lead"
                         : "; the env's files say " + files) +
          (disagreements.size() > 1
               ? "; " + std::to_string(disagreements.size() - 1) + " more listed"
               : "") +
          ": checks read from files may have judged another copy",
      {{"disagreements", disagreements},
       {"interpreter_sys_path", interpreter_path},
       {"static_search_path", search_path}},
      "look for what moves sys.path outside the files the agent reads: a sitecustomize or "
      "usercustomize module, a .pth file that runs code, PYTHONPATH set by a login script; "
      "if none explains it, report it with the env's facts (envcontractd facts --json)"};
  return result;
}

}  // namespace envcontract::contracts
