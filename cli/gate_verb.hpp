#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace envcontract::cli {

struct GateArguments {
  std::string host;
  std::string env;
  std::string contract;
  std::string output = "table";
  std::string timeout = "10m";
};

// `fleetctl gate HOST`: the CI gate (docs/ci.md) asked of another host's
// agent: its env (or every env) judged now against the agent's contract, or
// the one a file holds when it is the same as judged. Exit status 0 go, 1
// the env breaks the contract, 2 cannot tell (the agent holds another
// contract, does not know the env, cannot be reached).
CLI::App* add_gate_verb(CLI::App& app, GateArguments& arguments);
int run_gate(const GateArguments& arguments);

}  // namespace envcontract::cli
