#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "discovery/discovery.hpp"

namespace envcontract::daemon {

struct ProbeOptions {
  discovery::DiscoveryOptions discovery;
  std::optional<std::filesystem::path> contract;  // decides what runs in each env
  std::vector<std::string> only_envs;             // names; empty: every env
  unsigned concurrency = 0;                       // 0: number of cores
};

// `envcontractd probe`: runs the dynamic probes in every env found and prints
// one JSON object per env (JSON Lines) as soon as that env is done, so a slow
// env never holds back the others. Progress goes to stderr on a terminal.
// Returns 0, 1 when no env was found, 2 when the contract is invalid.
int run_probe(const ProbeOptions& options, std::ostream& out, std::ostream& err);

}  // namespace envcontract::daemon
