#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "facts/linkage.hpp"
#include "loader/library_resolver.hpp"
#include "probes/activation.hpp"

namespace envcontract::probes {

using facts::to_json;

// The env's interpreter as the loader sees it: bin/python with every link
// resolved, or empty when it does not exist.
std::filesystem::path loaded_interpreter(const PythonEnv& env);

using facts::LibraryLookup;

using facts::GlibcFacts;

// The search environment a process with `environment` would have.
// The search environment a process with `environment` would have in `root`
// (the env's system root: `ld_cache` must be that tree's).
loader::SearchEnvironment search_environment(const facts::Environment& environment,
                                             const std::shared_ptr<const loader::LdCache>& ld_cache,
                                             const std::filesystem::path& root = "/");

std::vector<LibraryLookup> lookup_libraries(const PythonEnv& env,
                                            const facts::Environment& environment,
                                            const std::vector<std::string>& names,
                                            const std::shared_ptr<const loader::LdCache>& ld_cache,
                                            loader::ElfCache& elf_cache);

GlibcFacts glibc_facts(const PythonEnv& env, const facts::Environment& environment,
                       const std::shared_ptr<const loader::LdCache>& ld_cache,
                       loader::ElfCache& elf_cache);

}  // namespace envcontract::probes
