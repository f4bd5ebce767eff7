#include "tests/support/container_engine.hpp"

#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/background_process.hpp"
#include "tests/support/processes.hpp"

namespace envcontract::testing {
namespace fs = std::filesystem;

namespace {

constexpr const char* k_prefix = "envcontract-test-";
constexpr const char* k_repository = "localhost/envcontract-test";

std::string first_executable(std::initializer_list<const char*> paths) {
  for (const char* path : paths) {
    if (::access(path, X_OK) == 0) {
      return path;
    }
  }
  return "";
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

std::string last_lines(const std::string& text, std::size_t count) {
  std::size_t start = text.size();
  for (std::size_t seen = 0; start > 0 && seen <= count;) {
    --start;
    seen += text[start] == '\n' ? 1 : 0;
  }
  return text.substr(start);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Whether the process that made a name of ours (envcontract-test-PID-...) is gone.
bool maker_gone(const std::string& rest) {
  const auto dash = rest.find('-');
  try {
    const pid_t pid = std::stoi(rest.substr(0, dash));
    return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
  } catch (const std::exception&) {
    return false;
  }
}

HostProcess host_process(pid_t pid) {
  HostProcess process;
  process.pid = pid;
  const std::string base = "/proc/" + std::to_string(pid);
  const std::string stat = read_proc_file(base + "/stat");
  const auto paren = stat.rfind(')');
  if (paren != std::string::npos && paren + 2 < stat.size()) {
    process.state = stat[paren + 2];
  }
  std::string command = read_proc_file(base + "/cmdline");
  std::replace(command.begin(), command.end(), '\0', ' ');
  process.command = trimmed(command);
  return process;
}

pid_t parent_of(pid_t pid) {
  const std::string stat = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  if (paren == std::string::npos) {
    return 0;
  }
  std::istringstream fields(stat.substr(paren + 2));
  char state = 0;
  pid_t parent = 0;
  fields >> state >> parent;
  return parent;
}

std::string pid_namespace_of(pid_t pid) {
  std::error_code error;
  const auto link = fs::read_symlink("/proc/" + std::to_string(pid) + "/ns/pid", error);
  return error ? "" : link.string();
}

std::vector<pid_t> all_pids() {
  std::vector<pid_t> pids;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && std::all_of(name.begin(), name.end(), ::isdigit)) {
      pids.push_back(std::stoi(name));
    }
  }
  return pids;
}

}  // namespace

std::string engine_name(Engine engine) {
  return engine == Engine::podman ? "podman" : "docker";
}

void PrintTo(Engine engine, std::ostream* out) {
  *out << engine_name(engine);
}

std::string HostProcess::text() const {
  return std::to_string(pid) + " [" + state + "] " + command;
}

EngineSession::EngineSession(Engine engine, const fs::path& dir) : m_engine(engine) {
  if (::geteuid() != 0) {
    m_unavailable = "the real-engine tests run containers rootful: run them as root";
    return;
  }
  if (engine == Engine::podman) {
    m_client = first_executable({"/usr/bin/podman"});
    if (m_client.empty() || first_executable({"/usr/sbin/runc", "/usr/bin/runc"}).empty()) {
      m_unavailable = "podman or runc is not installed (apt install podman runc uidmap)";
      return;
    }
    const auto info = client({"info", "--format", "{{.Host.OCIRuntime.Name}}"});
    if (info.exit_code != 0) {
      m_unavailable = "`podman info` fails: " + last_lines(info.err, 5);
      return;
    }
    remove_orphans();
    return;
  }
  // Debian's client first: /usr/local/bin may hold another one.
  m_client = first_executable({"/usr/bin/docker", "/usr/local/bin/docker"});
  if (m_client.empty() || first_executable({"/usr/sbin/dockerd", "/usr/bin/dockerd"}).empty()) {
    m_unavailable = "docker is not installed (apt install docker.io)";
    return;
  }
  start_dockerd(dir);
}

void EngineSession::start_dockerd(const fs::path& dir) {
  m_dockerd_dir = dir;
  fs::create_directories(dir);
  const std::string socket = "unix://" + (dir / "docker.sock").string();
  m_environment = {"DOCKER_HOST=" + socket};
  const fs::path log = dir / "dockerd.log";
  try {
    m_dockerd =
        spawn_logged({first_executable({"/usr/sbin/dockerd", "/usr/bin/dockerd"}), "--data-root",
                      (dir / "data").string(), "--exec-root", (dir / "exec").string(), "--pidfile",
                      (dir / "dockerd.pid").string(), "--host", socket, "--iptables=false",
                      "--ip6tables=false", "--bridge=none", "--storage-driver=overlay2"},
                     log);
  } catch (const std::exception& error) {
    m_unavailable = std::string("dockerd cannot be started: ") + error.what();
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (client({"info", "--format", "{{.ServerVersion}}"}).exit_code == 0) {
      return;
    }
    int status = 0;
    if (::waitpid(m_dockerd, &status, WNOHANG) == m_dockerd) {
      m_dockerd = 0;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  m_unavailable = "a dockerd of the test's own did not answer: " + last_lines(read_file(log), 8);
}

EngineSession::~EngineSession() {
  if (m_dockerd > 0) {
    ::kill(m_dockerd, SIGTERM);
    int status = 0;
    bool ended = false;
    for (int waited = 0; waited < 300 && !ended; ++waited) {
      ended = ::waitpid(m_dockerd, &status, WNOHANG) == m_dockerd;
      if (!ended) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    if (!ended) {
      ::kill(-m_dockerd, SIGKILL);
      ::waitpid(m_dockerd, &status, 0);
    }
  }
  if (!m_dockerd_dir.empty()) {
    // What it left mounted below its directory goes before the directory does:
    // deepest first.
    std::vector<std::string> mounts;
    std::istringstream table(read_file("/proc/self/mounts"));
    for (std::string line; std::getline(table, line);) {
      std::istringstream words(line);
      std::string source;
      std::string target;
      words >> source >> target;
      if (target.starts_with(m_dockerd_dir.string() + "/")) {
        mounts.push_back(target);
      }
    }
    std::sort(mounts.rbegin(), mounts.rend());
    for (const auto& target : mounts) {
      ::umount2(target.c_str(), MNT_DETACH);
    }
  }
}

std::vector<std::string> EngineSession::with_environment(
    const std::vector<std::string>& argv) const {
  if (m_environment.empty()) {
    return argv;
  }
  std::vector<std::string> words = {"/usr/bin/env"};
  words.insert(words.end(), m_environment.begin(), m_environment.end());
  words.insert(words.end(), argv.begin(), argv.end());
  return words;
}

CommandResult EngineSession::client(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {m_client};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(with_environment(argv));
}

std::vector<std::string> EngineSession::run_flags() const {
  if (m_engine == Engine::docker) {
    return {};
  }
  // Without these runc cannot set the limits podman asks for here
  // ("error setting rlimit type 7").
  return {"--runtime", "runc", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"};
}

// Containers and images a test process made and could not remove (it was
// killed): their maker is gone.
void EngineSession::remove_orphans() const {
  const auto containers = client({"ps", "-a", "--format", "{{.Names}}"});
  std::istringstream names(containers.out);
  for (std::string name; std::getline(names, name);) {
    if (name.starts_with(k_prefix) && maker_gone(name.substr(std::string(k_prefix).size()))) {
      client({"rm", "-f", "-t", "0", name});
    }
  }
  const auto images = client({"images", "--format", "{{.Repository}}:{{.Tag}}"});
  std::istringstream references(images.out);
  for (std::string reference; std::getline(references, reference);) {
    const std::string ours = std::string(k_repository) + ":";
    if (reference.starts_with(ours) && maker_gone(reference.substr(ours.size()))) {
      client({"rmi", "-f", reference});
    }
  }
}

EngineContainer::EngineContainer(const EngineSession& session, const fs::path& rootfs,
                                 const std::vector<std::string>& command, const fs::path& scratch,
                                 const std::vector<std::string>& run_flags)
    : m_session(session) {
  static std::atomic<int> counter = 0;
  const std::string unique = std::to_string(::getpid()) + "-" + std::to_string(++counter);
  m_name = k_prefix + unique;
  m_image = std::string(k_repository) + ":" + unique;

  fs::create_directories(scratch);
  const fs::path tar = scratch / (m_name + ".tar");
  // The rootfs holds hard links to this machine's libraries: another test
  // that changes one's mode or owner meanwhile changes its ctime, which tar
  // reports (exit 1, "file changed as we read it") though its bytes are the
  // same. Only that is let through.
  const auto packed = run_command({"/bin/tar", "--numeric-owner", "--warning=no-file-changed", "-C",
                                   rootfs.string(), "-cf", tar.string(), "."});
  if (packed.exit_code != 0 && !(packed.exit_code == 1 && packed.err.empty())) {
    m_problem = "tar of " + rootfs.string() + " failed: " + packed.err;
    return;
  }
  const auto imported = session.client({"import", tar.string(), m_image});
  std::error_code ignored;
  fs::remove(tar, ignored);
  if (imported.exit_code != 0) {
    m_problem = session.name() + " import failed: " + imported.err;
    return;
  }
  m_imported = true;

  std::vector<std::string> run = {"run", "-d", "--name", m_name, "--network", "none"};
  const auto flags = session.run_flags();
  run.insert(run.end(), flags.begin(), flags.end());
  run.insert(run.end(), run_flags.begin(), run_flags.end());
  run.push_back(m_image);
  run.insert(run.end(), command.begin(), command.end());
  const auto started = session.client(run);
  // Created even when it did not start: removed either way.
  m_created = true;
  if (started.exit_code != 0) {
    m_problem = session.name() + " run failed: " + started.err;
    return;
  }
  std::istringstream fields(inspect("{{.Id}} {{.State.Pid}} {{.GraphDriver.Data.MergedDir}}"));
  fields >> m_id >> m_pid;
  std::string merged;
  fields >> merged;
  m_merged_dir = merged;
  if (m_id.empty() || m_pid <= 0) {
    m_problem = session.name() + " inspect names no process of " + m_name;
    return;
  }
  m_monitor = parent_of(m_pid);
  m_pid_namespace = pid_namespace_of(m_pid);
}

EngineContainer::~EngineContainer() {
  if (m_created) {
    std::vector<std::string> remove = {"rm", "-f"};
    if (m_session.engine() == Engine::podman) {
      remove.insert(remove.end(), {"-t", "0"});  // its init ignores SIGTERM
    }
    remove.push_back(m_name);
    m_session.client(remove);
  }
  if (m_imported) {
    m_session.client({"rmi", "-f", m_image});
  }
}

std::string EngineContainer::inspect(const std::string& format) const {
  return trimmed(
      m_session.client({"inspect", "--type", "container", "--format", format, m_name}).out);
}

CommandResult EngineContainer::stop() const {
  return m_session.client({"stop", "-t", "0", m_name});
}

std::vector<HostProcess> EngineContainer::processes_inside() const {
  std::vector<HostProcess> inside;
  if (m_pid_namespace.empty()) {
    return inside;
  }
  for (const pid_t pid : all_pids()) {
    if (pid != m_pid && pid_namespace_of(pid) == m_pid_namespace) {
      inside.push_back(host_process(pid));
    }
  }
  return inside;
}

std::vector<HostProcess> EngineContainer::processes_naming_it() const {
  std::vector<HostProcess> naming;
  for (const pid_t pid : all_pids()) {
    if (pid == m_pid || pid == m_monitor || pid == ::getpid() ||
        (!m_pid_namespace.empty() && pid_namespace_of(pid) == m_pid_namespace)) {
      continue;
    }
    const std::string argv = read_proc_file("/proc/" + std::to_string(pid) + "/cmdline");
    bool named = !m_id.empty() && argv.find(m_id) != std::string::npos;
    std::size_t start = 0;
    while (!named && start < argv.size()) {
      const auto end = argv.find('\0', start);
      named = argv.substr(start, end - start) == m_name;
      start = end == std::string::npos ? argv.size() : end + 1;
    }
    if (named) {
      naming.push_back(host_process(pid));
    }
  }
  return naming;
}

}  // namespace envcontract::testing
