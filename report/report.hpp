#pragma once

#include <string>

#include "contracts/host_judgement.hpp"
#include "facts/host.hpp"
#include "report/report_model.hpp"

namespace envcontract::report {

// Builds the versioned report (docs/report.md) from a host's judgement and the
// facts it was judged on. `since` is null and `flapping` false on every check:
// only a store that keeps history can tell (daemon/store.hpp fills them in).
Report build_report(const ContractIdentity& contract, const contracts::HostJudgement& judgement,
                    const facts::HostFacts& host_facts, double duration_ms);

// The one line that sums up an env's report entry: its first failing
// required check, and how many more there are.
std::string env_summary(const EnvReport& env);

// The exit status a report maps to: 0 compliant, 1 drift, 2 error.
int exit_status(const Report& report);

}  // namespace envcontract::report
