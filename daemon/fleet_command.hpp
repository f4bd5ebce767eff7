#pragma once

#include <memory>
#include <optional>

namespace CLI {
class App;
}

namespace envcontract::daemon {

// `envcontractd fleet`: serves the fleet view (a page and /api/v1/fleet)
// from Prometheus or from an inventory of agents (docs/fleet.md).
class FleetCli {
 public:
  explicit FleetCli(CLI::App& app);
  ~FleetCli();
  FleetCli(const FleetCli&) = delete;
  FleetCli& operator=(const FleetCli&) = delete;

  // The exit status when `fleet` was parsed, or nullopt.
  std::optional<int> run();

 private:
  struct Arguments;
  std::unique_ptr<Arguments> m_arguments;
};

}  // namespace envcontract::daemon
