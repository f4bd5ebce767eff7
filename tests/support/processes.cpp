#include "tests/support/processes.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

namespace envcontract::testing {

std::string read_proc_file(const std::string& path) {
  std::string contents;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return contents;
  }
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got <= 0) {
      break;
    }
    contents.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(fd);
  return contents;
}

bool process_running(pid_t pid) {
  const std::string stat = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  const std::string text = stat.substr(0, stat.find('\n'));
  // "pid (comm) S ...": the name may hold parentheses, the state follows the last one.
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

std::vector<pid_t> processes_with_environment(const std::string& entry) {
  std::vector<pid_t> found;
  for (const auto& process : std::filesystem::directory_iterator("/proc")) {
    const std::string name = process.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    const pid_t pid = std::stoi(name);
    const std::string contents = read_proc_file((process.path() / "environ").string());
    if (process_running(pid) && contents.find(entry) != std::string::npos) {
      found.push_back(pid);
    }
  }
  return found;
}

}  // namespace envcontract::testing
