#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "contracts/mapping_reader.hpp"
#include "discovery/container_runtime.hpp"

namespace envcontract::daemon {

// Container targets as configured: named ones, and those found in the
// runtime's list at each scan.
struct ContainerSettings {
  std::vector<discovery::ContainerConfig> containers;
  std::optional<discovery::ContainerDiscovery> discovery;
};

// The `containers:` list and `container_discovery:` mapping of the agent's
// YAML (docs/containers.md) into `settings` (each replacing what was there);
// every problem is reported through the reader's context, at its line and
// column.
void read_containers(contracts::MappingReader& top, ContainerSettings& settings);

// A file holding only those two keys, for the one-shot verbs (`scan
// --containers FILE`). Returns every problem as "file:line:column: error:
// ..." lines, or "" when it is valid.
std::string read_containers_file(const std::filesystem::path& path, ContainerSettings& settings);

}  // namespace envcontract::daemon
