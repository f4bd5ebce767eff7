#pragma once

#include <string>
#include <vector>

#include "contracts/contract_loader.hpp"

namespace envcontract::testing {

// Loads contract text as if from "contract.yaml" in the current directory.
contracts::LoadResult load_text(const std::string& text);

// Loads a native contract holding just the given check list (YAML lines that
// start with "- "), indented under `checks:`.
contracts::LoadResult load_checks(const std::string& checks_yaml);

// Every diagnostic, one "file:line:column: level: message" per entry, sorted.
std::vector<std::string> messages(const contracts::LoadResult& result);

// The error messages joined with newlines, for readable assertion failures.
std::string joined(const contracts::LoadResult& result);

}  // namespace envcontract::testing
