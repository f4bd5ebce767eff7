#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "contracts/check_parser.hpp"

// The two contract forms in use before ours, translated into native checks
// through the same CheckParser, so each is judged exactly as its native twin.
namespace envcontract::contracts {

// environment_check: {torch_version_base, cuda_version, flagos_devices: {at_least}, triton_backend}
void translate_environment_check(const YAML::Node& section, CheckParser& parser);

// torch_contract: {base_version, local_version, cuda: none|required|any, forbidden_torch_paths}
void translate_torch_contract(const YAML::Node& section, CheckParser& parser);

// integration_tests: [{name, command, id?, phase?, ...}]: `phase: preflight`
// entries become integration_test checks, run with `runner_environment` (the
// config's integration_environment); the others are kept, said in a note.
// `config_name` is the file they live in.
// `run_tests` (by id, name or check id) run although they are no preflight.
void translate_integration_tests(const YAML::Node& section, const std::string& config_name,
                                 const NamedList<std::string>& runner_environment,
                                 const std::vector<std::string>& run_tests, CheckParser& parser);

}  // namespace envcontract::contracts
