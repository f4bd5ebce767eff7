#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "probes/activation.hpp"
#include "probes/library_resolver.hpp"
#include "probes/symbol_resolution.hpp"

namespace envcontract::probes {

// One shared library of an env, analysed as the loader would load it.
struct LibraryLinkage {
  std::filesystem::path path;
  std::string soname;
  std::vector<std::string> needed;
  // Everything it loads: each object's soname (or file name) and the name of
  // the object whose DT_NEEDED brought it in.
  struct Link {
    std::string name;
    std::string needed_by;
    std::filesystem::path path;  // where the loader finds it
  };
  std::vector<Link> closure;
  std::vector<MissingLibrary> missing;
  SymbolReport symbols;
  std::string error;  // the file itself could not be read as ELF

  bool loads() const {
    return error.empty() && missing.empty() && symbols.unresolved.empty() &&
           symbols.missing_versions.empty();
  }
};

struct LinkageFacts {
  Activation activation = Activation::activated;
  std::vector<LibraryLinkage> libraries;  // every *.so under site-packages
  std::size_t skipped = 0;                // beyond the per-env limit
};

// Every shared library and extension module under the env's site dirs
// (except under `hidden`: shadowed copies the interpreter never imports),
// resolved against `environment`'s LD_LIBRARY_PATH with the env's Python as
// the executable. Files that are not ELF are recorded with their error.
LinkageFacts gather_linkage_facts(const PythonEnv& env,
                                  const std::vector<std::filesystem::path>& site_packages,
                                  const Environment& environment, Activation activation,
                                  const std::shared_ptr<const LdCache>& ld_cache,
                                  ElfCache& elf_cache,
                                  const std::vector<std::filesystem::path>& hidden = {},
                                  std::size_t max_libraries = 5000);

Json to_json(const LibraryLinkage& library);
Json to_json(const LinkageFacts& facts);

}  // namespace envcontract::probes
