#include "facts/linkage.hpp"

namespace envcontract::facts {
namespace {

namespace fs = std::filesystem;

Json closure_json(const std::vector<LibraryLinkage::Link>& closure) {
  auto array = Json::array();
  for (const auto& link : closure) {
    array.push_back(
        {{"name", link.name}, {"needed_by", link.needed_by}, {"path", link.path.string()}});
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

Json to_json(const LibraryLinkage& library) {
  auto missing = Json::array();
  for (const auto& miss : library.missing) {
    missing.push_back({{"name", miss.name},
                       {"needed_by", miss.needed_by.string()},
                       {"searched", miss.searched},
                       {"other_versions", strings(miss.other_versions)},
                       {"rejected", miss.rejected}});
  }
  auto unresolved = Json::array();
  for (const auto& symbol : library.symbols.unresolved) {
    auto near_misses = Json::array();
    for (const auto& miss : symbol.near_misses) {
      near_misses.push_back({{"mangled", miss.mangled},
                             {"demangled", miss.demangled},
                             {"library", miss.library.string()},
                             {"kind", miss.kind},
                             {"likelihood", miss.likelihood},
                             {"differences", miss.differences}});
    }
    // near_miss: the most likely one, as earlier reports had it.
    Json entry = {{"mangled", symbol.mangled},
                  {"demangled", symbol.demangled},
                  {"version", symbol.version},
                  {"needed_by", symbol.needed_by.string()},
                  {"near_miss", near_misses.empty() ? Json(nullptr) : near_misses.front()},
                  {"near_misses", near_misses}};
    unresolved.push_back(std::move(entry));
  }
  auto versions = Json::array();
  for (const auto& version : library.symbols.missing_versions) {
    versions.push_back({{"version", version.version},
                        {"library", version.library},
                        {"needed_by", version.needed_by.string()}});
  }
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
          {"other_versions", others}};
}

Json to_json(const GlibcFacts& glibc) {
  return {{"version", glibc.version.empty() ? Json(nullptr) : Json(glibc.version)},
          {"path", glibc.path.empty() ? Json(nullptr) : Json(glibc.path.string())},
          {"problem", glibc.problem}};
}

}  // namespace envcontract::facts
