#pragma once

#include <memory>
#include <optional>

namespace CLI {
class App;
}

namespace envcontract::daemon {

// `envcontractd gate`: a CI job's first step (docs/ci.md).
class GateCli {
 public:
  explicit GateCli(CLI::App& app);
  ~GateCli();
  GateCli(const GateCli&) = delete;
  GateCli& operator=(const GateCli&) = delete;

  // The exit status when `gate` was parsed, or nullopt.
  std::optional<int> run();

 private:
  struct Arguments;
  std::unique_ptr<Arguments> m_arguments;
};

}  // namespace envcontract::daemon
