#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "contracts/contract.hpp"
#include "contracts/diagnostics.hpp"

namespace envcontract::contracts {

struct LoadResult {
  std::optional<Contract> contract;  // set only when there are no errors
  Diagnostics diagnostics;           // every error and warning, in one pass
};

struct LoadOptions {
  // Entries of a platform config's integration_tests to run although they
  // are no preflight (by id, name or check id): the agent's
  // run_integration_tests. A name the config does not have is an error.
  std::vector<std::string> run_tests;
  // A checkout of the repository whose platform configs integration_test
  // checks name as "{checkout}/...": the agent's `checkout`. Empty: such
  // checks are skipped (needs_checkout), never a load error.
  std::filesystem::path checkout;
};

// Loads a contract in any of the accepted forms: our native schema, the
// environment-check form, a CI platform config, or a mix of their sections.
LoadResult load_contract_file(const std::filesystem::path& path, const LoadOptions& options = {});

// The same for text in memory; `path` names it in messages and resolves
// relative `from:` references.
LoadResult load_contract_text(const std::string& text, const std::filesystem::path& path,
                              const LoadOptions& options = {});

}  // namespace envcontract::contracts
