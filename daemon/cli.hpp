#pragma once

namespace envcontract::daemon {

// The whole `envcontractd` command line: parses arguments and runs the verb.
// Exit codes: 0 success, 1 a verb's negative answer (invalid contract, drift),
// 2 usage or runtime error.
int run_envcontractd(int argc, char** argv);

}  // namespace envcontract::daemon
