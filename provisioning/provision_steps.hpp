#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "contracts/provision_recipe.hpp"

// What `envcontractd provision` runs, made from the contract's recipe before
// anything runs: the dry run prints exactly these. No shell is involved:
// each step is an argv, placeholders substituted one argument at a time.
namespace envcontract::provisioning {

struct ProvisionTarget {
  std::string name;                   // the new env's name
  std::filesystem::path envs_dir;     // where it is made: {envs_dir}/{name}
  std::filesystem::path base_python;  // the interpreter it starts from (venv route)
  std::filesystem::path home;         // HOME of the user the steps run as
};

struct ProvisionStep {
  std::string name;  // create, install, activation, command 1, ...
  std::vector<std::string> argv;
  std::map<std::string, std::string> environment;  // complete: nothing else is inherited
  std::filesystem::path working_dir;
  std::string stdin_data;
  // What it does, in words, where the argv says little (the activation
  // writer is a Python program); "" when the command line says it all.
  std::string description;
};

// A name an env can have: letters, digits, ".", "_", "-"; not starting
// with "." or "-". "" when it is one, else why not.
std::string env_name_problem(const std::string& name);

// The recipe's interpreter: its absolute path when it is one (it must be an
// executable file), else "pythonX.Y" looked for in `search_dirs` in order.
common::Result<std::filesystem::path> find_base_python(
    const contracts::ProvisionRecipe& recipe,
    const std::vector<std::filesystem::path>& search_dirs);

// The steps, in order: create the env, install the packages in one pip run,
// write the activation (when the recipe has any), then the recipe's commands.
std::vector<ProvisionStep> provision_steps(const contracts::ProvisionRecipe& recipe,
                                           const ProvisionTarget& target);

// `word` as one shell word: as it is when it needs no quoting, else in
// single quotes.
std::string shell_quoted(const std::string& word);

// One line a person can paste into a shell (each argument quoted as needed).
std::string command_line(const std::vector<std::string>& argv);

}  // namespace envcontract::provisioning
