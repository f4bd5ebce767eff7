#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace envcontract::daemon {

// Where a gate looks for the contract a job brings (docs/ci.md).
struct GateContractInputs {
  std::string contract;  // --contract: a file, "auto", or "" to look in the workspace
  std::string platform;  // --platform (or $ENVCONTRACT_PLATFORM): .github/configs/<platform>.yml
  std::vector<std::string> runner_labels;  // the runner's labels: the config that asks for them
  std::filesystem::path workspace;         // the job's checkout
  std::filesystem::path contracts_dir;     // for "auto"
  std::filesystem::path detect_root = "/";
};

struct GateContract {
  std::filesystem::path file;
  std::string why;  // "--platform kunlunxin", "the runner's labels torch-fl-xpu"
};

// The contract file, chosen as the job's CI chooses its platform config:
// the one named (--contract, or "auto": detected from this host's devices
// and tools), else the workspace's .github/configs/<platform>.yml for
// `platform`, else the config whose runner_labels the runner has, else the
// workspace's only config. An error lists what was looked for and found.
common::Result<GateContract> choose_gate_contract(const GateContractInputs& inputs);

}  // namespace envcontract::daemon
