#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace envcontract::testing {

// A program of someone else's (Prometheus, Alertmanager) run for a test:
// its output goes to `log`, and it is killed with its process group when
// the object goes.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv, const std::filesystem::path& log);
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  bool running() const;
  std::string log() const;
  pid_t pid() const { return m_pid; }

 private:
  pid_t m_pid = -1;
  std::filesystem::path m_log;
};

// Starts `argv` in a process group of its own (so that killing the group
// reaches what it started), its stdout and stderr appended to `log`.
// Throws when it cannot be started.
pid_t spawn_logged(const std::vector<std::string>& argv, const std::filesystem::path& log);

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_loopback_port();

}  // namespace envcontract::testing
