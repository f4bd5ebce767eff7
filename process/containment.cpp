#include "process/containment.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "process/proc_stat.hpp"

namespace envcontract::process {

namespace {

using Clock = std::chrono::steady_clock;

struct Hierarchy {
  std::string dir;  // our own cgroup in this hierarchy: where probe groups are made
  std::set<std::string> controllers;
};

// What this host offers, found once.
struct CgroupLayout {
  std::optional<Hierarchy> v2;
  std::optional<Hierarchy> v1_pids;
  std::optional<Hierarchy> v1_memory;
  bool v2_limits = false;  // pids and/or memory enabled for our probe groups
};

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream stream(text);
  while (std::getline(stream, part, separator)) {
    parts.push_back(part);
  }
  return parts;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool write_text(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// Where `cgroup_path` (from /proc/self/cgroup) is, given a mount of that
// hierarchy whose root is `mount_root`.
std::optional<std::string> place(const std::string& mount_point, const std::string& mount_root,
                                 const std::string& cgroup_path) {
  if (mount_root == "/") {
    return mount_point + (cgroup_path == "/" ? "" : cgroup_path);
  }
  if (cgroup_path.starts_with(mount_root)) {
    return mount_point + cgroup_path.substr(mount_root.size());
  }
  return std::nullopt;
}

bool usable(const std::string& dir) {
  return ::access(dir.c_str(), W_OK) == 0;
}

// Turns on `wanted` controllers for the children of `dir`. A cgroup with
// processes of its own cannot (cgroup v2's no-internal-process rule), so
// the agent first moves itself into a leaf of its own cgroup.
bool enable_controllers(const std::string& dir, const std::set<std::string>& wanted,
                        bool may_move_self) {
  std::string request;
  for (const auto& controller : wanted) {
    request += (request.empty() ? "+" : " +") + controller;
  }
  if (request.empty() || write_text(dir + "/cgroup.subtree_control", request)) {
    return !request.empty();
  }
  if (errno != EBUSY || !may_move_self) {
    return false;
  }
  const std::string leaf = dir + "/agent";
  ::mkdir(leaf.c_str(), 0755);
  return write_text(leaf + "/cgroup.procs", "0") &&
         write_text(dir + "/cgroup.subtree_control", request);
}

CgroupLayout discover_layout() {
  CgroupLayout layout;
  if (::geteuid() != 0) {
    return layout;  // an unprivileged agent is given no cgroup to manage
  }
  std::map<std::string, std::string> own_paths;  // "" for v2, else the controller
  for (const auto& line : split(read_text("/proc/self/cgroup"), '\n')) {
    const auto fields = split(line, ':');
    if (fields.size() < 3) {
      continue;
    }
    const std::string path = line.substr(fields[0].size() + fields[1].size() + 2);
    for (const auto& controller : split(fields[1], ',')) {
      own_paths[controller] = path;
    }
    if (fields[1].empty()) {
      own_paths[""] = path;
    }
  }
  for (const auto& line : split(read_text("/proc/self/mountinfo"), '\n')) {
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) {
      continue;
    }
    const auto before = split(line.substr(0, dash), ' ');
    const auto after = split(line.substr(dash + 3), ' ');
    if (before.size() < 5 || after.size() < 3) {
      continue;
    }
    const std::string& root = before[3];
    const std::string& mount_point = before[4];
    if (after[0] == "cgroup2" && own_paths.contains("") && !layout.v2) {
      if (auto dir = place(mount_point, root, own_paths[""]); dir && usable(*dir)) {
        Hierarchy hierarchy{*dir, {}};
        for (const auto& name : split(read_text(*dir + "/cgroup.controllers"), ' ')) {
          const std::string trimmed = name.substr(0, name.find('\n'));
          if (trimmed == "pids" || trimmed == "memory") {
            hierarchy.controllers.insert(trimmed);
          }
        }
        layout.v2 = hierarchy;
      }
    } else if (after[0] == "cgroup") {
      for (const auto& option : split(after[2], ',')) {
        auto& slot = option == "pids" ? layout.v1_pids : layout.v1_memory;
        if ((option == "pids" || option == "memory") && !slot && own_paths.contains(option)) {
          if (auto dir = place(mount_point, root, own_paths[option]); dir && usable(*dir)) {
            slot = Hierarchy{*dir, {option}};
          }
        }
      }
    }
  }
  if (layout.v2) {
    const std::string parent = layout.v2->dir + "/envcontract-probes";
    if (::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) {
      layout.v2.reset();
    } else {
      layout.v2->dir = parent;
      const bool own_is_root = ::access((layout.v2->dir + "/../cgroup.type").c_str(), F_OK) != 0;
      layout.v2_limits = enable_controllers(parent + "/..", layout.v2->controllers, !own_is_root) &&
                         enable_controllers(parent, layout.v2->controllers, false);
    }
  }
  return layout;
}

const CgroupLayout& layout() {
  static const CgroupLayout instance = discover_layout();
  return instance;
}

std::vector<pid_t> read_pids(const std::string& dir) {
  std::vector<pid_t> pids;
  for (const auto& line : split(read_text(dir + "/cgroup.procs"), '\n')) {
    if (!line.empty()) {
      pids.push_back(static_cast<pid_t>(std::stol(line)));
    }
  }
  return pids;
}

std::atomic<unsigned> g_next_group{0};

}  // namespace

std::unique_ptr<ProbeCgroup> ProbeCgroup::create(const ResourceLimits& limits) {
  const auto& host = layout();
  if (!host.v2 && !host.v1_pids && !host.v1_memory) {
    return nullptr;
  }
  std::unique_ptr<ProbeCgroup> group(new ProbeCgroup());
  const std::string name =
      "/probe-" + std::to_string(::getpid()) + "-" + std::to_string(g_next_group.fetch_add(1));
  auto make = [&](const Hierarchy& hierarchy) -> std::optional<std::string> {
    const std::string dir = hierarchy.dir + name;
    if (::mkdir(dir.c_str(), 0755) != 0) {
      return std::nullopt;
    }
    const int fd = ::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      ::rmdir(dir.c_str());
      return std::nullopt;
    }
    group->m_dirs.push_back(dir);
    group->m_join_fds.push_back(fd);
    return dir;
  };
  bool pids_done = false;
  bool memory_done = false;
  if (host.v2) {
    if (const auto dir = make(*host.v2)) {
      group->m_start_dir = ::open(dir->c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
      group->m_has_kill = ::access((*dir + "/cgroup.kill").c_str(), W_OK) == 0;
      if (host.v2_limits && host.v2->controllers.contains("pids") && limits.processes > 0) {
        pids_done = write_text(*dir + "/pids.max", std::to_string(limits.processes));
      }
      if (host.v2_limits && host.v2->controllers.contains("memory") && limits.memory_bytes > 0) {
        memory_done = write_text(*dir + "/memory.max", std::to_string(limits.memory_bytes)) &&
                      write_text(*dir + "/memory.swap.max", "0");
      }
    }
  }
  if (!pids_done && host.v1_pids && limits.processes > 0) {
    if (const auto dir = make(*host.v1_pids)) {
      pids_done = write_text(*dir + "/pids.max", std::to_string(limits.processes));
    }
  }
  if (!memory_done && host.v1_memory && limits.memory_bytes > 0) {
    if (const auto dir = make(*host.v1_memory)) {
      write_text(*dir + "/memory.limit_in_bytes", std::to_string(limits.memory_bytes));
    }
  }
  group->m_limits_processes = pids_done;
  if (group->m_dirs.empty()) {
    return nullptr;
  }
  return group;
}

std::vector<pid_t> ProbeCgroup::members() const {
  std::set<pid_t> all;
  for (const auto& dir : m_dirs) {
    for (const pid_t pid : read_pids(dir)) {
      all.insert(pid);
    }
  }
  return {all.begin(), all.end()};
}

std::vector<pid_t> ProbeCgroup::kill_all() {
  std::set<pid_t> seen;
  if (m_has_kill) {
    for (const pid_t pid : members()) {
      seen.insert(pid);
    }
    write_text(m_dirs.front() + "/cgroup.kill", "1");
  }
  // Without cgroup.kill, rounds of SIGKILL: a member forking in between is
  // caught by the next round, and pids.max bounds how many there can be.
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < deadline) {
    const auto now = members();
    if (now.empty()) {
      break;
    }
    for (const pid_t pid : now) {
      seen.insert(pid);
      ::kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return {seen.begin(), seen.end()};
}

std::vector<std::string> ProbeCgroup::release() {
  return std::exchange(m_dirs, {});
}

ProbeCgroup::~ProbeCgroup() {
  for (const int fd : m_join_fds) {
    ::close(fd);
  }
  if (m_start_dir >= 0) {
    ::close(m_start_dir);
  }
  if (!m_dirs.empty() && !members().empty()) {
    kill_all();
  }
  // A cgroup is removable once its last task is gone; exiting tasks take a
  // moment to leave it.
  for (const auto& dir : m_dirs) {
    for (int attempt = 0; attempt < 200 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

std::string containment_description() {
  const auto& host = layout();
  std::string text;
  if (host.v2) {
    text = "cgroup v2";
    if (host.v2_limits) {
      for (const auto& controller : host.v2->controllers) {
        text += " +" + controller;
      }
    }
  }
  if (host.v1_pids) {
    text += std::string(text.empty() ? "" : ", ") + "cgroup v1 pids";
  }
  if (host.v1_memory) {
    text += std::string(text.empty() ? "" : ", ") + "cgroup v1 memory";
  }
  return text.empty() ? "no cgroup: descendants found by an environment marker" : text;
}

namespace {

std::vector<pid_t> marked_processes(const std::string& marker, const std::string& pid_namespace) {
  std::vector<pid_t> found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) {
    return found;
  }
  const std::string needle = std::string(1, '\0') + marker + '\0';
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || pid == ::getpid()) {
      continue;
    }
    if (!pid_namespace.empty()) {
      std::error_code error;
      const auto link =
          std::filesystem::read_symlink("/proc/" + std::string(entry->d_name) + "/ns/pid", error);
      if (error || link.string() != pid_namespace) {
        continue;
      }
    }
    // Bounded read: environments are small, and the marker comes early
    // enough when it is there at all.
    std::ifstream in("/proc/" + std::string(entry->d_name) + "/environ", std::ios::binary);
    std::string environ(1, '\0');
    char chunk[8192];
    while (in && environ.size() < (1 << 20)) {
      in.read(chunk, sizeof chunk);
      environ.append(chunk, static_cast<std::size_t>(in.gcount()));
    }
    environ.push_back('\0');
    if (environ.find(needle) != std::string::npos) {
      found.push_back(static_cast<pid_t>(pid));
    }
  }
  ::closedir(proc);
  return found;
}

}  // namespace

std::vector<pid_t> find_marked_processes(const std::string& marker) {
  return marked_processes(marker, "");
}

std::vector<pid_t> find_marked_processes_in(const std::string& marker, pid_t member) {
  std::error_code error;
  const auto link =
      std::filesystem::read_symlink("/proc/" + std::to_string(member) + "/ns/pid", error);
  if (error || link.empty()) {
    return {};  // gone: nothing of it is left to find
  }
  return marked_processes(marker, link.string());
}

pid_t first_started_of(const std::vector<pid_t>& pids, uid_t uid,
                       const std::function<bool(pid_t)>& also) {
  pid_t first = 0;
  std::uint64_t first_start = 0;
  for (const pid_t pid : pids) {
    struct stat process {};
    if (::stat(("/proc/" + std::to_string(pid)).c_str(), &process) != 0 || process.st_uid != uid ||
        (also && !also(pid))) {
      continue;
    }
    const std::uint64_t started = process_start_time(pid);
    if (started != 0 && (first == 0 || started < first_start)) {
      first = pid;
      first_start = started;
    }
  }
  return first;
}

void reap_adopted(std::vector<pid_t> pids) {
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (!pids.empty() && Clock::now() < deadline) {
    std::erase_if(pids, [](pid_t pid) {
      const pid_t reaped = ::waitpid(pid, nullptr, WNOHANG);
      if (reaped == pid) {
        return true;
      }
      // Not our child: gone for good, or still alive under a parent that
      // is itself dying (it becomes ours when that parent is reaped).
      return reaped < 0 && ::access(("/proc/" + std::to_string(pid)).c_str(), F_OK) != 0;
    });
    if (!pids.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

}  // namespace envcontract::process
