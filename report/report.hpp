#pragma once

#include <string>

#include "contracts/host_judgement.hpp"
#include "facts/host.hpp"

namespace envcontract::report {

using Json = contracts::Json;

// The report format's version; docs/report.schema.json describes it.
inline constexpr int schema_version = 1;

struct ContractIdentity {
  std::string name;
  std::string path;
  std::string sha256;    // of the contract file's bytes
  std::string platform;  // the contract's `platform:`, "" when it names none
};

// Builds the versioned report (docs/report.md) from a host's judgement and the
// facts it was judged on. `since` is null and `flapping` false on every check:
// only a store that keeps history can tell (daemon/store.hpp fills them in).
Json build_report(const ContractIdentity& contract, const contracts::HostJudgement& judgement,
                  const facts::HostFacts& host_facts, double duration_ms);

// The one line that sums up an env's report entry: its first failing
// required check, and how many more there are.
std::string env_summary(const Json& env);

// The exit status a report maps to: 0 compliant, 1 drift, 2 error.
int exit_status(const Json& report);

}  // namespace envcontract::report
