#include "facts/activation.hpp"

#include <algorithm>

namespace envcontract::facts {

std::string to_string(Activation activation) {
  return activation == Activation::bare ? "bare" : "activated";
}

std::vector<EnvironmentChange> environment_changes(const Environment& before,
                                                   const Environment& after) {
  std::vector<EnvironmentChange> changes;
  for (const auto& [name, value] : after) {
    const auto it = before.find(name);
    if (it == before.end() || it->second != value) {
      changes.push_back({name, it == before.end() ? "" : it->second, value});
    }
  }
  for (const auto& [name, value] : before) {
    if (!after.contains(name)) {
      changes.push_back({name, value, ""});
    }
  }
  std::sort(changes.begin(), changes.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return changes;
}

Json to_json(const ActivatedEnvironment& activation) {
  auto scripts = Json::array();
  for (const auto& script : activation.scripts) {
    scripts.push_back(script.string());
  }
  auto changes = Json::object();
  for (const auto& change : environment_changes(activation.bare, activation.activated)) {
    changes[change.name] = {{"bare", change.before}, {"activated", change.after}};
  }
  return {{"scripts", scripts},
          {"problem", activation.problem},
          {"problem_output", activation.problem_output},
          {"refused_variables", activation.refused_variables},
          {"changes", changes},
          {"bare", activation.bare},
          {"activated", activation.activated}};
}

}  // namespace envcontract::facts
