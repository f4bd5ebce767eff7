#include "daemon/cli.hpp"
#include "probes/process_runner.hpp"

int main(int argc, char** argv) {
  // Grandchildren of probes that get killed are reaped by us, not left as zombies.
  envcontract::probes::become_subreaper();
  return envcontract::daemon::run_envcontractd(argc, argv);
}
