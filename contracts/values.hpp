#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

// Parsers for the small value languages of a contract: comparisons, durations,
// version specifiers, names. Each returns the value or a message saying what
// was expected (common::Result), so callers can report it at the value's
// position.
namespace envcontract::contracts {

// "N", "== N", ">= N" or "> N": how a count is compared with N.
struct Comparison {
  std::string op;  // "==", ">=" or ">"
  std::int64_t value = 0;

  nlohmann::ordered_json to_json() const { return {{"op", op}, {"value", value}}; }
  bool holds_for(std::int64_t actual) const;
};
common::Result<Comparison> parse_comparison(std::string_view text);

// "500ms", "30s", "5m", "1h", or a plain number of seconds; positive, at most a day.
common::Result<std::chrono::milliseconds> parse_duration(std::string_view text);

// One clause of a PEP 440 version specifier, e.g. {">=", "4.51"}.
struct VersionClause {
  std::string op;  // "==", "!=", ">=", "<=", ">", "<", "~=" or "==="
  std::string version;
};
// "<2", ">=4.51,<5", "==0.7.0", "==3.10.*". A bare version ("0.7.0") means
// "==0.7.0", or "==3.10.*" with `BareVersion::prefix`.
enum class BareVersion { exact, prefix };
common::Result<std::vector<VersionClause>> parse_version_specifier(
    std::string_view text, BareVersion bare = BareVersion::exact);
nlohmann::ordered_json to_json(const std::vector<VersionClause>& clauses);

// A release such as "2.10.0", "2.38", or a full PEP 440 version "0.7.0+ascend3.5".
bool is_release_version(std::string_view text);
bool is_pep440_version(std::string_view text);

// Names.
bool is_module_name(std::string_view text);                // torch_fl, triton.backends
bool is_environment_variable_name(std::string_view text);  // LD_LIBRARY_PATH
bool is_distribution_name(std::string_view text);          // flag-gems, torch_fl
bool is_check_id(std::string_view text);                   // torch-cpu-build
bool is_file_name(std::string_view text);                  // libbkcl.so (no slash)

// A container image reference: name[:tag][@algorithm:hex].
struct ImageReference {
  std::string repository;  // everything before the tag or digest
  std::string tag;         // may be empty
  std::string digest;      // "sha256:..." or empty
};
common::Result<ImageReference> parse_image_reference(std::string_view text);

}  // namespace envcontract::contracts
