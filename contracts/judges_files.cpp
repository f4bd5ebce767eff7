// Judges of files on disk and of linkage between shared libraries.
#include <fnmatch.h>

#include <algorithm>
#include <optional>

#include "contracts/judges.hpp"

namespace envcontract::contracts::judges {
namespace {

// How `library` (one entry of the linkage facts) comes to load `name`:
// {"libtorch.so", "libtorch_cuda.so"}; empty when it does not.
std::vector<std::string> chain_to(const facts::LibraryLinkage& library, const std::string& name) {
  const std::string root = library.path.filename();
  const auto& closure = library.closure;
  std::vector<std::string> chain;
  std::string current = name;
  for (std::size_t guard = 0; guard <= closure.size(); ++guard) {
    const auto link = std::find_if(closure.begin(), closure.end(),
                                   [&](const auto& entry) { return entry.name == current; });
    if (link == closure.end()) {
      return {};
    }
    chain.insert(chain.begin(), current);
    current = link->needed_by;
    if (current == root) {
      chain.insert(chain.begin(), root);
      return chain;
    }
  }
  return {};
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string text;
  for (const auto& item : items) {
    text += (text.empty() ? "" : separator) + item;
  }
  return text;
}

// What probes matched for `pattern` in this env, or nullptr when they were
// not asked (facts gathered without the contract).
// Its matches are none inside copies of packages that an earlier path entry
// hides from `import` (a CPU torch in the venv is the torch, whatever CUDA
// torch the base's site-packages holds).
const facts::PathMatches* path_matches(const EnvFactsView& facts, const std::string& pattern) {
  const auto& all = facts.facts().path_matches;
  const auto found = std::find_if(all.begin(), all.end(),
                                  [&](const auto& entry) { return entry.pattern == pattern; });
  return found == all.end() ? nullptr : &*found;
}

}  // namespace

void files(const Check&, const FilesParams& params, const EnvFactsView& facts,
           CheckResult& result) {
  Json actual = Json::object();
  // Why a pattern could not be judged (the first such): the check's answer
  // only when no other pattern shows a definite fault, whatever their order.
  std::optional<std::string> unknown;
  const auto not_judged = [&](std::string why) {
    if (!unknown) {
      unknown = std::move(why);
    }
  };
  for (const bool must_exist : {true, false}) {
    for (const auto& text : must_exist ? params.exist : params.absent) {
      const auto* entry = path_matches(facts, text);
      if (entry == nullptr) {
        not_judged(text + " was not looked for in this env");
        continue;
      }
      const auto& found = entry->matches;
      actual[text] = found;
      const auto& expansions = entry->expansions;
      // A search that failed in part still proves what it matched: a file
      // that must exist and was found, a forbidden one that exists.
      const bool searched_all = entry->error.empty();
      if (must_exist && found.empty()) {
        if (!searched_all) {
          not_judged(text + " could not be looked for: " + entry->error);
          continue;
        }
        result.actual = actual;
        fail(
            result, "missing_file",
            join(expansions, ", ") + (expansions.size() > 1 ? ": none exists" : " does not exist"),
            {{"pattern", expansions.empty() ? text : expansions.front()}, {"searched", expansions}},
            "install the package that provides it");
        return;
      }
      if (!must_exist && !found.empty()) {
        result.actual = actual;
        fail(result, "forbidden_file", found.front() + " exists; the contract forbids it",
             {{"paths", found}},
             "remove the package that installs it (a build for another platform?)");
        return;
      }
      if (!must_exist && !searched_all) {
        not_judged(text + " could not be looked for: " + entry->error);
      }
    }
  }
  result.actual = actual;
  if (unknown) {
    not_gathered(result, *unknown);
    return;
  }
  pass(result);
}

void linkage(const Check&, const LinkageParams& params, const EnvFactsView& facts,
             CheckResult& result) {
  // Matched as the env's processes name the library (inside its container):
  // a contract's "/usr/lib/libfoo.so*" is the container's, not the host's.
  // What the env controls ({prefix}: /opt/envs/e[1]) is matched literally.
  const auto patterns = facts.expand_all_as_env_sees(params.library, true);
  const bool transitive = params.transitive;
  Json matched = Json::array();
  std::optional<Diagnosis> unanalysed;
  for (const auto& library : facts.libraries()) {
    const std::string path = library.path.string();
    const std::string seen = facts.seen_by_env(path);
    if (std::none_of(patterns.begin(), patterns.end(), [&](const std::string& pattern) {
          return ::fnmatch(pattern.c_str(), seen.c_str(), FNM_PATHNAME) == 0;
        })) {
      continue;
    }
    matched.push_back(path);
    const std::string file = std::filesystem::path(path).filename();
    // What it needs is unknown, or known only in part (a bound of the
    // agent's stopped its resolution): no verdict on it, though a definite
    // fault of another matched library still fails the check.
    if (!library.error.empty()) {
      if (!unanalysed) {
        unanalysed = Diagnosis{
            "unreadable_file",
            file + " could not be analysed: " + library.error,
            {{"library", path}},
            "the agent reads only files within its bounds (docs/security.md): replace the file "
            "with what its package installed (reinstall the package) or remove it, then rescan"};
      }
      continue;
    }
    auto reach = [&](const std::string& name) {
      if (transitive) {
        return chain_to(library, name);
      }
      const auto& needed = library.needed;
      return std::find(needed.begin(), needed.end(), name) != needed.end()
                 ? std::vector<std::string>{file, name}
                 : std::vector<std::string>{};
    };
    for (const auto& forbidden : params.must_not_need) {
      const auto chain = reach(forbidden);
      if (!chain.empty()) {
        result.actual = {{"matched", matched}};
        fail(result, "forbidden_needed",
             file + " needs " + forbidden + " (" + join(chain, " -> ") + ")",
             {{"library", path}, {"chain", chain}},
             "install a " + file + " built without " + forbidden);
        return;
      }
    }
    for (const auto& required : params.must_need) {
      if (reach(required).empty()) {
        result.actual = {{"matched", matched}};
        fail(result, "missing_library", file + " does not need " + required,
             {{"library", path}, {"needed", library.needed}},
             "install the " + file + " build the contract names");
        return;
      }
    }
  }
  result.actual = {{"matched", matched}};
  if (unanalysed) {
    result.status = CheckStatus::error;
    result.diagnosis = std::move(unanalysed);
    return;
  }
  // Libraries past the per-env bound were never read: any of them may match
  // and have the fault, so no fault among those read proves nothing.
  const std::size_t skipped = facts.facts().linkage.skipped;
  if (skipped > 0) {
    not_gathered(result, "no fault in the " + std::to_string(matched.size()) +
                             " libraries read that match " + params.library + ", but " +
                             std::to_string(skipped) +
                             " libraries of this env were past the agent's bound and not read");
    return;
  }
  // No matching library is not a linkage fault; a files check says whether it must exist.
  pass(result);
}

}  // namespace envcontract::contracts::judges
