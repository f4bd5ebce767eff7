#include "probes/import_safety.hpp"

#include <algorithm>

#include "probes/env_safety.hpp"
#include "probes/run_as.hpp"

namespace envcontract::probes {

void refuse_unsafe_imports(PythonEnv& env, const SearchPath& search_path) {
  auto paths = search_path.import_dirs();
  for (const auto& module : search_path.editable) {
    paths.push_back(module.finder);  // imported by its .pth file
  }
  for (auto& unsafe : find_unsafe_import_paths(paths, search_path.site_dirs(), env.run_as)) {
    const bool known =
        std::any_of(env.unsafe.begin(), env.unsafe.end(),
                    [&](const UnsafePath& seen) { return seen.path == unsafe.path; });
    if (!known) {
      env.unsafe.push_back(std::move(unsafe));
    }
  }
}

void refuse_unsafe_imports(PythonEnv& env, const ActivatedEnvironment& activation) {
  ReadingAs reading(env.run_as);
  if (!reading.ok()) {
    return;  // nothing runs: code_refusal already names the missing user
  }
  const auto& environment =
      activation.activated.empty() ? bare_environment(env) : activation.activated;
  refuse_unsafe_imports(env, compute_search_path(env, environment));
}

}  // namespace envcontract::probes
