#include "probes/linkage_facts.hpp"

#include <set>

#include "probes/library_lookup.hpp"
#include "process/small_files.hpp"

#include <algorithm>

namespace envcontract::probes {
namespace fs = std::filesystem;

namespace {

bool is_shared_library(const fs::path& path) {
  const std::string name = path.filename().string();
  return name.ends_with(".so") || name.find(".so.") != std::string::npos;
}

LibraryLinkage analyse(const fs::path& path, const fs::path& executable,
                       const loader::SearchEnvironment& search, loader::ElfCache& cache) {
  LibraryLinkage library;
  library.path = path;
  auto file = cache.get(path);
  if (!file) {
    library.error = file.error();
    return library;
  }
  const auto& elf = file.value();
  library.soname = std::string(elf->soname());
  for (const auto needed : elf->needed()) {
    library.needed.emplace_back(needed);
  }
  const auto closure = loader::resolve_closure(path, executable, search, cache);
  auto name_of = [](const loader::LoadedObject& object) {
    return object.elf->soname().empty() ? object.path.filename().string()
                                        : std::string(object.elf->soname());
  };
  bool after_root = false;
  for (const auto& object : closure.objects) {
    after_root = after_root || object.path == path;
    if (!after_root || object.path == path) {
      continue;  // the interpreter's own libraries, and the root itself
    }
    std::string needed_by;
    for (const auto& other : closure.objects) {
      if (other.path == object.needed_by) {
        needed_by = other.path == path ? path.filename().string() : name_of(other);
      }
    }
    library.closure.push_back({name_of(object), needed_by, object.path.string()});
  }
  library.missing = closure.missing;
  // A closure cut short by a bound is no evidence either way: its symbols
  // are not judged (those of libraries never looked for would seem
  // unresolved), and the env's facts are reported incomplete.
  if (!closure.incomplete.empty()) {
    library.error = closure.incomplete;
    process::FileProblemLog::record(path, "is not fully resolved: " + closure.incomplete);
    return library;
  }
  library.symbols = loader::resolve_symbols(closure);
  return library;
}

// Bounds of the walk of a site dir's tree, far above any real one: a bind
// mount of a directory into itself would otherwise never end, and each
// level holds a directory open.
constexpr std::size_t k_max_listed_dirs = 100000;
constexpr std::size_t k_max_depth = 64;

}  // namespace

LinkageFacts gather_linkage_facts(const PythonEnv& env, const std::vector<fs::path>& site_packages,
                                  const facts::Environment& environment, Activation activation,
                                  const std::shared_ptr<const loader::LdCache>& ld_cache,
                                  loader::ElfCache& elf_cache, const std::vector<fs::path>& hidden,
                                  std::size_t max_libraries) {
  LinkageFacts facts;
  facts.activation = activation;
  const loader::SearchEnvironment search =
      search_environment(environment, ld_cache, env.system_root);
  const fs::path executable = loaded_interpreter(env);
  std::vector<fs::path> libraries;
  const std::set<fs::path> hidden_set(hidden.begin(), hidden.end());
  // Each site dir's tree, as the env sees it (in a container, a link to
  // "/opt/..." is the container's); links are not entered nor counted: what
  // they lead to is counted where it lives, as recursive_directory_iterator
  // would.
  for (const auto& site : site_packages) {
    const bool whole = process::walk_tree(
        site, k_max_listed_dirs, k_max_depth, [&](const process::ListedEntry& entry) {
          if (entry.is_link || (!hidden_set.empty() && hidden_set.contains(entry.path))) {
            return false;
          }
          if (entry.is_regular && is_shared_library(entry.path)) {
            libraries.push_back(entry.path);
          }
          return true;
        });
    if (!whole) {
      process::FileProblemLog::record(
          site, "more than " + std::to_string(k_max_listed_dirs) + " directories, or deeper than " +
                    std::to_string(k_max_depth) +
                    " levels: the rest were not looked at for libraries");
    }
  }
  std::sort(libraries.begin(), libraries.end());
  if (libraries.size() > max_libraries) {
    facts.skipped = libraries.size() - max_libraries;
    libraries.resize(max_libraries);
  }
  for (const auto& path : libraries) {
    facts.libraries.push_back(analyse(path, executable, search, elf_cache));
  }
  return facts;
}

}  // namespace envcontract::probes
