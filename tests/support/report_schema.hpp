#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace envcontract::testing {

// Validates `document` against docs/report.schema.json with Debian's python3
// and python3-jsonschema (tests/support/validate_json.py). Returns "" when
// valid, else every violation with its JSON path; nullopt when the validator
// is not installed (scripts/test installs it).
std::optional<std::string> report_schema_violations(const nlohmann::ordered_json& document);

// The same against any schema of docs/ (e.g. "plan.schema.json").
std::optional<std::string> schema_violations(const nlohmann::ordered_json& document,
                                             const std::string& schema_in_docs);

}  // namespace envcontract::testing
