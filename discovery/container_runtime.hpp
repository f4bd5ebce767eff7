#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "discovery/container_target.hpp"

// From a container target's configuration to what a scan needs: its root,
// exec prefix and image reference, asked of its runtime at each scan (a
// container restarts with a new PID and root). A container that cannot be
// reached is a target with a problem, never an error of the scan.
namespace envcontract::discovery {

// How a container target is configured (the agent's YAML, docs/containers.md).
struct ContainerConfig {
  enum class Exec { docker, podman, nsenter, argv };
  std::string name;
  Exec exec = Exec::docker;
  std::vector<std::string> argv;    // Exec::argv: the prefix as given
  bool argv_switches_user = false;  // Exec::argv: it runs as the agent, switching to {uid}/{gid}
  std::string container;            // docker, podman, nsenter: the container's name or id
  pid_t pid = 0;                    // nsenter: a process of the container, instead of `container`
  std::string runtime = "docker";   // nsenter: the runtime that finds `container`
  std::filesystem::path rootfs;     // where its files are read; else the runtime's merged dir
  std::vector<std::filesystem::path> env_roots = {"/"};
  std::string image;          // its image reference, when configured
  std::string image_command;  // a host command that prints it (/bin/sh, 10 s)
};

// Containers found in the runtime's list at each scan (optionally only
// those with a label), each scanned as a target named after the container.
struct ContainerDiscovery {
  std::string runtime = "docker";  // docker or podman
  std::string label;               // "key" or "key=value"; "" lists every running container
  // The runtime's own exec (the command confined as the container is), or
  // nsenter (docs/containers.md says what that leaves behind).
  ContainerConfig::Exec exec = ContainerConfig::Exec::docker;
  std::vector<std::filesystem::path> env_roots = {"/"};
};

// The argv that lists the running containers `discovery` asks for, one name a line.
std::vector<std::string> list_argv(const std::string& client, const ContainerDiscovery& discovery);

// The names in a listing (one a line): at most `limit`, each a name as the
// runtimes allow them; the rest are left out with a problem.
struct ContainerListing {
  std::vector<std::string> names;
  std::string problem;
};
ContainerListing parse_container_list(const std::string& text, std::size_t limit = 256);

// Asks the runtime for the list, and returns a configuration for each
// container it names that `configured` does not already name.
ContainerListing list_containers(const ContainerDiscovery& discovery);
std::vector<ContainerConfig> discovered_configs(const ContainerDiscovery& discovery,
                                                const ContainerListing& listing,
                                                const std::vector<ContainerConfig>& configured);

// What `docker inspect` or `podman inspect` says of one container.
struct InspectedContainer {
  std::string id;
  std::string name;
  bool running = false;
  std::string status;  // "running", "exited", "restarting", ...
  pid_t pid = 0;
  std::string image;       // the reference it was started from (Config.Image)
  std::string image_id;    // sha256:...
  std::string merged_dir;  // GraphDriver.Data.MergedDir (overlay), or ""
};

// Parses an inspect answer (a JSON array of one container, as docker and
// podman print it); an error names what is missing.
common::Result<InspectedContainer> parse_inspect_output(const std::string& text);

// The argv that inspects `container` with `client`.
std::vector<std::string> inspect_argv(const std::string& client, const std::string& container);

// A command's absolute path, looked for in the system's bin directories
// (never in an env's PATH), or "".
std::string find_system_command(const std::string& name);

// Asks the runtime (as the agent, 10 s at most) and builds the target.
ContainerTarget resolve_container(const ContainerConfig& config);

}  // namespace envcontract::discovery
