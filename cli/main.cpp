#include "cli/fleetctl.hpp"

int main(int argc, char** argv) {
  return envcontract::cli::run_fleetctl(argc, argv);
}
