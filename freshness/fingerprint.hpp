#pragma once

#include <string>
#include <vector>

#include "facts/host.hpp"

// Whether an env must be probed again: its facts and the state of the files
// that decide them, hashed. The change watch (freshness/kept_facts.hpp)
// answers first where it runs; an env whose facts were kept keeps its
// fingerprint without a stat (freshness/probe_cache.hpp).
namespace envcontract::freshness {

// What decides whether an env must be probed again, taken from its facts
// on the scan's thread: the contract's hash and its files' facts (metadata,
// packages, torch and triton files, its activation, the libraries its
// extensions resolve to) as text, and the files whose contents decide those
// facts without always changing them (the interpreter, every library of
// the closure, torch's and triton's version files, each module, each
// distribution's metadata).
struct FingerprintInput {
  std::string material;
  std::vector<std::string> files;  // sorted, each once
};
FingerprintInput fingerprint_input(const facts::EnvFacts& env, const std::string& contract_sha256);

// The fingerprint: the material and the size, modification and change time
// and inode of each file (stat only, never opened: on a stalled mount it
// blocks, which the caller bounds).
std::string env_fingerprint(const FingerprintInput& input);

}  // namespace envcontract::freshness
