#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace envcontract::process {

// /proc/PID/stat (or a task's): "pid (comm) S f4 f5 ...". The command name
// may hold spaces and parentheses, so the fields are counted after its last
// ')'.
struct ProcStat {
  std::string name;                 // field 2, without its parentheses
  std::vector<std::string> fields;  // field 3 (the state) onwards

  // Field `number` as stat(5) numbers them (3 and up), or "" past the end.
  const std::string& field(std::size_t number) const;
};

std::optional<ProcStat> read_proc_stat(const std::filesystem::path& file);

// The start time of `pid` in clock ticks since boot (field 22), 0 when it
// is gone.
std::uint64_t process_start_time(pid_t pid);

// `child` when it is a child of `pid` (one its main thread started) that
// runs as the same user; `pid` itself otherwise.
pid_t forked_child_or_self(pid_t pid, pid_t child);

}  // namespace envcontract::process
