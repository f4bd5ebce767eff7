#include "contracts/env_facts.hpp"

#include <algorithm>

namespace envcontract::contracts {

std::string EnvFactsView::site() const {
  const auto& sites = m_facts.static_facts.site_packages;
  return sites.empty() ? prefix() + "/lib" : sites.front().string();
}

std::string EnvFactsView::seen_by_env(const std::string& host_path) const {
  return facts::path_inside_root(m_facts.env.system_root, host_path);
}

std::vector<std::string> EnvFactsView::sites() const {
  std::vector<std::string> dirs;
  for (const auto& site : m_facts.static_facts.site_packages) {
    dirs.push_back(site.string());
  }
  if (dirs.empty()) {
    dirs.push_back(site());
  }
  return dirs;
}

const facts::Environment& EnvFactsView::environment(facts::Activation activation) const {
  return activation == facts::Activation::bare ? m_facts.activation.bare
                                               : m_facts.activation.activated;
}

const std::vector<facts::LibraryLinkage>& EnvFactsView::libraries(
    facts::Activation activation) const {
  static const std::vector<facts::LibraryLinkage> none;
  if (activation == facts::Activation::bare) {
    return m_facts.bare_linkage ? m_facts.bare_linkage->libraries : none;
  }
  return m_facts.linkage.libraries;
}

std::string EnvFactsView::interpreter_version() const {
  if (!m_facts.dynamic) {
    return "";
  }
  for (const auto& stage : m_facts.dynamic->stages) {
    if (stage.activation != facts::Activation::activated) {
      continue;
    }
    for (const auto& record : stage.records) {
      if (record.type == "search_path" && record.version && !record.version->empty()) {
        return *record.version;
      }
    }
  }
  return "";
}

const facts::StageResult* EnvFactsView::stage(std::string_view name,
                                              facts::Activation activation) const {
  if (!m_facts.dynamic) {
    return nullptr;
  }
  for (const auto& stage : m_facts.dynamic->stages) {
    if (stage.stage == name && stage.activation == activation) {
      return &stage;
    }
  }
  return nullptr;
}

const facts::ActivationArtifact* EnvFactsView::activation_artifact(std::string_view stage) const {
  if (!m_facts.dynamic) {
    return nullptr;
  }
  for (const auto& artifact : m_facts.dynamic->artifacts) {
    if (artifact.stage == stage) {
      return &artifact;
    }
  }
  return nullptr;
}

facts::PathAnchors EnvFactsView::anchors() const {
  facts::PathAnchors anchors;
  anchors.prefix = prefix();
  anchors.sites = sites();
  anchors.variables = m_facts.activation.activated;
  return anchors;
}

std::string EnvFactsView::activated_environment_unknown() const {
  if (!m_facts.activation.problem.empty()) {
    return "the env's activation failed (" + m_facts.activation.problem + ")";
  }
  const auto error = std::find_if(m_facts.errors.begin(), m_facts.errors.end(), [](const auto& e) {
    return e.stage == facts::FactError::Stage::activation;
  });
  return error == m_facts.errors.end()
             ? ""
             : "the env's activation could not be run (" + error->message + ")";
}

std::vector<std::string> EnvFactsView::expand_all(const std::string& pattern) const {
  return facts::expand_path_pattern(pattern, anchors());
}

std::vector<std::string> EnvFactsView::expand_all_as_env_sees(const std::string& pattern,
                                                              bool for_glob) const {
  auto inside = anchors();
  inside.prefix = seen_by_env(inside.prefix);
  for (auto& site : inside.sites) {
    site = seen_by_env(site);
  }
  return facts::expand_path_pattern(pattern, inside, for_glob);
}

std::vector<std::string> EnvFactsView::unset_variables(const std::string& pattern) const {
  return facts::unset_variables(pattern, m_facts.activation.activated);
}

const facts::ProbeRecord* find_record(const facts::StageResult& stage, std::string_view type,
                                      std::string_view module) {
  const auto found =
      std::find_if(stage.records.begin(), stage.records.end(), [&](const facts::ProbeRecord& r) {
        return r.type == type && (module.empty() || r.module == module);
      });
  return found == stage.records.end() ? nullptr : &*found;
}

std::string python_text(const std::optional<std::string>& value) {
  return value ? "'" + *value + "'" : "None";
}

Json optional_json(const std::optional<std::string>& value) {
  return value ? Json(*value) : Json(nullptr);
}

}  // namespace envcontract::contracts
