#pragma once

#include <sys/types.h>

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "tests/support/run_command.hpp"

// Real container engines for the tests: Debian's podman (rootful, runc) and
// docker.io's dockerd. Images are made with `import` of a root filesystem
// the test builds (no registry is needed), containers run detached without
// a network, and everything made is removed when its object goes, however
// the test ended.
namespace envcontract::testing {

enum class Engine { podman, docker };

// "podman" or "docker".
std::string engine_name(Engine engine);
// How gtest names a test's parameter.
void PrintTo(Engine engine, std::ostream* out);

// An engine ready for a test. podman: the system's own storage and runtime
// (runc). docker: a dockerd of the test's own (its data, exec root and
// socket under `dir`, no bridge and no iptables rules), stopped with the
// object; clients reach it through `environment()`, which the agent must be
// given too.
class EngineSession {
 public:
  EngineSession(Engine engine, const std::filesystem::path& dir);
  ~EngineSession();
  EngineSession(const EngineSession&) = delete;
  EngineSession& operator=(const EngineSession&) = delete;

  // Why the engine cannot be used here (a reason to skip), or "".
  const std::string& unavailable() const { return m_unavailable; }
  Engine engine() const { return m_engine; }
  std::string name() const { return engine_name(m_engine); }
  // What the engine's clients need in their environment ("DOCKER_HOST=..."), each "NAME=value".
  const std::vector<std::string>& environment() const { return m_environment; }
  // `argv` run with environment() set (through /usr/bin/env).
  std::vector<std::string> with_environment(const std::vector<std::string>& argv) const;
  // The engine's client with `args`.
  CommandResult client(const std::vector<std::string>& args) const;
  // The flags `run` needs on this machine (podman: runc, and limits runc can set).
  std::vector<std::string> run_flags() const;

 private:
  void start_dockerd(const std::filesystem::path& dir);
  void remove_orphans() const;

  Engine m_engine;
  std::string m_client;
  std::string m_unavailable;
  std::vector<std::string> m_environment;
  pid_t m_dockerd = 0;
  std::filesystem::path m_dockerd_dir;
};

// A process as the host sees it.
struct HostProcess {
  pid_t pid = 0;
  char state = '?';
  std::string command;  // its argv, joined by spaces

  std::string text() const;
};

// An image imported from `rootfs` (a tar of it made under `scratch`) and a
// long-running container of it running `command`, detached, without a
// network; names are unique to this process (envcontract-test-PID-N), and
// both are removed with the object. `run_flags` go to `run` before the
// image (volumes, for instance).
class EngineContainer {
 public:
  EngineContainer(const EngineSession& session, const std::filesystem::path& rootfs,
                  const std::vector<std::string>& command, const std::filesystem::path& scratch,
                  const std::vector<std::string>& run_flags = {});
  ~EngineContainer();
  EngineContainer(const EngineContainer&) = delete;
  EngineContainer& operator=(const EngineContainer&) = delete;

  // Why it is not running, or "".
  const std::string& problem() const { return m_problem; }
  const std::string& name() const { return m_name; }
  const std::string& id() const { return m_id; }
  // The image reference it was started from.
  const std::string& image() const { return m_image; }
  // Its init, as the host sees it.
  pid_t pid() const { return m_pid; }
  // Where the engine mounts its root filesystem on the host.
  const std::filesystem::path& merged_dir() const { return m_merged_dir; }
  // "pid:[N]": its pid namespace.
  const std::string& pid_namespace() const { return m_pid_namespace; }

  // One field of `inspect --type container` (a Go template such as {{.State.Status}}).
  std::string inspect(const std::string& format) const;
  // `stop` without a grace period (its init ignores SIGTERM, as PID 1 does).
  CommandResult stop() const;
  // The processes in its pid namespace but its init.
  std::vector<HostProcess> processes_inside() const;
  // Processes outside it whose argv names it (exec clients, exec monitors,
  // runc exec, cleanup), but the monitor of its init that the engine keeps.
  std::vector<HostProcess> processes_naming_it() const;

 private:
  const EngineSession& m_session;
  std::string m_name;
  std::string m_image;
  std::string m_id;
  std::string m_problem;
  pid_t m_pid = 0;
  pid_t m_monitor = 0;
  std::filesystem::path m_merged_dir;
  std::string m_pid_namespace;
  bool m_imported = false;
  bool m_created = false;
};

}  // namespace envcontract::testing
