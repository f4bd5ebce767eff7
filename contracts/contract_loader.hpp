#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "contracts/contract.hpp"
#include "contracts/diagnostics.hpp"

namespace envcontract::contracts {

struct LoadResult {
  std::optional<Contract> contract;  // set only when there are no errors
  Diagnostics diagnostics;           // every error and warning, in one pass
};

// Loads a contract in any of the accepted forms: our native schema, the
// environment-check form, a CI platform config, or a mix of their sections.
LoadResult load_contract_file(const std::filesystem::path& path);

// The same for text in memory; `path` names it in messages and resolves
// relative `from:` references.
LoadResult load_contract_text(const std::string& text, const std::filesystem::path& path);

}  // namespace envcontract::contracts
