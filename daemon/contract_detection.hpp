#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace envcontract::daemon {

struct DetectedContract {
  std::filesystem::path file;
  std::string why;  // "found /dev/xpu0 and xpu-smi"
};

// `contract: auto`: picks the contract in `contracts_dir` whose `detect`
// signals this host shows: device nodes (globs, looked for under `root`) and
// vendor tools (on PATH and in the usual bin dirs, under `root`). The
// contract matching the most signals wins; between equals, the platform's
// main contract (its name is the platform's). Anything else is an error that
// lists what was looked for.
common::Result<DetectedContract> detect_contract(const std::filesystem::path& contracts_dir,
                                                 const std::filesystem::path& root);

}  // namespace envcontract::daemon
