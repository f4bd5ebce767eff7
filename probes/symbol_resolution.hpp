#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "probes/library_resolver.hpp"
#include "probes/symbol_names.hpp"

namespace envcontract::probes {

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

// Resolves the undefined symbols of every object of `closure` that is not a
// system library against the whole closure, as the loader does with
// RTLD_NOW: versions honoured, weak undefined symbols allowed to stay
// unresolved. For each unresolved symbol, looks for near misses.
// Objects with a missing direct dependency are listed as unchecked.
SymbolReport resolve_symbols(const LinkClosure& closure);

// The definitions in `closure` that come closest to the missing `mangled`
// (wanted at `version`, "" when unversioned), most likely first.
std::vector<NearMiss> find_near_misses(const LinkClosure& closure, const std::string& mangled,
                                       const std::string& version, std::size_t limit = 3);

}  // namespace envcontract::probes
