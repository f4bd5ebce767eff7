#include "daemon/container_config.hpp"

#include <algorithm>
#include <set>

#include "contracts/values.hpp"

namespace envcontract::daemon {
namespace {

using contracts::MappingReader;
using contracts::Need;
using discovery::ContainerConfig;

bool is_target_name(const std::string& name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

// `env_roots`: paths as the container names them, so absolute.
void read_env_roots(MappingReader& reader, std::vector<std::filesystem::path>& env_roots) {
  const auto roots = reader.string_list("env_roots");
  if (!roots) {
    return;
  }
  env_roots.assign(roots->begin(), roots->end());
  for (const auto& root : *roots) {
    if (!root.starts_with("/")) {
      reader.ctx().error(
          *reader.get("env_roots"),
          "'env_roots' are absolute paths as the container names them, got '" + root + "'");
    }
  }
}

// Reads `exec` into `config`; false when it is missing or not understood
// (an error said so).
bool read_exec(MappingReader& reader, ContainerConfig& config) {
  const auto node = reader.get("exec", Need::required);
  if (!node) {
    return false;
  }
  if (node->IsScalar()) {
    const std::string preset = node->Scalar();
    if (preset == "docker") {
      config.exec = ContainerConfig::Exec::docker;
    } else if (preset == "podman") {
      config.exec = ContainerConfig::Exec::podman;
    } else if (preset == "nsenter") {
      config.exec = ContainerConfig::Exec::nsenter;
    } else {
      reader.ctx().error(*node,
                         "'exec' is docker, podman, nsenter or a command line as a list "
                         "(such as [/usr/bin/bwrap, --ro-bind, /srv/rootfs, /]), got '" +
                             preset + "'");
      return false;
    }
    return true;
  }
  const auto argv = contracts::read_string_list(*node, "'exec'", reader.ctx());
  if (!argv) {
    return false;
  }
  if (argv->empty() || !argv->front().starts_with("/")) {
    reader.ctx().error(*node,
                       "'exec' as a list is a command line whose first word is an absolute "
                       "path (no shell runs it)");
    return false;
  }
  config.exec = ContainerConfig::Exec::argv;
  config.argv = *argv;
  return true;
}

std::optional<ContainerConfig> read_container(const YAML::Node& item, contracts::ParseContext& ctx,
                                              std::set<std::string>& names) {
  MappingReader reader(item, "a container", ctx);
  if (!reader.is_mapping()) {
    return std::nullopt;
  }
  ContainerConfig config;
  using Exec = ContainerConfig::Exec;
  if (const auto name = reader.string("name", Need::required)) {
    if (!is_target_name(*name)) {
      ctx.error(
          *reader.get("name"),
          "a container's 'name' is 1-64 letters, digits, '-', '_' or '.', got '" + *name + "'");
    } else if (!names.insert(*name).second) {
      ctx.error(*reader.get("name"), "two containers are named '" + *name + "'");
    }
    config.name = *name;
  }
  // What depends on the exec is judged only once it is understood: a
  // mistaken one is one error, not also a default docker container's.
  const bool exec_read = read_exec(reader, config);
  if (const auto container = reader.string("container")) {
    config.container = *container;
  }
  if (const auto pid = reader.integer("pid", Need::optional, 1, 4194304)) {
    config.pid = static_cast<pid_t>(*pid);
    if (exec_read && config.exec != Exec::nsenter) {
      ctx.error(*reader.get("pid"), "'pid' is for exec: nsenter");
    }
  }
  if (const auto runtime = reader.string("runtime")) {
    if (*runtime != "docker" && *runtime != "podman") {
      ctx.error(*reader.get("runtime"), "'runtime' is docker or podman, got '" + *runtime + "'");
    }
    config.runtime = *runtime;
  }
  if (const auto rootfs = reader.string("rootfs")) {
    if (!rootfs->starts_with("/")) {
      ctx.error(*reader.get("rootfs"), "'rootfs' must be an absolute directory");
    }
    config.rootfs = *rootfs;
  }
  read_env_roots(reader, config.env_roots);
  if (const auto switches = reader.boolean("exec_switches_user")) {
    const bool names_user = std::any_of(
        config.argv.begin(), config.argv.end(),
        [](const std::string& word) { return word.find("{uid}") != std::string::npos; });
    if (!exec_read) {
      // Judged once the exec is.
    } else if (config.exec != Exec::argv) {
      ctx.error(*reader.get("exec_switches_user"),
                "'exec_switches_user' is for an exec command line");
    } else if (*switches && !names_user) {
      ctx.error(*reader.get("exec_switches_user"),
                "'exec_switches_user: true' needs the command line to name {uid} (and {gid}), "
                "the env's user it switches to");
    }
    config.argv_switches_user = *switches;
  }

  const auto image = reader.string("image");
  const auto image_command = reader.string("image_command");
  if (image && image_command) {
    ctx.error(*reader.get("image_command"), "give 'image' or 'image_command', not both");
  }
  config.image = image.value_or("");
  config.image_command = image_command.value_or("");
  reader.reject_unknown_keys();

  if (!exec_read) {
    return config;
  }
  const bool has_container = !config.container.empty();
  if ((config.exec == Exec::docker || config.exec == Exec::podman) && !has_container) {
    ctx.error(item, "container '" + config.name +
                        "': exec docker and podman need 'container' (its name or id)");
  }
  if (config.exec == Exec::nsenter && !has_container && config.pid == 0) {
    ctx.error(item, "container '" + config.name +
                        "': exec nsenter needs 'container' (found through 'runtime') or 'pid'");
  }
  if (config.exec == Exec::argv && config.rootfs.empty()) {
    ctx.error(item, "container '" + config.name +
                        "': an exec command line needs 'rootfs', where the agent reads the "
                        "container's files");
  }
  return config;
}

std::string diagnostics_text(const contracts::Diagnostics& diagnostics) {
  std::string errors;
  for (const auto& diagnostic : diagnostics.sorted()) {
    errors += diagnostic.to_string() + "\n";
  }
  return diagnostics.has_errors() ? errors : "";
}

void read_discovery(MappingReader& top, ContainerSettings& settings) {
  const auto node = top.get("container_discovery");
  if (!node) {
    return;
  }
  MappingReader reader(*node, "'container_discovery'", top.ctx());
  if (!reader.is_mapping()) {
    return;  // reported by the reader
  }
  discovery::ContainerDiscovery discovery;
  if (const auto runtime = reader.string("runtime", Need::required)) {
    if (*runtime != "docker" && *runtime != "podman") {
      top.ctx().error(*reader.get("runtime"),
                      "'runtime' is docker or podman, got '" + *runtime + "'");
    }
    discovery.runtime = *runtime;
  }
  discovery.label = reader.string("label").value_or("");
  if (const auto exec = reader.string("exec")) {
    if (*exec == "nsenter") {
      discovery.exec = ContainerConfig::Exec::nsenter;
    } else if (*exec == discovery.runtime) {
      discovery.exec =
          *exec == "podman" ? ContainerConfig::Exec::podman : ContainerConfig::Exec::docker;
    } else {
      top.ctx().error(*reader.get("exec"),
                      "'exec' of found containers is nsenter or their "
                      "runtime (" +
                          discovery.runtime + "), got '" + *exec + "'");
    }
  }
  read_env_roots(reader, discovery.env_roots);

  reader.reject_unknown_keys();
  settings.discovery = std::move(discovery);
}

}  // namespace

void read_containers(MappingReader& top, ContainerSettings& settings) {
  read_discovery(top, settings);
  const auto node = top.get("containers");
  if (!node) {
    return;
  }
  if (!node->IsSequence()) {
    top.ctx().error(*node, "'containers' must be a list of {name, exec, ...}, got " +
                               contracts::describe_node_type(*node));
    return;
  }
  settings.containers.clear();
  std::set<std::string> names;
  for (const auto& item : *node) {
    if (auto config = read_container(item, top.ctx(), names)) {
      settings.containers.push_back(std::move(*config));
    }
  }
}

std::string read_containers_file(const std::filesystem::path& path, ContainerSettings& settings) {
  contracts::Diagnostics diagnostics;
  contracts::ParseContext ctx(path.string(), diagnostics);
  const auto document = contracts::load_yaml_file(path, ctx);
  if (document && !document->IsNull()) {
    MappingReader top(*document, "a containers file (docs/containers.md)", ctx);
    if (top.is_mapping()) {
      read_containers(top, settings);
      top.reject_unknown_keys();
    }
  } else if (document) {
    ctx.error(*document, "the file is empty: give a 'containers:' list or 'container_discovery:'");
  }
  return diagnostics_text(diagnostics);
}

}  // namespace envcontract::daemon
