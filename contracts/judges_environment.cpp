// Judges of the environment an activated env gives its processes.
#include <algorithm>
#include <sstream>

#include "common/json_text.hpp"
#include "common/shown_values.hpp"
#include "contracts/judges.hpp"

namespace envcontract::contracts::judges {
namespace {

facts::Activation activation_of(ActivationMode mode) {
  return mode == ActivationMode::bare ? facts::Activation::bare : facts::Activation::activated;
}

// Marks `result` unknown when the environment it is judged on is: true then.
bool environment_unknown(ActivationMode mode, const EnvFactsView& facts, CheckResult& result) {
  if (mode == ActivationMode::bare) {
    return false;
  }
  const std::string why = facts.activated_environment_unknown();
  if (!why.empty()) {
    not_gathered(result, "the activated environment is not known: " + why);
  }
  return !why.empty();
}

}  // namespace

void environment(const Check&, const EnvironmentParams& params, const EnvFactsView& facts,
                 CheckResult& result) {
  if (environment_unknown(params.activation, facts, result)) {
    return;
  }
  const std::string activation = to_string(params.activation);
  const auto& variables = facts.environment(activation_of(params.activation));
  Json actual = Json::object();
  // Compared as they are; shown as reports may show them (a check of
  // HF_TOKEN must not put the token in every report).
  auto raw_value_of = [&](const std::string& name) -> Json {
    const auto found = variables.find(name);
    return found == variables.end() ? Json(nullptr) : Json(found->second);
  };
  auto value_of = [&](const std::string& name) -> Json {
    const auto found = variables.find(name);
    return found == variables.end() ? Json(nullptr)
                                    : Json(common::shown_variable_value(name, found->second));
  };
  auto remedy = "set it in the env's etc/conda/activate.d (or unset it there)";
  for (const auto& [name, wanted] : params.equals) {
    actual[name] = value_of(name);
    if (raw_value_of(name) != Json(wanted)) {
      result.actual = actual;
      fail(result, "environment_mismatch",
           name + " is " +
               (actual[name].is_null() ? std::string("unset") : common::json_text(actual[name])) +
               " " + activation + ", the contract wants " + common::json_text(Json(wanted)),
           {{"variable", name}, {"value", actual[name]}}, remedy);
      return;
    }
  }
  for (const auto& name : params.set) {
    actual[name] = value_of(name);
    if (value_of(name).is_null()) {
      result.actual = actual;
      fail(result, "environment_mismatch", name + " is not set " + activation, {{"variable", name}},
           remedy);
      return;
    }
  }
  for (const auto& name : params.unset) {
    actual[name] = value_of(name);
    if (!value_of(name).is_null()) {
      result.actual = actual;
      fail(result, "environment_mismatch",
           name + " is set (" + common::json_text(value_of(name)) + ") " + activation +
               "; the contract wants it unset",
           {{"variable", name}, {"value", value_of(name)}}, remedy);
      return;
    }
  }
  result.actual = actual;
  pass(result);
}

void search_path(const Check&, const SearchPathParams& params, const EnvFactsView& facts,
                 CheckResult& result) {
  if (environment_unknown(params.activation, facts, result)) {
    return;
  }
  const std::string& variable = params.variable;
  const std::string activation = to_string(params.activation);
  const auto& variables = facts.environment(activation_of(params.activation));
  const auto found = variables.find(variable);
  const std::string value = found == variables.end() ? "" : found->second;
  std::vector<std::string> entries;
  std::istringstream parts(value);
  for (std::string entry; std::getline(parts, entry, ':');) {
    if (!entry.empty()) {
      entries.push_back(entry);
    }
  }
  result.actual = value;
  const Json evidence = {{"variable", variable}, {"value", value}, {"activation", activation}};
  std::size_t position = 0;
  for (const auto& dir : params.starts_with) {
    const auto unset = facts.unset_variables(dir);
    if (!unset.empty()) {
      fail(result, "search_path_mismatch",
           variable + " cannot start with " + dir + ": " + unset.front() +
               " is not set when the env is activated",
           evidence, "set " + unset.front() + " in the env's etc/conda/activate.d script");
      return;
    }
    // Its entries name paths as the env's processes do (inside its container).
    const auto candidates = facts.expand_all_as_env_sees(dir);
    const std::string wanted = candidates.front();
    if (position >= entries.size() ||
        std::find(candidates.begin(), candidates.end(), entries[position]) == candidates.end()) {
      fail(result, "search_path_mismatch",
           variable + " does not start with " + wanted + " (entry " + std::to_string(position + 1) +
               " is " + (position < entries.size() ? entries[position] : std::string("missing")) +
               ")",
           evidence, "put the vendor directories first in the env's activate.d script");
      return;
    }
    ++position;
  }
  for (const auto& root : params.must_not_contain) {
    for (const auto& forbidden : facts.expand_all_as_env_sees(root)) {
      // Under it as a path: /usr/lib64 is not under /usr/lib.
      const std::string directory = forbidden.size() > 1 && forbidden.ends_with('/')
                                        ? forbidden.substr(0, forbidden.size() - 1)
                                        : forbidden;
      for (const auto& entry : entries) {
        if (entry != directory && !entry.starts_with(directory == "/" ? "/" : directory + "/")) {
          continue;
        }
        fail(result, "search_path_mismatch",
             variable + " contains " + entry + ", under " + forbidden, evidence,
             "remove it from the env's activation scripts");
        return;
      }
    }
  }
  pass(result);
}

}  // namespace envcontract::contracts::judges
