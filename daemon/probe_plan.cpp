#include "daemon/probe_plan.hpp"

#include "contracts/check_kind.hpp"

namespace envcontract::daemon {

probes::ProbePlan plan_from_contract(const contracts::Contract* contract) {
  probes::ProbePlan plan;
  if (contract != nullptr) {
    static_cast<facts::ProbeRequest&>(plan) = contracts::probe_request(contract->checks);
  } else {
    plan.torch_identity = true;  // without a contract, torch's identity is what is probed
  }
  return plan;
}

}  // namespace envcontract::daemon
