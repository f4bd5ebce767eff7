#include "daemon/cli.hpp"
#include "process/process_runner.hpp"
#include "process/stall_guard.hpp"

#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  envcontract::process::open_missing_standard_streams();
  // Grandchildren of probes that get killed are reaped by us, not left as zombies.
  envcontract::process::become_subreaper();
  const int status = envcontract::daemon::run_envcontractd(argc, argv);
  // A reader still blocked on a filesystem that does not answer
  // (process/stall_guard.hpp) may wake during exit's destructors, or keep a
  // leak checker's stop-the-world waiting for good: leave at once instead.
  if (envcontract::process::blocked_readers() > 0) {
    std::fflush(nullptr);
    ::_exit(status);
  }
  return status;
}
