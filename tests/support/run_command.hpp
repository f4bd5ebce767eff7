#pragma once

#include <string>
#include <vector>

namespace envcontract::testing {

struct CommandResult {
  int exit_code = -1;  // -1 when killed by a signal
  std::string out;
  std::string err;
};

// Runs argv[0] with arguments (no shell), capturing stdout and stderr.
// For tests only: the product's process runner lives in process/.
CommandResult run_command(const std::vector<std::string>& argv);

}  // namespace envcontract::testing
