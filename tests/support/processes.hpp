#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace envcontract::testing {

// Alive and not a zombie: a killed orphan may wait a while for init to reap it.
bool process_running(pid_t pid);

// Running processes whose environment holds `entry` ("NAME=value").
std::vector<pid_t> processes_with_environment(const std::string& entry);

}  // namespace envcontract::testing
