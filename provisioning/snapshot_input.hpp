#pragma once

#include <string>
#include <vector>

#include "contracts/contract.hpp"
#include "facts/dynamic.hpp"
#include "facts/host.hpp"
#include "provisioning/snapshot.hpp"

// From one env's facts to what its snapshot contract is written from
// (snapshot.hpp): what it imports, what activation sets, its packages, the
// base contract's device counts and snippets with what they gave. No I/O:
// `envcontractd snapshot` gathers the facts and writes the file.
namespace envcontract::provisioning {

// What the snapshot is made of beyond the env's facts.
struct SnapshotSource {
  std::string name{};   // the contract's name; "" for "<env>-snapshot"
  std::string host{};   // the host the env is on
  std::string image{};  // the image the host runs, "" when it says none
  bool pin = false;     // distributions pinned to their versions
  // The base contract (its platform, device counts and smoke snippets), or null.
  const contracts::Contract* base = nullptr;
  // The modules the env's probe was asked to import, in order.
  std::vector<std::string> imports{};
};

// What to import in the env, in the order a user would: torch first, what
// builds on it, triton last; the packaging tools and private names left out.
std::vector<std::string> candidate_imports(const facts::StaticFacts& facts);

// Everything the contract is written from: the env's static facts, what its
// probe gave (`dynamic`), what activation sets, the base contract's checks.
SnapshotInput snapshot_input(const facts::EnvFacts& env, const facts::DynamicFacts& dynamic,
                             const SnapshotSource& source);

}  // namespace envcontract::provisioning
