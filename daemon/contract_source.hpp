#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "contracts/contract.hpp"
#include "report/report.hpp"

namespace envcontract::daemon {

// A contract in force, with what identifies the exact text it came from.
struct LoadedContract {
  contracts::Contract contract;
  report::ContractIdentity identity;  // name, path, sha256 of the file's bytes
  // SHA-256 of the contract as judged (its normalised form, `validate
  // --print`): the same file with another checkout or other integration
  // tests selected is another contract (a CI gate's question to the agent).
  std::string judged_sha256;
};

using ContractHandle = std::shared_ptr<const LoadedContract>;

// Reads and validates a contract file. On failure, returns every error as
// "file:line:column: error: ..." lines, ready to log or print.
// `checkout`: where "{checkout}/..." platform configs are (the agent's
// `checkout`), or empty.
// `run_tests`: a platform config's entries to run although they are no
// preflight (the agent's run_integration_tests).
common::Result<ContractHandle> load_contract(const std::filesystem::path& path,
                                             const std::vector<std::string>& run_tests = {},
                                             const std::filesystem::path& checkout = {});

}  // namespace envcontract::daemon
