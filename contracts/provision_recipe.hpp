#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "contracts/diagnostics.hpp"

namespace YAML {
class Node;
}

namespace envcontract::contracts {

class MappingReader;

// How to build an env that complies, from nothing: the contract's optional
// `provision:` section (docs/provisioning.md). Templates may use the
// placeholders {prefix} (the new env), {python} (its interpreter),
// {wheelhouse} and {name}; each is substituted into one argument, never
// through a shell.
struct ProvisionRecipe {
  // "3.10": an interpreter of that version found on the host; or an
  // absolute path to one.
  std::string python;
  // "venv" (python -m venv), or a command template that lays out a prefix
  // at {prefix}, such as "micromamba create --yes --prefix {prefix} python=3.10".
  std::string create = "venv";
  std::vector<std::string> packages;  // pip requirement specifiers, installed in one pip run
  std::string wheelhouse;             // pip --find-links (an absolute directory), or ""
  std::string index_url;              // pip --index-url, or ""
  bool no_index = false;              // pip --no-index: the wheelhouse only
  // Activation written into the new env: conda's env_vars and activate.d
  // scripts for a conda-style prefix, a block at the end of bin/activate
  // for a venv.
  std::vector<std::pair<std::string, std::string>> env_vars;
  std::vector<std::pair<std::string, std::string>> activate_scripts;  // file name, text
  std::vector<std::string> commands;                                  // templates, run in order
  SourceLocation origin;

  bool creates_venv() const { return create == "venv"; }
};

// The placeholders templates may use.
const std::vector<std::string>& provision_placeholders();

// Reads `provision:` of `top` into a recipe; every problem goes to the
// context's diagnostics at its own line. nullopt when the section is absent
// or has errors.
std::optional<ProvisionRecipe> read_provision_recipe(MappingReader& top);

nlohmann::ordered_json to_json(const ProvisionRecipe& recipe);

// A command template split into arguments as a shell would split words
// (blanks, single and double quotes, backslash), without any expansion.
// nullopt for an unterminated quote.
std::optional<std::vector<std::string>> split_command_template(const std::string& text);

}  // namespace envcontract::contracts
