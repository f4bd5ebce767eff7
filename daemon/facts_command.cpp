#include "daemon/facts_command.hpp"

#include <ostream>

#include "common/json_text.hpp"

namespace envcontract::daemon {

int run_facts(const probes::HostFactsOptions& options, std::ostream& out, std::ostream& err) {
  const auto facts = probes::gather_host_facts(options, std::make_shared<probes::FactCaches>());
  out << common::json_text(probes::to_json(facts), 2) << "\n";
  for (const auto& problem : facts.problems) {
    err << "warning: " << problem.path.string() << ": " << problem.problem << "\n";
  }
  if (facts.envs.empty()) {
    err << "envcontractd facts: no Python environment found; name env roots with --root or "
           "envs with --prefix\n";
    return 1;
  }
  return 0;
}

}  // namespace envcontract::daemon
