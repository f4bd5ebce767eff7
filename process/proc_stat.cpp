#include "process/proc_stat.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <sstream>

#include "process/small_files.hpp"

namespace envcontract::process {

const std::string& ProcStat::field(std::size_t number) const {
  static const std::string none;
  return number >= 3 && number - 3 < fields.size() ? fields[number - 3] : none;
}

std::optional<ProcStat> read_proc_stat(const std::filesystem::path& file) {
  constexpr FileLimits k_stat{"process status", 4096, true, 0};
  const auto text = read_file_bounded(file, k_stat).text;
  if (!text) {
    return std::nullopt;
  }
  const auto open = text->find('(');
  const auto close = text->rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return std::nullopt;
  }
  ProcStat stat;
  stat.name = text->substr(open + 1, close - open - 1);
  std::istringstream fields(text->substr(close + 1));
  for (std::string value; fields >> value;) {
    stat.fields.push_back(std::move(value));
  }
  return stat;
}

std::uint64_t process_start_time(pid_t pid) {
  const auto stat = read_proc_stat("/proc/" + std::to_string(pid) + "/stat");
  return stat ? std::strtoull(stat->field(22).c_str(), nullptr, 10) : 0;
}

pid_t forked_child_or_self(pid_t pid, pid_t child) {
  if (child <= 0 || child == pid) {
    return pid;
  }
  constexpr FileLimits k_children{"list of child processes", 64 * 1024, false, 0};
  const std::string task = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid);
  std::istringstream children(read_file_bounded(task + "/children", k_children).text.value_or(""));
  bool is_child = false;
  for (pid_t listed = 0; !is_child && children >> listed;) {
    is_child = listed == child;
  }
  // /proc/PID belongs to the process's user (to root for a set-user-ID one).
  struct stat parent_info {};
  struct stat child_info {};
  if (!is_child || ::stat(("/proc/" + std::to_string(pid)).c_str(), &parent_info) != 0 ||
      ::stat(("/proc/" + std::to_string(child)).c_str(), &child_info) != 0 ||
      parent_info.st_uid != child_info.st_uid) {
    return pid;
  }
  return child;
}

}  // namespace envcontract::process
