#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "contracts/contract.hpp"
#include "report/report_model.hpp"

// From drift to the steps that end it: each drifting env's report entry and
// the contract become an ordered plan (docs/provisioning.md). A plan is data;
// nothing here runs anything.
namespace envcontract::provisioning {

using Json = nlohmann::ordered_json;

enum class StepAction {
  remove_distribution,   // pip uninstall
  install_distribution,  // pip install a specifier (the recipe's, or the contract's version)
  set_variable,          // activation: conda env_vars, or bin/activate for a venv
  remove_file,           // a file no package owns
  manual,                // what no agent can do: the image, a driver, a device; `ask` says what
  rescan,                // the facts are missing: the agent's side, not the env's
};

std::string to_string(StepAction action);

struct PlanStep {
  StepAction action = StepAction::manual;
  std::string target;              // a distribution, a variable, a path; "" for some manual steps
  std::string value;               // the specifier or the variable's value
  std::string why;                 // one line: the failure it answers
  std::string command;             // what to run in place (a person may copy it); "" when manual
  std::string ask;                 // for manual steps: what to ask for, and of whom
  std::vector<std::string> fixes;  // the check ids it makes pass (or lets run)
};

// A check that is not planned, with why: it was blocked by another (fixed
// with it), or its cause is not something a plan can change.
struct Unplanned {
  std::string check;
  std::string cause;
  std::string why;
};

struct EnvPlan {
  std::string env;
  std::string prefix;
  std::string verdict;  // the env's, from the report
  // A new env is the better route: the steps replace torch (every extension
  // was built against the old one), change the Python version, or the env is
  // broken. `provision` builds one from the contract's recipe.
  bool fresh_env = false;
  std::string fresh_env_why;
  std::vector<PlanStep> steps;  // in the order to take them
  std::vector<Unplanned> unplanned;
};

struct HostPlan {
  std::string host;
  std::string contract;
  bool recipe = false;               // the contract has a provision recipe
  std::vector<PlanStep> host_steps;  // the host's own (its image)
  std::vector<EnvPlan> envs;         // drifting envs only
};

// The plan for every env of `report` that does not comply (or only `env`,
// when not empty), using the contract's provision recipe for specifiers and
// index options where it has one.
HostPlan build_plan(const report::Report& report, const contracts::Contract& contract,
                    const std::string& env = "");

Json to_json(const HostPlan& plan);
Json to_json(const EnvPlan& plan);

// For people: each env, its route, then numbered steps with what they fix.
std::string render_plan(const HostPlan& plan);

// How each cause of the report's vocabulary is planned: the action, or why it
// cannot be (docs/provisioning.md lists the same; a test holds them together).
struct CausePlanning {
  std::string cause;
  std::string planned_as;  // a StepAction's name, "not planned" or "route"
  std::string note;
};
const std::vector<CausePlanning>& cause_planning();

}  // namespace envcontract::provisioning
