#include "probes/proc_stat.hpp"

#include <cstdlib>
#include <sstream>

#include "probes/small_files.hpp"

namespace envcontract::probes {

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

}  // namespace envcontract::probes
