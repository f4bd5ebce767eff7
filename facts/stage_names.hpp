#pragma once

#include <string>
#include <string_view>

// The names of the dynamic probe stages, spelt once: probes name the stages
// they run with these, judges find the stage of a check with the same ones.
namespace envcontract::facts::stage_names {

// torch's own view of itself (`import torch` and its version record).
inline constexpr std::string_view identity = "identity";
// The interpreter alone (its version and sys.path), when no check runs a
// Python stage: never compliant on an interpreter that was never started.
inline constexpr std::string_view interpreter = "interpreter";
// The imports every imports check of the contract asked for, in order.
inline constexpr std::string_view imports = "imports";

// The stage of one check, named after the check's id: its devices
// expression, smoke snippet, or shell command.
inline std::string devices(std::string_view check_id) {
  return "devices:" + std::string(check_id);
}
inline std::string smoke(std::string_view check_id) {
  return "smoke:" + std::string(check_id);
}
inline std::string command(std::string_view check_id) {
  return "command:" + std::string(check_id);
}

// The record in a command stage that was not run because an earlier
// fail-fast command of its group failed: {"type": this, "blocked_by": id}.
inline constexpr std::string_view fail_fast_stop = "stopped_by_fail_fast";

}  // namespace envcontract::facts::stage_names
