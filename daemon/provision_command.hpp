#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "daemon/agent_config.hpp"
#include "daemon/contract_source.hpp"
#include "daemon/scanner.hpp"

// The provisioning verbs: plan, provision, promote, rollback
// (docs/provisioning.md). Each returns its exit status.
namespace envcontract::daemon {

struct ProvisioningCommandOptions {
  std::filesystem::path contract;
  // The contract in force (the agent's, which may differ from the file on
  // disk until it reloads); when set, `contract` is not read again.
  ContractHandle loaded;
  std::vector<std::string> run_tests;  // a CI config's entries to run (run_integration_tests)
  std::filesystem::path checkout;      // the agent's checkout
  ScanSettings scan;                   // how the host is scanned (plan) and new envs verified
  ProvisioningConfig provisioning;
  std::filesystem::path database;  // records every action when set
  // Records an action instead of opening `database` (the agent's own store).
  std::function<void(const report::Json& record)> recorder;
  std::string requested_by;  // who asked, for the record
  bool json = false;         // plan: JSON instead of text
  bool progress_on_terminal = false;
  bool scan_progress = false;  // the scans' progress env by env on `err` (--progress)
  const process::Cancellation* cancellation = nullptr;  // stops a running step (the agent's)
};

// `plan [--env NAME]`: scans, then prints each drifting env's plan.
// 0 nothing to do, 1 steps planned, 2 error.
int run_plan(const ProvisioningCommandOptions& options, const std::string& env, std::ostream& out,
             std::ostream& err);

// `provision --name NEW [--apply]`: the dry run prints the steps; --apply
// runs them, then scans the new env with the whole contract.
// 0 built and compliant (or the dry run), 1 built but drifting, 2 failed.
int run_provision_command(const ProvisioningCommandOptions& options, const std::string& name,
                          bool apply, std::ostream& out, std::ostream& err);

// `promote NEW --as NAME`: scans NEW again; only a compliant env is promoted.
// 0 promoted, 1 refused (it does not comply, or is marked as a failed
// provision), 2 error.
int run_promote(const ProvisioningCommandOptions& options, const std::string& env,
                const std::string& as, std::ostream& out, std::ostream& err);

// `rollback NAME`: the link back to what it pointed to before. 0 done, 2 error.
int run_rollback(const ProvisioningCommandOptions& options, const std::string& name,
                 std::ostream& out, std::ostream& err);

}  // namespace envcontract::daemon
