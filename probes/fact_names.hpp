#pragma once

#include <nlohmann/json.hpp>

#include "facts/env.hpp"

// The plain types of `facts` that every probe names, named here once for
// the probes namespace (the envs are discovery's: discovery/python_env.hpp).
namespace envcontract::probes {

using facts::to_json;
using facts::to_string;

using Json = nlohmann::ordered_json;

using facts::EnvKind;
using facts::PythonEnv;

}  // namespace envcontract::probes
