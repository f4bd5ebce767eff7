#pragma once

#include <string>
#include <vector>

#include "contracts/contract.hpp"
#include "probes/dynamic_probe.hpp"

namespace envcontract::daemon {

// What the contract's checks need gathered and run in each env, as each
// kind of the registry requests it (contracts::probe_request), with the
// runner's defaults. Without a contract, only torch's identity is probed.
probes::ProbePlan plan_from_contract(const contracts::Contract* contract);

}  // namespace envcontract::daemon
