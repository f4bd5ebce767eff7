#include "probes/linkage_facts.hpp"

#include <set>

#include "probes/library_lookup.hpp"
#include "probes/small_files.hpp"

#include <algorithm>

namespace envcontract::probes {
namespace fs = std::filesystem;

namespace {

bool is_shared_library(const fs::path& path) {
  const std::string name = path.filename().string();
  return name.ends_with(".so") || name.find(".so.") != std::string::npos;
}

LibraryLinkage analyse(const fs::path& path, const fs::path& executable,
                       const SearchEnvironment& search, ElfCache& cache) {
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
  const auto closure = resolve_closure(path, executable, search, cache);
  auto name_of = [](const LoadedObject& object) {
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
    FileProblemLog::record(path, "is not fully resolved: " + closure.incomplete);
    return library;
  }
  library.symbols = resolve_symbols(closure);
  return library;
}

}  // namespace

LinkageFacts gather_linkage_facts(const PythonEnv& env, const std::vector<fs::path>& site_packages,
                                  const Environment& environment, Activation activation,
                                  const std::shared_ptr<const LdCache>& ld_cache,
                                  ElfCache& elf_cache, const std::vector<fs::path>& hidden,
                                  std::size_t max_libraries) {
  LinkageFacts facts;
  facts.activation = activation;
  const SearchEnvironment search = search_environment(environment, ld_cache, env.system_root);
  std::error_code error;
  const fs::path executable = loaded_interpreter(env);
  std::vector<fs::path> libraries;
  const std::set<fs::path> hidden_set(hidden.begin(), hidden.end());
  for (const auto& site : site_packages) {
    for (fs::recursive_directory_iterator it(site, error), end; !error && it != end;
         it.increment(error)) {
      if (!hidden_set.empty() && hidden_set.contains(it->path())) {
        it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file(error) && !it->is_symlink(error) && is_shared_library(it->path())) {
        libraries.push_back(it->path());
      }
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
