#include "tests/support/empty_host.hpp"

#include <fstream>

namespace envcontract::testing {

daemon::AgentConfig empty_host_agent_config(const TempDir& dir,
                                            std::chrono::milliseconds interval) {
  std::ofstream(dir.path() / "contract.yaml")
      << "schema_version: 1\nname: t\nchecks:\n  - kind: python\n    version: \"3\"\n";
  std::filesystem::create_directories(dir.path() / "root");
  daemon::AgentConfig config;
  config.contract = (dir.path() / "contract.yaml").string();
  config.roots = {dir.path() / "root"};
  config.database = dir.path() / "agent.db";
  config.interval = interval;
  return config;
}

}  // namespace envcontract::testing
