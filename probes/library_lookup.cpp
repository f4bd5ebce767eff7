#include "probes/library_lookup.hpp"

#include <algorithm>

#include <fcntl.h>
#include <unistd.h>

#include "common/pep440.hpp"
#include "process/small_files.hpp"
#include "process/system_root.hpp"

namespace envcontract::probes {
namespace fs = std::filesystem;

fs::path loaded_interpreter(const PythonEnv& env) {
  // The loader takes the main program's $ORIGIN from its real path
  // (/proc/self/exe), so a venv's bin/python link resolves from the base
  // interpreter's directory.
  if (env.system_root != "/") {
    // Its links are the tree's own (bin/python -> /usr/bin/python3 means
    // the rootfs' python): resolved by the kernel inside the tree.
    const process::SystemRoot root(env.system_root);
    const int fd = root.open_inside(root.inside(env.python.string()), O_PATH, true);
    if (fd < 0) {
      return {};
    }
    std::error_code error;
    const fs::path real = fs::read_symlink("/proc/self/fd/" + std::to_string(fd), error);
    ::close(fd);
    // The kernel names it from the tree's "/" when the tree is a process's
    // root (another namespace's), from the host's otherwise.
    return error ? fs::path() : process::under_root(env.system_root, real);
  }
  std::error_code error;
  const fs::path real = fs::canonical(env.python, error);
  return error ? fs::path() : real;
}

loader::SearchEnvironment search_environment(const facts::Environment& environment,
                                             const std::shared_ptr<const loader::LdCache>& ld_cache,
                                             const fs::path& root) {
  loader::SearchEnvironment search;
  search.cache = ld_cache;
  search.root = root;
  if (const auto it = environment.find("LD_LIBRARY_PATH"); it != environment.end()) {
    for (const auto& dir : loader::split_search_path(it->second)) {
      search.ld_library_path.push_back(process::under_root(root, dir).string());
    }
  }
  for (auto& dir : search.system_dirs) {
    dir = process::under_root(root, dir);
  }
  return search;
}

std::vector<LibraryLookup> lookup_libraries(const PythonEnv& env,
                                            const facts::Environment& environment,
                                            const std::vector<std::string>& names,
                                            const std::shared_ptr<const loader::LdCache>& ld_cache,
                                            loader::ElfCache& elf_cache) {
  const auto search = search_environment(environment, ld_cache, env.system_root);
  const auto executable = loaded_interpreter(env);
  std::vector<LibraryLookup> lookups;
  for (const auto& name : names) {
    LibraryLookup lookup;
    lookup.name = name;
    auto found =
        executable.empty()
            ? std::variant<loader::LoadedObject, facts::MissingLibrary>(facts::MissingLibrary{
                  name, {}, {"(the env's interpreter is missing)"}, {}, {}, {}})
            : loader::locate_library(name, executable, search, elf_cache);
    if (const auto* object = std::get_if<loader::LoadedObject>(&found)) {
      lookup.path = object->path;
      lookup.found_via = object->found_via;
    } else {
      const auto& miss = std::get<facts::MissingLibrary>(found);
      lookup.searched = miss.searched;
      lookup.other_versions = miss.other_versions;
      // A search cut short is judged by the check that asked for it (no
      // verdict); it names no file for the env's problems.
      lookup.incomplete = miss.incomplete;
    }
    lookups.push_back(std::move(lookup));
  }
  return lookups;
}

GlibcFacts glibc_facts(const PythonEnv& env, const facts::Environment& environment,
                       const std::shared_ptr<const loader::LdCache>& ld_cache,
                       loader::ElfCache& elf_cache) {
  GlibcFacts facts;
  const auto lookups = lookup_libraries(env, environment, {"libc.so.6"}, ld_cache, elf_cache);
  if (lookups.empty() || lookups.front().path.empty()) {
    facts.problem = "libc.so.6 cannot be found by the env's loader";
    return facts;
  }
  facts.path = lookups.front().path;
  auto file = elf_cache.get(facts.path);
  if (!file) {
    facts.problem = facts.path.string() + ": " + file.error();
    return facts;
  }
  for (const auto version : file.value()->defined_versions()) {
    // GLIBC_2.36, GLIBC_2.2.5; not GLIBC_PRIVATE.
    const std::string_view number_text =
        version.starts_with("GLIBC_") ? version.substr(6) : std::string_view();
    if (!number_text.empty() && process::first_release_number(number_text) == number_text) {
      const std::string number(number_text);
      if (facts.version.empty() || common::compare_versions(facts.version, number) < 0) {
        facts.version = number;
      }
    }
  }
  if (facts.version.empty()) {
    facts.problem = facts.path.string() + " defines no GLIBC_ version (not glibc?)";
  }
  return facts;
}

}  // namespace envcontract::probes
