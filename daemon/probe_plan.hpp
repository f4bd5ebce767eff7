#pragma once

#include <string>
#include <vector>

#include "contracts/contract.hpp"
#include "probes/dynamic_probe.hpp"

namespace envcontract::daemon {

// What the contract's checks need run inside each env: the modules of its
// `imports` checks (and of torch checks judged after importing), its device
// expressions and its smoke snippets, with their timeouts. Without a
// contract, only torch's identity is probed.
probes::ProbePlan plan_from_contract(const contracts::Contract* contract);

// The library names the contract's `libraries` checks ask about: each env's
// loader is asked where it finds them while the static facts are gathered.
std::vector<std::string> library_names_from_contract(const contracts::Contract& contract);

}  // namespace envcontract::daemon
