#pragma once

#include <memory>
#include <optional>

namespace CLI {
class App;
}

namespace envcontract::daemon {

// The provisioning verbs of envcontractd (plan, provision, promote,
// rollback): their options, and running the one that was parsed.
class ProvisioningCli {
 public:
  explicit ProvisioningCli(CLI::App& app);
  ~ProvisioningCli();
  ProvisioningCli(const ProvisioningCli&) = delete;
  ProvisioningCli& operator=(const ProvisioningCli&) = delete;

  // The exit status of the verb parsed, or nullopt when none of these was.
  std::optional<int> run();

 private:
  struct Arguments;
  std::unique_ptr<Arguments> m_arguments;
};

}  // namespace envcontract::daemon
