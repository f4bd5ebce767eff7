#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "contracts/contract.hpp"
#include "contracts/yaml_document.hpp"

namespace envcontract::contracts {

// The values an entry's `phase` and `failure_policy` take in the FlagOS
// runner (`.github/scripts/run_integration_tests.py`, docs/contracts.md).
// Only entries written `phase: preflight` become checks when a platform
// config is loaded; the others are kept, and run when selected.
inline const std::vector<std::string> k_integration_phases = {"preflight", "functional"};
inline const std::vector<std::string> k_failure_policies = {"fail-fast", "continue-after-failure"};

bool is_preflight_phase(const std::string& phase);

// The phase the CI runner gives an entry: its `phase`, else one read from
// its name ("check ", "availability", "isolated", "environment" make a
// preflight; anything else is functional).
std::string runner_phase(const IntegrationEntry& entry);

// The failure policy the CI runner applies: the entry's own, else
// `continue-after-failure` for a functional entry and `fail-fast` for a
// preflight. After a fail-fast entry fails, the runner runs no later entry.
std::string runner_failure_policy(const IntegrationEntry& entry);

// An entry's check id: its `id`, else its name made a slug ("Check device
// availability" -> "check-device-availability", as the runner makes its
// report ids), so that a waiver or a link keeps naming the same test when
// entries are inserted before it. An id the runner accepts but a check id
// cannot hold ("check device") is made a slug the same way.
std::string integration_check_id(const IntegrationEntry& entry);

// One entry of a platform config's `integration_tests` list, with the
// config's `integration_environment` (read by read_runner_environment).
// Reports problems.
std::optional<IntegrationEntry> parse_integration_entry(
    const YAML::Node& entry, const NamedList<std::string>& runner_environment, ParseContext& ctx);

// A map of variable names to string values (`integration_environment`, an
// entry's `environment`), in the file's order. Reports problems.
NamedList<std::string> read_environment_map(const YAML::Node& node, const std::string& what,
                                            ParseContext& ctx);

// The words of `command` that look like paths inside the repository the
// config belongs to (`tests/integration/ops/`, `./run.sh`,
// `.github/scripts/x.sh`): relative, not options, variables or URLs. Such a
// command runs only in a checkout of that repository.
std::vector<std::string> repository_paths(const std::string& command);

// The entry of the platform config at `config_path` whose id or name is
// `selector`. Problems with that file are reported against it; an unknown
// selector is reported at `selector_node` with the names that exist.
std::optional<IntegrationEntry> find_integration_entry(const std::filesystem::path& config_path,
                                                       const std::string& selector,
                                                       const YAML::Node& selector_node,
                                                       ParseContext& ctx);

}  // namespace envcontract::contracts
