#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "discovery/env_files.hpp"
#include "discovery/python_env.hpp"
#include "facts/static_facts.hpp"
#include "probes/distributions.hpp"
#include "probes/fact_names.hpp"
#include "probes/search_path.hpp"

namespace envcontract::probes {

using facts::to_json;

using facts::TorchFacts;

using facts::TritonFacts;

using facts::ForeignSite;
using facts::ShadowedModule;

using facts::StaticFacts;

// Reads the facts of `env` from its files, along the search path its
// interpreter has under `environment` (the activated one: PYTHONPATH, HOME).
// Never runs env code; a missing or malformed file becomes a recorded
// problem, not an exception.
StaticFacts gather_static_facts(const PythonEnv& env, const facts::Environment& environment);
// The same under the env's bare environment (no activation).
StaticFacts gather_static_facts(const PythonEnv& env);

}  // namespace envcontract::probes
