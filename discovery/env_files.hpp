#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "facts/env.hpp"

// Where an env keeps the files that decide how it runs: what its activation
// reads, where its own packages live. Asked by discovery (is any of them
// writable by others?) and by probes (activation, the search path, and what
// an env's read depended on, which probes hands to freshness).
namespace envcontract::discovery {

// The files activation reads or runs: activate.d scripts, env_vars files,
// conda-meta/state, bin/activate (those that may exist; absent ones too).
std::vector<std::filesystem::path> activation_inputs(const facts::PythonEnv& env);

// The env's own site-packages directories (lib/pythonX.Y/site-packages), the
// interpreter's version first, the others in name order.
std::vector<std::filesystem::path> find_site_packages(const facts::PythonEnv& env);

// The entries of `dir` whose names end in `extension`, sorted by name (the
// order conda runs activate.d scripts and reads env_vars.d files in).
std::vector<std::filesystem::path> sorted_files(const std::filesystem::path& dir,
                                                const std::string& extension);

}  // namespace envcontract::discovery
