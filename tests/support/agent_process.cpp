#include "tests/support/agent_process.hpp"

#include "tests/support/background_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace envcontract::testing {
namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> agent_argv(const std::filesystem::path& ready_file,
                                    const std::vector<std::string>& arguments) {
  std::vector<std::string> argv = {ENVCONTRACTD_PATH, "serve", "--listen", "127.0.0.1:0"};
  if (!ready_file.empty()) {
    argv.insert(argv.end(), {"--ready-file", ready_file.string()});
  }
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  return argv;
}

}  // namespace

AgentProcess::AgentProcess(const std::filesystem::path& work_dir,
                           const std::vector<std::string>& arguments,
                           std::chrono::seconds ready_timeout)
    : m_log(work_dir / "agent.log") {
  const auto ready_file = work_dir / "agent.url";
  std::filesystem::remove(ready_file);
  m_pid = spawn_logged(agent_argv(ready_file, arguments), m_log);
  const auto deadline = std::chrono::steady_clock::now() + ready_timeout;
  while (!std::filesystem::exists(ready_file)) {
    int status = 0;
    if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
      m_reaped = true;
      throw std::runtime_error("the agent exited before listening:\n" + log());
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill_hard();
      throw std::runtime_error("the agent did not listen within the timeout:\n" + log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string url = read_text(ready_file);
  while (!url.empty() && (url.back() == '\n' || url.back() == '/')) {
    url.pop_back();
  }
  m_url = url;
  m_port = std::stoi(url.substr(url.rfind(':') + 1));
}

AgentProcess::~AgentProcess() {
  if (!m_reaped) {
    if (stop(std::chrono::seconds(10)) == -2) {
      kill_hard();
    }
  }
}

std::string AgentProcess::log() const {
  return read_text(m_log);
}

void AgentProcess::signal(int number) const {
  ::kill(m_pid, number);
}

int AgentProcess::stop(std::chrono::seconds timeout) {
  if (m_reaped) {
    return -1;
  }
  ::kill(m_pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
      m_reaped = true;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -2;  // still running
}

void AgentProcess::kill_hard() {
  if (m_reaped) {
    return;
  }
  ::kill(-m_pid, SIGKILL);
  ::kill(m_pid, SIGKILL);
  int status = 0;
  ::waitpid(m_pid, &status, 0);
  m_reaped = true;
}

int AgentProcess::run_to_exit(const std::filesystem::path& work_dir,
                              const std::vector<std::string>& arguments, std::string& log) {
  const auto log_file = work_dir / "agent-exit.log";
  std::filesystem::remove(log_file);
  const pid_t pid = spawn_logged(agent_argv({}, arguments), log_file);
  int status = 0;
  ::waitpid(pid, &status, 0);
  log = read_text(log_file);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace envcontract::testing
