#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "discovery/env_safety.hpp"
#include "facts/env.hpp"
#include "process/process_runner.hpp"
#include "process/run_as.hpp"
#include "process/small_files.hpp"

namespace envcontract::discovery {

using facts::to_json;
using facts::to_string;

using Json = nlohmann::ordered_json;

using facts::EnvKind;

using facts::PythonEnv;

using facts::code_refusal;
using facts::CodeRefusal;

// The credentials to hand the process runner: unset when the agent keeps its own.
std::optional<process::Credentials> credentials_of(const PythonEnv& env);

using facts::DiscoveryProblem;

struct Discovery {
  std::vector<PythonEnv> envs;  // sorted by prefix
  std::vector<DiscoveryProblem> problems;
};

Json to_json(const Discovery& discovery);

}  // namespace envcontract::discovery
