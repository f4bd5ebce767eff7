#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "facts/static_facts.hpp"
#include "probes/distributions.hpp"
#include "probes/python_env.hpp"
#include "probes/search_path.hpp"

namespace envcontract::probes {

using facts::to_json;

using facts::TorchFacts;

using facts::TritonFacts;

using facts::ForeignSite;
using facts::ShadowedModule;

using facts::StaticFacts;

// The env's own site-packages directories (lib/pythonX.Y/site-packages), the
// interpreter's version first.
std::vector<std::filesystem::path> find_site_packages(const PythonEnv& env);

// Reads the facts of `env` from its files, along the search path its
// interpreter has under `environment` (the activated one: PYTHONPATH, HOME).
// Never runs env code; a missing or malformed file becomes a recorded
// problem, not an exception.
StaticFacts gather_static_facts(const PythonEnv& env, const facts::Environment& environment);
// The same under the env's bare environment (no activation).
StaticFacts gather_static_facts(const PythonEnv& env);

}  // namespace envcontract::probes
