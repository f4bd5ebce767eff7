#include "contracts/env_facts.hpp"

namespace envcontract::contracts {

namespace {

const Json& null_json() {
  static const Json null_value = nullptr;
  return null_value;
}

const Json& empty_array() {
  static const Json empty = Json::array();
  return empty;
}

const Json& member(const Json& object, const char* key) {
  if (!object.is_object()) {
    return null_json();
  }
  const auto it = object.find(key);
  return it == object.end() ? null_json() : *it;
}

}  // namespace

std::string string_field(const Json& object, const char* key) {
  const Json& value = member(object, key);
  return value.is_string() ? value.get<std::string>() : std::string();
}

const Json& object_field(const Json& object, const char* key) {
  static const Json empty = Json::object();
  const Json& value = member(object, key);
  return value.is_object() ? value : empty;
}

const Json& array_field(const Json& object, const char* key) {
  const Json& value = member(object, key);
  return value.is_array() ? value : empty_array();
}

const Json* find_entry(const Json& list, const char* key, const std::string& value) {
  if (!list.is_array()) {
    return nullptr;
  }
  for (const auto& entry : list) {
    if (string_field(entry, key) == value) {
      return &entry;
    }
  }
  return nullptr;
}

std::string EnvFactsView::prefix() const {
  return string_field(m_facts, "prefix");
}

std::string EnvFactsView::python_version() const {
  return string_field(m_facts, "python_version");
}

std::string EnvFactsView::site() const {
  const Json& sites = member(member(m_facts, "static"), "site_packages");
  return sites.is_array() && !sites.empty() && sites[0].is_string() ? sites[0].get<std::string>()
                                                                    : prefix() + "/lib";
}

std::vector<std::string> EnvFactsView::sites() const {
  std::vector<std::string> dirs;
  for (const auto& site : member(member(m_facts, "static"), "site_packages")) {
    if (site.is_string()) {
      dirs.push_back(site.get<std::string>());
    }
  }
  if (dirs.empty()) {
    dirs.push_back(site());
  }
  return dirs;
}

const Json& EnvFactsView::torch() const {
  return member(member(m_facts, "static"), "torch");
}

const Json& EnvFactsView::triton() const {
  return member(member(m_facts, "static"), "triton");
}

std::vector<std::string> EnvFactsView::modules() const {
  std::vector<std::string> names;
  for (const auto& module : member(member(m_facts, "static"), "modules")) {
    if (module.is_string()) {
      names.push_back(module.get<std::string>());
    }
  }
  return names;
}

const Json& EnvFactsView::distributions() const {
  const Json& list = member(member(m_facts, "static"), "distributions");
  return list.is_array() ? list : empty_array();
}

const Json& EnvFactsView::environment(const std::string& activation) const {
  const Json& activation_facts = member(m_facts, "activation");
  if (activation == "bare") {
    // The bare environment is the activated one less what activation changed.
    return member(activation_facts, "bare");
  }
  return member(activation_facts, "activated");
}

const Json& EnvFactsView::libraries(const std::string& activation) const {
  const Json& list = member(member(member(m_facts, "linkage"), activation.c_str()), "libraries");
  return list.is_array() ? list : empty_array();
}

const Json* EnvFactsView::stage(std::string_view name, std::string_view activation) const {
  for (const auto& stage : member(member(m_facts, "dynamic"), "stages")) {
    if (string_field(stage, "stage") == name && string_field(stage, "activation") == activation) {
      return &stage;
    }
  }
  return nullptr;
}

const Json* EnvFactsView::activation_artifact(std::string_view stage) const {
  for (const auto& artifact : member(member(m_facts, "dynamic"), "activation_artifacts")) {
    if (string_field(artifact, "stage") == stage) {
      return &artifact;
    }
  }
  return nullptr;
}

bool EnvFactsView::has_dynamic_facts() const {
  return member(m_facts, "dynamic").is_object();
}

facts::PathAnchors EnvFactsView::anchors() const {
  facts::PathAnchors anchors;
  anchors.prefix = prefix();
  anchors.sites = sites();
  const Json& variables = environment("activated");
  if (variables.is_object()) {
    for (const auto& [name, value] : variables.items()) {
      if (value.is_string()) {
        anchors.variables[name] = value.get<std::string>();
      }
    }
  }
  return anchors;
}

std::string EnvFactsView::expand(const std::string& pattern) const {
  const auto expansions = facts::expand_path_pattern(pattern, anchors());
  return expansions.empty() ? std::string() : expansions.front();
}

std::vector<std::string> EnvFactsView::expand_all(const std::string& pattern) const {
  return facts::expand_path_pattern(pattern, anchors());
}

std::vector<std::string> EnvFactsView::unset_variables(const std::string& pattern) const {
  return facts::unset_variables(pattern, anchors().variables);
}

}  // namespace envcontract::contracts
