#pragma once

#include "daemon/agent_config.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::testing {

// An agent's configuration for a host with no envs under `dir` (a contract
// with one python check, a database), scanning every `interval`: a scan
// takes about a millisecond, for tests of the agent rather than of envs.
daemon::AgentConfig empty_host_agent_config(const TempDir& dir, std::chrono::milliseconds interval);

}  // namespace envcontract::testing
