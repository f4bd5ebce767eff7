#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "facts/env.hpp"

namespace envcontract::discovery {

// A container whose envs the agent scans as a target of their own: its
// files are read under `root` on the agent's host, and its envs' activation
// and probes run inside it through `exec` (discovery/exec_prefix.hpp), so the
// verdict is about the container's libraries, devices and kernel view, not
// the host's. Configured in the agent's YAML (docs/containers.md).
struct ContainerTarget {
  std::string name;
  // The container's root filesystem as the agent names it: a configured
  // rootfs, or the merged directory its runtime reports.
  std::filesystem::path root;
  // Where its envs are looked for, as the container names them.
  std::vector<std::filesystem::path> env_roots = {"/"};
  facts::ExecPrefix exec;
  // Its image reference and where it came from ("configured", "docker
  // inspect", the command that printed it), or why it is unknown.
  std::string image;
  std::string image_source;
  std::string image_problem;
  // Why the container cannot be scanned (not running, not found): its envs
  // are then not looked for, and the report says so.
  std::string problem;
};

}  // namespace envcontract::discovery
