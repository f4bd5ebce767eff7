#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>

#include "discovery/discovery.hpp"
#include "discovery/image_tag.hpp"

namespace envcontract::daemon {

struct SnapshotOptions {
  discovery::DiscoveryOptions discovery;
  discovery::ImageTagSource image;
  std::string env;                      // which env ("" when discovery finds exactly one)
  std::filesystem::path base_contract;  // optional: its devices and smoke checks are kept
  std::string name;                     // the new contract's name ("" : "<env>-snapshot")
  bool pin = false;                     // pin every distribution at its version
  std::filesystem::path output;         // "" or "-": stdout
};

// `envcontractd snapshot`: reads the env's files, activates it, imports its
// packages and runs the base contract's device and smoke checks in it, then
// writes a native contract that states what it is. The contract is loaded
// before it is written: an invalid one is never written. 0 written, 2 error.
int run_snapshot(const SnapshotOptions& options, std::ostream& out, std::ostream& err);

}  // namespace envcontract::daemon
