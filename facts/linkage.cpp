#include "facts/linkage.hpp"

namespace envcontract::facts {
namespace {

namespace fs = std::filesystem;

Json closure_json(const std::vector<LibraryLinkage::Link>& closure) {
  auto array = Json::array();
  for (const auto& link : closure) {
    array.push_back({{"name", link.name}, {"needed_by", link.needed_by}, {"path", link.path}});
  }
  return array;
}

Json strings(const std::vector<fs::path>& paths) {
  auto array = Json::array();
  for (const auto& path : paths) {
    array.push_back(path.string());
  }
  return array;
}

}  // namespace

Json to_json(const MissingLibrary& missing) {
  return {{"name", missing.name},
          {"needed_by", missing.needed_by.string()},
          {"searched", missing.searched},
          {"other_versions", strings(missing.other_versions)},
          {"rejected", missing.rejected},
          {"incomplete", missing.incomplete.empty() ? Json(nullptr) : Json(missing.incomplete)}};
}

Json to_json(const NearMiss& near) {
  return {{"mangled", near.mangled},          {"demangled", near.demangled},
          {"library", near.library.string()}, {"kind", near.kind},
          {"likelihood", near.likelihood},    {"differences", near.differences}};
}

Json to_json(const UnresolvedSymbol& symbol) {
  auto near_misses = Json::array();
  for (const auto& near : symbol.near_misses) {
    near_misses.push_back(to_json(near));
  }
  // near_miss: the most likely one, as earlier reports had it.
  return {{"mangled", symbol.mangled},
          {"demangled", symbol.demangled},
          {"version", symbol.version},
          {"needed_by", symbol.needed_by.string()},
          {"near_miss", near_misses.empty() ? Json(nullptr) : near_misses.front()},
          {"near_misses", near_misses}};
}

Json to_json(const MissingVersion& version) {
  return {{"version", version.version},
          {"library", version.library},
          {"needed_by", version.needed_by.string()}};
}

Json to_json(const LibraryLinkage& library) {
  const auto all = [](const auto& items) {
    auto array = Json::array();
    for (const auto& item : items) {
      array.push_back(to_json(item));
    }
    return array;
  };
  const Json missing = all(library.missing);
  const Json unresolved = all(library.symbols.unresolved);
  const Json versions = all(library.symbols.missing_versions);
  return {{"path", library.path.string()},
          {"soname", library.soname},
          {"loads", library.loads()},
          {"error", library.error},
          {"needed", library.needed},
          {"closure", closure_json(library.closure)},
          {"missing", missing},
          {"unresolved", unresolved},
          {"missing_versions", versions},
          {"unchecked", strings(library.symbols.unchecked)}};
}

Json to_json(const LinkageFacts& facts) {
  auto libraries = Json::array();
  for (const auto& library : facts.libraries) {
    libraries.push_back(to_json(library));
  }
  return {{"activation", to_string(facts.activation)},
          {"libraries", libraries},
          {"skipped", facts.skipped}};
}

Json to_json(const LibraryLookup& lookup) {
  auto others = Json::array();
  for (const auto& path : lookup.other_versions) {
    others.push_back(path.string());
  }
  return {{"name", lookup.name},
          {"path", lookup.path.empty() ? Json(nullptr) : Json(lookup.path.string())},
          {"found_via", lookup.found_via},
          {"searched", lookup.searched},
          {"other_versions", others},
          // Cut short: neither found nor missing (a null path alone says missing).
          {"incomplete", lookup.incomplete.empty() ? Json(nullptr) : Json(lookup.incomplete)}};
}

Json to_json(const GlibcFacts& glibc) {
  return {{"version", glibc.version.empty() ? Json(nullptr) : Json(glibc.version)},
          {"path", glibc.path.empty() ? Json(nullptr) : Json(glibc.path.string())},
          {"problem", glibc.problem}};
}

}  // namespace envcontract::facts
