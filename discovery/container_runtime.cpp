#include "discovery/container_runtime.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "common/json_from_outside.hpp"
#include "discovery/exec_prefix.hpp"
#include "discovery/image_tag.hpp"
#include "process/process_runner.hpp"
#include "process/scratch_directory.hpp"
#include "process/small_files.hpp"
#include "process/system_root.hpp"

namespace envcontract::discovery {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

constexpr std::size_t k_max_inspect_bytes = 4 * 1024 * 1024;

// A string member of an object, "" when absent or of another type.
std::string member(const Json& object, const char* key) {
  if (!object.is_object()) {
    return "";
  }
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

const Json& object_member(const Json& object, const char* key) {
  static const Json none = Json::object();
  if (!object.is_object()) {
    return none;
  }
  const auto it = object.find(key);
  return it != object.end() && it->is_object() ? *it : none;
}

// Points the exec's scratch directories at the root the container's
// processes see (/proc/PID/root), when it is another than the agent's own:
// the process of a container that has since ended may have left its PID to
// a process of the host. The process's start time is kept, so that a PID
// reused later is not entered either (ScratchDirectory checks it).
void use_process_root(facts::ExecPrefix& exec, pid_t pid) {
  const std::uint64_t started = process::process_start_time(pid);
  const std::string root = "/proc/" + std::to_string(pid) + "/root";
  struct stat theirs {};
  struct stat ours {};
  if (started == 0 || ::stat(root.c_str(), &theirs) != 0 || ::stat("/", &ours) != 0 ||
      (theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino) ||
      process::process_start_time(pid) != started) {
    return;
  }
  exec.root_process = pid;
  exec.root_process_start = started;
}

bool same_file(const fs::path& one, const fs::path& other) {
  struct stat first {};
  struct stat second {};
  return ::stat(one.c_str(), &first) == 0 && ::stat(other.c_str(), &second) == 0 &&
         first.st_dev == second.st_dev && first.st_ino == second.st_ino;
}

// Where a container's files are read: /proc/PID/root, when its process
// stands in a mount namespace of its own (realpath cannot name that root, so
// it is resolved in it: process/system_root.hpp); the directory itself when the
// process only changed its root in the agent's namespace, where the kernel
// names paths from the host's "/".
fs::path process_root_of(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::error_code error;
  const auto theirs = fs::read_symlink(proc + "/ns/mnt", error);
  const auto ours = fs::read_symlink("/proc/self/ns/mnt", error);
  if (!error && !theirs.empty() && theirs == ours) {
    const auto named = fs::read_symlink(proc + "/root", error);
    if (!error && named.is_absolute()) {
      return named;
    }
  }
  return proc + "/root";
}

// Why the agent may not enter `pid`'s mount namespace, as nsenter will
// (setns(2) needs CAP_SYS_ADMIN and CAP_SYS_CHROOT, and a seccomp filter
// such as systemd's RestrictNamespaces= refuses it), or "": tried for real,
// in a child that only calls setns and exits.
std::string cannot_enter(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/ns/mnt";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return path + ": " + std::strerror(errno);
  }
  const pid_t child = ::fork();
  if (child == 0) {
    ::_exit(::setns(fd, CLONE_NEWNS) == 0 ? 0 : (errno > 0 && errno < 256 ? errno : EPERM));
  }
  const int fork_error = errno;
  ::close(fd);
  if (child < 0) {
    return std::string("fork: ") + std::strerror(fork_error);
  }
  int status = 0;
  pid_t waited = 0;
  while ((waited = ::waitpid(child, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited == child && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    return "";
  }
  const int error = WIFEXITED(status) ? WEXITSTATUS(status) : EPERM;
  return "the agent may not enter its namespaces (setns: " + std::string(std::strerror(error)) +
         "): nsenter needs CAP_SYS_ADMIN and CAP_SYS_CHROOT and no seccomp filter against setns, "
         "which the shipped unit forbids (CapabilityBoundingSet, RestrictNamespaces=yes); relax "
         "it as docs/containers.md shows, or use exec: docker or podman";
}

std::string first_line(const std::string& text) {
  return process::trim(text.substr(0, text.find('\n')));
}

const char* runtime_of(const ContainerConfig& config) {
  switch (config.exec) {
    case ContainerConfig::Exec::docker:
      return "docker";
    case ContainerConfig::Exec::podman:
      return "podman";
    case ContainerConfig::Exec::nsenter:
    case ContainerConfig::Exec::argv:
      break;
  }
  return config.runtime == "podman" ? "podman" : "docker";
}

// Whether the runtime has to be asked: for the PID, the root or the image.
bool needs_runtime(const ContainerConfig& config) {
  using Exec = ContainerConfig::Exec;
  if (config.exec == Exec::argv) {
    return false;
  }
  if (config.exec == Exec::nsenter && config.pid > 0) {
    return false;
  }
  return !config.container.empty();
}

// Runs the runtime's client as the agent, with a fixed environment, 10 s at
// most; its stdout, or what went wrong (`what` names the command).
common::Result<std::string> ask_runtime(const std::vector<std::string>& argv,
                                        const std::string& what) {
  process::ProcessSpec spec;
  spec.argv = argv;
  spec.environment = {{"PATH", process::k_system_path}, {"LANG", "C.UTF-8"}};
  for (const char* name : {"DOCKER_HOST", "CONTAINER_HOST"}) {
    if (const char* value = std::getenv(name)) {
      spec.environment[name] = value;
    }
  }
  process::ProcessLimits limits;
  limits.timeout = std::chrono::seconds(10);
  limits.max_output_bytes = k_max_inspect_bytes;
  const auto result = process::run_process(spec, limits);
  if (!result.succeeded()) {
    const std::string said = first_line(result.err);
    return common::Error{what + " " + result.describe() + (said.empty() ? "" : ": " + said)};
  }
  if (result.out_bytes > k_max_inspect_bytes) {
    return common::Error{what + " answered more than 4 MB"};
  }
  return result.out;
}

common::Result<InspectedContainer> inspect(const std::string& client,
                                           const std::string& container) {
  const auto answer = ask_runtime(inspect_argv(client, container),
                                  fs::path(client).filename().string() + " inspect " + container);
  if (!answer) {
    return common::Error{answer.error()};
  }
  return parse_inspect_output(*answer);
}

// Names as docker and podman allow them.
bool is_container_name(const std::string& name) {
  return !name.empty() && name.size() <= 128 && std::isalnum(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
         });
}

}  // namespace

common::Result<InspectedContainer> parse_inspect_output(const std::string& text) {
  const auto parsed = common::parse_outside_json(text, "the runtime's inspect answer",
                                                 {.max_bytes = k_max_inspect_bytes});
  if (!parsed) {
    return common::Error{parsed.error()};
  }
  const Json& json = parsed.value();
  if (!json.is_array()) {
    return common::Error{"the runtime's inspect answer is not a JSON list"};
  }
  if (json.empty()) {
    return common::Error{"the runtime knows no such container"};
  }
  const Json& found = json.front();
  InspectedContainer container;
  container.id = member(found, "Id");
  container.name = member(found, "Name");
  if (container.name.starts_with("/")) {
    container.name.erase(0, 1);  // docker names a container "/trainer"
  }
  const Json& state = object_member(found, "State");
  container.status = member(state, "Status");
  container.running =
      state.contains("Running") && state["Running"].is_boolean() && state["Running"].get<bool>();
  if (state.contains("Pid") && state["Pid"].is_number_integer()) {
    const auto pid = state["Pid"].get<std::int64_t>();
    container.pid = pid > 0 && pid < (1 << 22) ? static_cast<pid_t>(pid) : 0;
  }
  container.image = member(object_member(found, "Config"), "Image");
  container.image_id = member(found, "Image");
  if (container.image.empty()) {
    container.image = member(found, "ImageName");  // podman
  }
  container.merged_dir =
      member(object_member(object_member(found, "GraphDriver"), "Data"), "MergedDir");
  if (container.id.empty()) {
    return common::Error{"the runtime's inspect answer has no container Id"};
  }
  return container;
}

std::vector<std::string> inspect_argv(const std::string& client, const std::string& container) {
  return {client, "inspect", "--type", "container", "--", container};
}

std::vector<std::string> list_argv(const std::string& client, const ContainerDiscovery& discovery) {
  std::vector<std::string> argv = {client, "ps", "--format", "{{.Names}}"};
  if (!discovery.label.empty()) {
    argv.insert(argv.end(), {"--filter", "label=" + discovery.label});
  }
  return argv;
}

ContainerListing parse_container_list(const std::string& text, std::size_t limit) {
  ContainerListing listing;
  std::size_t refused = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    const std::string name = process::trim(text.substr(start, end - start));
    start = end + 1;
    if (name.empty()) {
      continue;
    }
    if (!is_container_name(name)) {
      ++refused;
    } else if (listing.names.size() < limit) {
      listing.names.push_back(name);
    } else {
      listing.problem = "the runtime lists more than " + std::to_string(limit) +
                        " containers: only the first " + std::to_string(limit) + " are scanned";
    }
  }
  if (refused > 0 && listing.problem.empty()) {
    listing.problem = std::to_string(refused) + " listed name(s) are not container names";
  }
  return listing;
}

ContainerListing list_containers(const ContainerDiscovery& discovery) {
  const std::string client = find_system_command(discovery.runtime);
  if (client.empty()) {
    return {{}, discovery.runtime + " is not installed (looked in the system's bin directories)"};
  }
  const auto answer = ask_runtime(list_argv(client, discovery), discovery.runtime + " ps");
  if (!answer) {
    return {{}, answer.error()};
  }
  return parse_container_list(*answer);
}

std::vector<ContainerConfig> discovered_configs(const ContainerDiscovery& discovery,
                                                const ContainerListing& listing,
                                                const std::vector<ContainerConfig>& configured) {
  std::vector<ContainerConfig> found;
  for (const auto& name : listing.names) {
    const bool named = std::any_of(configured.begin(), configured.end(), [&](const auto& each) {
      return each.name == name || each.container == name;
    });
    if (named) {
      continue;  // its own configuration wins
    }
    ContainerConfig config;
    config.name = name;
    config.exec = discovery.exec;
    if (config.exec == ContainerConfig::Exec::docker ||
        config.exec == ContainerConfig::Exec::podman) {
      // Its exec is its runtime's own.
      config.exec = discovery.runtime == "podman" ? ContainerConfig::Exec::podman
                                                  : ContainerConfig::Exec::docker;
    }
    config.container = name;
    config.runtime = discovery.runtime;
    config.env_roots = discovery.env_roots;
    found.push_back(std::move(config));
  }
  return found;
}

std::string find_system_command(const std::string& name) {
  for (const char* dir :
       {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
    const fs::path candidate = fs::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) {
      return candidate.string();
    }
  }
  return "";
}

namespace {

// Why the container's root cannot be read, or "": a rootfs that is gone
// (a container removed, a path mistyped) holds no env, and a scan that
// found none there must not pass for one that judged them.
std::string unusable_root(const std::filesystem::path& root, bool configured) {
  struct stat info {};
  if (::stat(root.c_str(), &info) != 0) {
    return "its root filesystem " + root.string() + " cannot be read: " + std::strerror(errno) +
           (configured ? " (check 'rootfs' in its configuration)" : "");
  }
  if (!S_ISDIR(info.st_mode)) {
    return "its root filesystem " + root.string() + " is not a directory" +
           (configured ? " (check 'rootfs' in its configuration)" : "");
  }
  return "";
}

}  // namespace

ContainerTarget resolve_container(const ContainerConfig& config) {
  using Exec = ContainerConfig::Exec;
  ContainerTarget target;
  target.name = config.name;
  target.env_roots = config.env_roots;
  target.root = config.rootfs;

  InspectedContainer inspected;
  if (needs_runtime(config)) {
    const std::string runtime = runtime_of(config);
    const std::string client = find_system_command(runtime);
    if (client.empty()) {
      target.problem = runtime + " is not installed (looked in the system's bin directories)";
      return target;
    }
    auto answer = inspect(client, config.container);
    if (!answer) {
      target.problem = answer.error();
      return target;
    }
    inspected = std::move(*answer);
    if (!inspected.running) {
      target.problem = "container " + config.container + " is not running (" +
                       (inspected.status.empty() ? "no status" : inspected.status) + ")";
      return target;
    }
    if (config.exec == Exec::docker || config.exec == Exec::podman) {
      // By id: a container re-created under the same name since the inspect
      // is another one, whose root is not the one read.
      target.exec = docker_exec_prefix(config.name, client,
                                       inspected.id.empty() ? config.container : inspected.id);
      if (inspected.pid > 0) {
        use_process_root(target.exec, inspected.pid);
      }
    }
  }

  switch (config.exec) {
    case Exec::docker:
    case Exec::podman:
      break;
    case Exec::nsenter: {
      const pid_t pid = config.pid > 0 ? config.pid : inspected.pid;
      const std::string nsenter = find_system_command("nsenter");
      if (pid <= 0) {
        target.problem = "no process of the container to enter: give 'pid' or 'container'";
      } else if (nsenter.empty()) {
        target.problem = "nsenter is not installed (util-linux)";
      } else if (const std::string why = cannot_enter(pid); !why.empty()) {
        target.problem = "cannot enter process " + std::to_string(pid) + ": " + why;
      } else {
        target.exec = nsenter_exec_prefix(config.name, nsenter, pid);
        use_process_root(target.exec, pid);
      }
      break;
    }
    case Exec::argv:
      target.exec = generic_exec_prefix(config.name, config.argv, config.argv_switches_user);
      break;
  }
  if (target.root.empty() && target.problem.empty()) {
    // Its files as its processes see them, volumes included, and reached
    // without a path through the engine's storage (root's alone: a thread
    // reading as an env's user could not pass it). The merged directory
    // only when no process of it is known.
    target.root = target.exec.root_process > 0 ? process_root_of(target.exec.root_process)
                                               : fs::path(inspected.merged_dir);
  }
  if (target.problem.empty() && !target.root.empty()) {
    target.problem = unusable_root(target.root, !config.rootfs.empty());
  }
  std::error_code error;
  if (target.problem.empty() && !target.root.empty() &&
      (process::is_process_root(target.root)
           ? same_file(target.root, "/")
           : std::filesystem::weakly_canonical(target.root, error) == "/")) {
    // /proc/PID/root, or a rootfs of "/": every path would be the host's.
    target.problem = "its root " + target.root.string() +
                     " resolves to the host's /: configure the container's own rootfs";
  }
  if (target.problem.empty() && target.root.empty()) {
    target.problem =
        "its root filesystem is unknown: configure 'rootfs' (the runtime reported no merged "
        "directory)";
  }

  if (!config.image.empty()) {
    target.image = config.image;
    target.image_source = "configured";
  } else if (!config.image_command.empty()) {
    const auto tag = read_image_tag({ImageTagSource::Kind::command, config.image_command});
    target.image = tag.value;
    target.image_source = tag.source;
    target.image_problem = tag.problem;
  } else if (!inspected.image.empty()) {
    target.image = inspected.image;
    target.image_source = std::string(runtime_of(config)) + " inspect";
  } else {
    target.image_problem =
        "no image reference: configure 'image' or 'image_command', or name the 'container' "
        "so that its runtime is asked";
  }
  return target;
}

}  // namespace envcontract::discovery
