#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace envcontract::testing {

// A file of /proc/PID: "" when the process is gone, and what was read when
// it exits while it is read (read fails with ESRCH then, which std::ifstream
// turns into an exception of libstdc++'s own).
std::string read_proc_file(const std::string& path);

// Alive and not a zombie: a killed orphan may wait a while for init to reap it.
bool process_running(pid_t pid);

// Running processes whose environment holds `entry` ("NAME=value").
std::vector<pid_t> processes_with_environment(const std::string& entry);

}  // namespace envcontract::testing
