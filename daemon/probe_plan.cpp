#include "daemon/probe_plan.hpp"

#include "contracts/check_kind.hpp"

namespace envcontract::daemon {

probes::ProbePlan plan_from_contract(const contracts::Contract* contract) {
  probes::ProbePlan plan;
  if (contract != nullptr) {
    static_cast<facts::ProbeRequest&>(plan) = contracts::probe_request(contract->checks);
  }
  return plan;
}

}  // namespace envcontract::daemon
