#pragma once

#include <iosfwd>

#include "probes/host_facts.hpp"

namespace envcontract::daemon {

// `envcontractd facts`: discovers the host's envs and prints what their files
// tell (no env code runs) as JSON. Returns 0, or 1 when no env was found.
int run_facts(const probes::HostFactsOptions& options, std::ostream& out, std::ostream& err);

}  // namespace envcontract::daemon
