#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "probes/library_resolver.hpp"

namespace envcontract::probes {

// A defined symbol with the same qualified name as a missing one but another
// signature: the ABI break behind most "undefined symbol" errors.
struct NearMiss {
  std::string mangled;
  std::string demangled;
  std::filesystem::path library;
  // "4th parameter: int (wanted) vs unsigned int (defined in libc10_cuda.so)"
  std::vector<std::string> differences;
};

struct UnresolvedSymbol {
  std::string mangled;
  std::string demangled;  // == mangled when it is not a C++ name
  std::string version;    // required version, "" when unversioned
  std::filesystem::path needed_by;
  std::optional<NearMiss> near_miss;
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
// unresolved. For each unresolved C++ symbol, looks for a near miss.
// Objects with a missing direct dependency are listed as unchecked.
SymbolReport resolve_symbols(const LinkClosure& closure);

// __cxa_demangle, or the name itself when it is not a mangled C++ name.
std::string demangle(const std::string& mangled);

// Splits "ns::f(int, char const*, std::pair<int, int>)" into "ns::f" and its
// parameters; nullopt when it is not a function signature.
struct Signature {
  std::string qualified_name;
  std::vector<std::string> parameters;
  std::string qualifiers;  // trailing " const", "&", ...
};
std::optional<Signature> parse_signature(const std::string& demangled);

// How `defined` differs from `wanted`, parameter by parameter.
std::vector<std::string> signature_differences(const Signature& wanted, const Signature& defined,
                                               const std::string& defining_library);

}  // namespace envcontract::probes
