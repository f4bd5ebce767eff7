#include "daemon/cli.hpp"

int main(int argc, char** argv) {
  return envcontract::daemon::run_envcontractd(argc, argv);
}
