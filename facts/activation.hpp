#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

// An env's environment variables, bare and activated: facts that probes
// write and judges read (docs/probes.md).
namespace envcontract::facts {

using Json = nlohmann::ordered_json;

// A process environment: every variable by name.
using Environment = std::map<std::string, std::string>;

// The two ways a user runs an env: `env/bin/python` straight, or after
// `conda activate` / `source bin/activate`. Facts gathered both ways tell an
// activation artifact from a real fault.
enum class Activation { bare, activated };

std::string to_string(Activation activation);

struct ActivatedEnvironment {
  Environment bare;
  Environment activated;
  std::vector<std::filesystem::path> scripts;  // what ran, in order
  std::string fingerprint;                     // changes whenever an activation input changes
  std::string problem;                         // why activation failed; `activated` is then `bare`
  // What the scripts wrote to stderr when activation failed: for the local
  // verbs (facts, probe, snapshot), never for reports served over HTTP (a
  // `set -x` trace shows every value it sets).
  std::string problem_output;
  std::string script_output;  // what the scripts printed (stdout and stderr)
  // conda env_vars that were not applied, each with why (not a shell name,
  // or a name that changes how bash itself starts, such as BASH_ENV).
  std::vector<std::string> refused_variables;
};

// Differences between two environments: variables added, removed or changed.
struct EnvironmentChange {
  std::string name;
  std::string before;  // "" when added
  std::string after;   // "" when removed
};
std::vector<EnvironmentChange> environment_changes(const Environment& before,
                                                   const Environment& after);

Json to_json(const ActivatedEnvironment& activation);

}  // namespace envcontract::facts
