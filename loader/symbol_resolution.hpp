#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "facts/linkage.hpp"
#include "loader/library_resolver.hpp"
#include "loader/symbol_names.hpp"

namespace envcontract::loader {

using facts::NearMiss;

using facts::UnresolvedSymbol;

using facts::MissingVersion;

using facts::SymbolReport;

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

}  // namespace envcontract::loader
