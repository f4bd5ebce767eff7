#include "tests/support/background_process.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tests/support/loopback_http.hpp"

extern char** environ;

namespace envcontract::testing {

pid_t spawn_logged(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  std::vector<char*> args;
  for (const auto& arg : argv) {
    args.push_back(const_cast<char*>(arg.c_str()));
  }
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) {
    throw std::runtime_error("cannot start " + argv[0]);
  }
  return pid;
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv,
                                     const std::filesystem::path& log)
    : m_pid(spawn_logged(argv, log)), m_log(log) {}

BackgroundProcess::~BackgroundProcess() {
  ::kill(-m_pid, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (::waitpid(m_pid, nullptr, WNOHANG) == m_pid) {
      return;
    }
    ::usleep(50'000);
  }
  ::kill(-m_pid, SIGKILL);
  ::waitpid(m_pid, nullptr, 0);
}

bool BackgroundProcess::running() const {
  return ::waitpid(m_pid, nullptr, WNOHANG) == 0;
}

std::string BackgroundProcess::log() const {
  std::ifstream in(m_log);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int free_loopback_port() {
  const auto [fd, port] = bound_loopback_socket();
  ::close(fd);
  return port;
}

}  // namespace envcontract::testing
