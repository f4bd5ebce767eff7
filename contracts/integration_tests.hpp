#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "contracts/contract.hpp"
#include "contracts/yaml_document.hpp"

namespace envcontract::contracts {

// Phases whose entries are preflight checks of the environment, as opposed to
// test suites; only these become checks when a platform config is loaded.
bool is_preflight_phase(const std::string& phase);

// One entry of a platform config's `integration_tests` list. Reports problems.
std::optional<IntegrationEntry> parse_integration_entry(const YAML::Node& entry, ParseContext& ctx);

// The entry of the platform config at `config_path` whose id or name is
// `selector`. Problems with that file are reported against it; an unknown
// selector is reported at `selector_node` with the names that exist.
std::optional<IntegrationEntry> find_integration_entry(const std::filesystem::path& config_path,
                                                       const std::string& selector,
                                                       const YAML::Node& selector_node,
                                                       ParseContext& ctx);

}  // namespace envcontract::contracts
