#include "tests/support/processes.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>

namespace envcontract::testing {

bool process_running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
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
    std::ifstream environ(process.path() / "environ", std::ios::binary);
    const std::string contents((std::istreambuf_iterator<char>(environ)), {});
    if (process_running(pid) && contents.find(entry) != std::string::npos) {
      found.push_back(pid);
    }
  }
  return found;
}

}  // namespace envcontract::testing
