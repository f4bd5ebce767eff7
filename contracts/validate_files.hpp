#pragma once

#include <filesystem>
#include <iosfwd>
#include <vector>

namespace envcontract::contracts {

enum class ValidateOutput { verdicts, normalized_json };

// `envcontractd validate` and `fleetctl contract validate`: checks each contract file and prints
// "FILE: ok" or its diagnostics (to `err`). With ValidateOutput::normalized_json, prints the
// normalised contract of the single file as JSON instead of "ok".
// A directory stands for its .yaml and .yml files (CI configs included), in
// name order; one that holds none is an error.
// Returns 0 when every file is valid, 1 when any is not, 2 for --print of a
// directory.
int validate_files(const std::vector<std::filesystem::path>& files, ValidateOutput output,
                   std::ostream& out, std::ostream& err);

}  // namespace envcontract::contracts
