#pragma once

namespace envcontract::cli {

// The whole `fleetctl` command line. Exit codes: 0 every host complies (or
// no difference, or all contracts valid), 1 drift somewhere (a difference,
// an invalid contract), 2 an error: bad arguments, an unreachable host, an
// answer that is not a report, a host the agent could not judge.
int run_fleetctl(int argc, char** argv);

}  // namespace envcontract::cli
