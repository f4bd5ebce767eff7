#include "probes/import_safety.hpp"

#include <algorithm>

#include "discovery/env_safety.hpp"
#include "process/run_as.hpp"

namespace envcontract::probes {

void refuse_unsafe_imports(PythonEnv& env, const SearchPath& search_path) {
  env.imports_checked = true;
  if (!search_path.incomplete.empty()) {
    env.imports_unchecked =
        "what its interpreter imports could not all be checked: " + search_path.incomplete;
  }
  auto paths = search_path.import_dirs();
  paths.insert(paths.end(), search_path.unlisted.begin(), search_path.unlisted.end());
  for (const auto& module : search_path.editable) {
    paths.push_back(module.finder);  // imported by its .pth file
  }
  for (auto& unsafe :
       discovery::find_unsafe_import_paths(paths, search_path.site_dirs(), env.run_as,
                                           discovery::owners_are_facts(env), env.system_root)) {
    const bool known =
        std::any_of(env.unsafe.begin(), env.unsafe.end(),
                    [&](const facts::UnsafePath& seen) { return seen.path == unsafe.path; });
    if (!known) {
      env.unsafe.push_back(std::move(unsafe));
    }
  }
}

void refuse_unsafe_imports(PythonEnv& env, const ActivatedEnvironment& activation) {
  // Fails closed: whatever stops the check stops the env's code too.
  const auto unchecked = [&](const std::string& why) {
    env.imports_checked = true;
    env.imports_unchecked = "what its interpreter imports could not be checked: " + why;
  };
  process::ReadingAs reading(env.reader());
  if (!reading.ok()) {
    unchecked("its files cannot be read as " + env.reader().who());
    return;
  }
  try {
    const auto& environment =
        activation.activated.empty() ? bare_environment(env) : activation.activated;
    refuse_unsafe_imports(env, compute_search_path(env, environment));
  } catch (const std::exception& e) {
    unchecked(e.what());
  }
}

}  // namespace envcontract::probes
