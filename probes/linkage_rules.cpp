#include "probes/linkage_rules.hpp"

#include <fnmatch.h>

#include <algorithm>

namespace envcontract::probes {

namespace {

std::string join_chain(const std::vector<std::string>& chain) {
  std::string text;
  for (const auto& name : chain) {
    text += (text.empty() ? "" : " -> ") + name;
  }
  return text;
}

// How `library` reaches `name`: through its closure, or directly only.
std::vector<std::string> reach(const LibraryLinkage& library, const std::string& name,
                               bool transitive) {
  if (transitive) {
    return needed_chain(library, name);
  }
  const bool direct =
      std::find(library.needed.begin(), library.needed.end(), name) != library.needed.end();
  return direct ? std::vector<std::string>{library.path.filename().string(), name}
                : std::vector<std::string>{};
}

}  // namespace

LinkageVerdict check_linkage_rule(const LinkageFacts& facts, const LinkageRule& rule) {
  LinkageVerdict verdict;
  for (const auto& library : facts.libraries) {
    if (::fnmatch(rule.library_glob.c_str(), library.path.c_str(), FNM_PATHNAME) != 0) {
      continue;
    }
    verdict.matched.push_back(library.path);
    const std::string file = library.path.filename().string();
    for (const auto& forbidden : rule.must_not_need) {
      const auto chain = reach(library, forbidden, rule.transitive);
      if (!chain.empty()) {
        verdict.violations.push_back(
            {library.path, file + " needs " + forbidden + " (" + join_chain(chain) + ")", chain});
      }
    }
    for (const auto& required : rule.must_need) {
      if (reach(library, required, rule.transitive).empty()) {
        verdict.violations.push_back({library.path, file + " does not need " + required, {}});
      }
    }
  }
  return verdict;
}

}  // namespace envcontract::probes
