#pragma once

#include "probes/dynamic_probe.hpp"

namespace envcontract::testing {

// A plan as a contract with a torch check makes it: identity (import torch)
// runs first, and what imports torch waits for it.
inline probes::ProbePlan torch_contract_plan() {
  probes::ProbePlan plan;
  plan.torch_identity = true;
  return plan;
}

}  // namespace envcontract::testing
