#include "contracts/other_python.hpp"

#include <algorithm>

#include "common/python_names.hpp"
#include "contracts/judges.hpp"

namespace envcontract::contracts {

namespace {

const facts::Distribution* find_in(const facts::ForeignSite& site, const std::string& name) {
  const std::string wanted = common::normalize_distribution_name(name);
  const auto it = std::find_if(
      site.distributions.begin(), site.distributions.end(),
      [&](const facts::Distribution& distribution) { return distribution.normalized == wanted; });
  return it == site.distributions.end() ? nullptr : &*it;
}

// The distribution of `site` whose top-level names include `module`: what
// pip installs to get it (Pillow for PIL, PyYAML for yaml), or nullptr.
const facts::Distribution* providing(const facts::ForeignSite& site, const std::string& module) {
  const auto it =
      std::find_if(site.distributions.begin(), site.distributions.end(),
                   [&](const facts::Distribution& distribution) {
                     return std::find(distribution.top_level.begin(), distribution.top_level.end(),
                                      module) != distribution.top_level.end();
                   });
  return it == site.distributions.end() ? nullptr : &*it;
}

}  // namespace

bool fail_if_installed_for_another_python(CheckResult& result, const EnvFactsView& facts,
                                          const std::string& name) {
  for (const auto& site : facts.files().other_python_sites) {
    const auto* distribution = find_in(site, name);
    const bool module = std::binary_search(site.modules.begin(), site.modules.end(), name);
    if (distribution == nullptr && !module) {
      continue;
    }
    if (distribution == nullptr) {
      distribution = providing(site, name);
    }
    // What pip installs: the distribution, when one provides the name.
    const std::string& install = distribution != nullptr ? distribution->name : name;
    const auto& env = facts.facts().env;
    const std::string what =
        distribution != nullptr ? distribution->name + " " + distribution->version : name;
    const std::string& conflict = env.python_version_conflict;
    Json evidence = {
        {"other_python_site", facts.seen_by_env(site.path.string())},
        {"other_python", site.python},
        {"python_version", env.python_version},
        {"python_version_conflict", conflict.empty() ? Json(nullptr) : Json(conflict)}};
    if (distribution != nullptr) {
      evidence["distribution"] = facts::to_json(*distribution);
    }
    judges::fail(result, "wrong_python",
                 name + " is not installed for the env's Python " + env.python_version + ": " +
                     facts.seen_by_env(site.path.string()) + " holds " + what + " for Python " +
                     site.python + ", which its interpreter never reads" +
                     (conflict.empty() ? "" : " (" + conflict + ")"),
                 evidence,
                 "the env's packages were installed for Python " + site.python +
                     " but it runs Python " + env.python_version +
                     " (an upgrade that stopped half-way?): recreate the env, or install " +
                     install + " for the Python it runs (" +
                     facts.seen_by_env(env.python.string()) + " -m pip install " + install + ")");
    return true;
  }
  return false;
}

}  // namespace envcontract::contracts
