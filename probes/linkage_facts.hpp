#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "facts/linkage.hpp"
#include "loader/library_resolver.hpp"
#include "loader/symbol_resolution.hpp"
#include "probes/activation.hpp"

namespace envcontract::probes {

using facts::to_json;

using facts::LibraryLinkage;

using facts::LinkageFacts;

// Every shared library and extension module under the env's site dirs
// (except under `hidden`: shadowed copies the interpreter never imports),
// resolved against `environment`'s LD_LIBRARY_PATH with the env's Python as
// the executable. Files that are not ELF are recorded with their error.
LinkageFacts gather_linkage_facts(const PythonEnv& env,
                                  const std::vector<std::filesystem::path>& site_packages,
                                  const facts::Environment& environment, Activation activation,
                                  const std::shared_ptr<const loader::LdCache>& ld_cache,
                                  loader::ElfCache& elf_cache,
                                  const std::vector<std::filesystem::path>& hidden = {},
                                  std::size_t max_libraries = 5000);

}  // namespace envcontract::probes
