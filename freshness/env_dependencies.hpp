#pragma once

#include <filesystem>
#include <vector>

#include "facts/host.hpp"
#include "process/read_dependencies.hpp"

namespace envcontract::freshness {

// What an env's facts name that their reading depended on beyond the paths
// its readers noted: its prefix, the search path (site dirs, the standard
// library, PYTHONPATH and .pth entries, editable source trees), the
// directories of PATH and LD_LIBRARY_PATH, its activation scripts, the
// directories the contract's path patterns look in, and the host files
// every env's facts read (the loader's cache, users and groups).
void add_env_dependencies(const facts::EnvFacts& env,
                          const std::vector<std::filesystem::path>& activation_inputs,
                          process::ReadDependencies& into);

}  // namespace envcontract::freshness
