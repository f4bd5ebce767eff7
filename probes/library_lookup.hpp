#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "probes/activation.hpp"
#include "probes/library_resolver.hpp"

namespace envcontract::probes {

// The env's interpreter as the loader sees it: bin/python with every link
// resolved, or empty when it does not exist.
std::filesystem::path loaded_interpreter(const PythonEnv& env);

// Where the env's interpreter would find a library by name, under one environment.
struct LibraryLookup {
  std::string name;
  std::filesystem::path path;  // empty when not found
  std::string found_via;       // LD_LIBRARY_PATH, RPATH, ld.so.cache, system, ...
  std::vector<std::string> searched;
  std::vector<std::filesystem::path> other_versions;  // libxpurt.so.1 for libxpurt.so.2
};

// The C library the env's processes get: its path and the newest GLIBC_x.y
// version it defines.
struct GlibcFacts {
  std::string version;  // "2.36"; empty when unknown
  std::filesystem::path path;
  std::string problem;
};

// The search environment a process with `environment` would have.
SearchEnvironment search_environment(const Environment& environment,
                                     const std::shared_ptr<const LdCache>& ld_cache);

std::vector<LibraryLookup> lookup_libraries(const PythonEnv& env, const Environment& environment,
                                            const std::vector<std::string>& names,
                                            const std::shared_ptr<const LdCache>& ld_cache,
                                            ElfCache& elf_cache);

GlibcFacts glibc_facts(const PythonEnv& env, const Environment& environment,
                       const std::shared_ptr<const LdCache>& ld_cache, ElfCache& elf_cache);

Json to_json(const LibraryLookup& lookup);
Json to_json(const GlibcFacts& glibc);

}  // namespace envcontract::probes
