#pragma once

#include <filesystem>
#include <iosfwd>

#include "daemon/agent_config.hpp"

namespace envcontract::daemon {

struct ServeOptions {
  AgentConfig config;
  std::filesystem::path ready_file;  // written with the dashboard's URL once listening
};

// `envcontractd serve`: runs the agent until SIGTERM or SIGINT; SIGHUP
// reloads the contract. Returns 0 after a clean stop, 2 when it cannot start
// (the reason is logged).
int run_serve(const ServeOptions& options);

}  // namespace envcontract::daemon
