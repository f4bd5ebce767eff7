#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace envcontract::testing {

// A real `envcontractd serve` on a free loopback port, for end-to-end tests.
// Its log goes to a file in `work_dir` (shown on failure); stopping it sends
// SIGTERM, then SIGKILL to its whole process group if it lingers.
class AgentProcess {
 public:
  // Starts the agent with `arguments` after "serve --listen 127.0.0.1:0
  // --ready-file ..." and waits until it listens. Throws with the agent's
  // log when it exits or does not get ready within `ready_timeout`.
  AgentProcess(const std::filesystem::path& work_dir, const std::vector<std::string>& arguments,
               std::chrono::seconds ready_timeout = std::chrono::seconds(30));
  ~AgentProcess();
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  const std::string& url() const { return m_url; }  // "http://127.0.0.1:PORT"
  int port() const { return m_port; }
  pid_t pid() const { return m_pid; }
  std::string log() const;

  void signal(int number) const;
  // SIGTERM and wait; returns the exit status (-1 when killed by a signal).
  int stop(std::chrono::seconds timeout = std::chrono::seconds(30));
  // SIGKILL the agent and everything it started, and reap it.
  void kill_hard();

  // Runs the agent to its exit without waiting for readiness: for start-up errors.
  static int run_to_exit(const std::filesystem::path& work_dir,
                         const std::vector<std::string>& arguments, std::string& log);

 private:
  std::filesystem::path m_log;
  pid_t m_pid = -1;
  bool m_reaped = false;
  std::string m_url;
  int m_port = 0;
};

}  // namespace envcontract::testing
