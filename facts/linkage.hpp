#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "facts/activation.hpp"

// How the loader would load an env's shared libraries, found without
// loading them: what each needs and where it comes from, what is missing,
// which symbols nothing defines and their near misses (docs/probes.md,
// "Shared libraries and ABI").
namespace envcontract::facts {

using Json = nlohmann::ordered_json;

struct MissingLibrary {
  std::string name;
  std::filesystem::path needed_by;
  std::vector<std::string> searched;  // every directory tried, in order, with how
  // Files with the same base name but another version (libxpurt.so.1 for
  // libxpurt.so.2), in the searched dirs and ld.so.cache.
  std::vector<std::filesystem::path> other_versions;
  // Candidates skipped as the loader skips them: wrong class or machine.
  std::vector<std::string> rejected;
  // Set when a bound of the resolver cut the search short: then the library
  // was not found, which is no evidence that the loader would not find it.
  std::string incomplete;
};

// A defined symbol that is almost the missing one: the same name under
// another version, the same function with other parameter types or
// qualifiers, another constructor variant, other template arguments, or the
// same function moved to another namespace or class. The ABI break behind
// most "undefined symbol" errors.
struct NearMiss {
  std::string mangled;
  std::string demangled;
  std::filesystem::path library;
  // What differs: "version", "constructor_variant", "qualifiers", "abi_tag",
  // "parameters", "template_arguments", "arity", "scope".
  std::string kind;
  int likelihood = 0;  // 0-100: how likely this is the definition that was meant
  // "4th parameter: int (wanted) vs unsigned int (defined in libc10_cuda.so)"
  std::vector<std::string> differences;
};

struct UnresolvedSymbol {
  std::string mangled;
  std::string demangled;  // == mangled when it is not a C++ name
  std::string version;    // required version, "" when unversioned
  std::filesystem::path needed_by;
  std::vector<NearMiss> near_misses;  // most likely first; at most 3
};

// A version node a library needs that the providing library lacks: the
// loader refuses the load ("version `GLIBC_2.38' not found").
struct MissingVersion {
  std::string version;
  std::string library;  // the soname that should define it
  std::filesystem::path needed_by;
};

struct SymbolReport {
  std::vector<UnresolvedSymbol> unresolved;
  std::vector<MissingVersion> missing_versions;
  // Objects whose symbols were not checked because a library they need is
  // missing: that library is the cause, their unresolved symbols only its echo.
  std::vector<std::filesystem::path> unchecked;
};

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
    // Where the loader finds it. Text: an env's closures hold thousands of
    // links, kept with its facts, and a path costs an allocation per component.
    std::string path;
  };
  std::vector<Link> closure;
  std::vector<MissingLibrary> missing;
  SymbolReport symbols;
  // The file itself could not be read as ELF, or a bound stopped the
  // resolution of its closure (then `closure` and `missing` are partial).
  std::string error;

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

// Where the env's interpreter would find a library by name, under one environment.
struct LibraryLookup {
  std::string name;
  std::filesystem::path path;  // empty when not found
  std::string found_via;       // LD_LIBRARY_PATH, RPATH, ld.so.cache, system, ...
  std::vector<std::string> searched;
  std::vector<std::filesystem::path> other_versions;  // libxpurt.so.1 for libxpurt.so.2
  std::string incomplete;  // why the search was cut short: neither found nor missing
};

// The C library the env's processes get: its path and the newest GLIBC_x.y
// version it defines.
struct GlibcFacts {
  std::string version;  // "2.36"; empty when unknown
  std::filesystem::path path;
  std::string problem;
};

Json to_json(const MissingLibrary& missing);
Json to_json(const NearMiss& near);
Json to_json(const UnresolvedSymbol& symbol);
Json to_json(const MissingVersion& version);
Json to_json(const LibraryLinkage& library);
Json to_json(const LinkageFacts& facts);
Json to_json(const LibraryLookup& lookup);
Json to_json(const GlibcFacts& glibc);

}  // namespace envcontract::facts
