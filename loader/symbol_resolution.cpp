#include "loader/symbol_resolution.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace envcontract::loader {
namespace fs = std::filesystem;

namespace {

// Near misses are looked for for this many unresolved symbols per closure:
// each search reads every symbol the closure defines, and a library built
// against another ABI can lack thousands; the first ones tell the story.
constexpr std::size_t k_max_searches = 64;
// __cxa_demangle's stack use grows with the name; names longer than this
// (hostile, or generated beyond reading) are neither searched nor compared.
constexpr std::size_t k_max_demangled_name = 4096;

bool satisfies(const DynamicSymbol& definition, const DynamicSymbol& reference) {
  if (!reference.version.empty()) {
    return definition.version == reference.version;
  }
  // An unversioned reference binds to the default (non-hidden) definition.
  return !definition.hidden;
}

std::vector<std::string> scope_parts(const std::string& scope);

// How a name of `signature` appears in a mangled symbol: "4sync" for sync,
// the class's for a constructor, destructor or operator (whose own spelling
// is an abbreviation such as "pl"); "" when nothing cheap can filter.
std::string mangled_token(const Signature& signature) {
  std::string last = signature.name;
  if (last.starts_with("operator") || last.starts_with("~")) {
    const auto parts = scope_parts(signature.scope);
    last = parts.empty() ? "" : parts.back().substr(0, parts.back().find('<'));
    if (last.find_first_of(" ()") != std::string::npos || last == "std") {
      last.clear();  // "(anonymous namespace)", or std's abbreviations (Sa, Ss)
    }
  }
  return last.empty() ? "" : std::to_string(last.size()) + last;
}

std::string version_text(std::string_view version, bool hidden) {
  return version.empty() ? "unversioned" : std::string(version) + (hidden ? " (hidden)" : "");
}

// "C1 (complete object)" for the constructor or destructor variant in `mangled`.
std::string structor_variant(const std::string& mangled) {
  static const std::pair<const char*, const char*> k_variants[] = {
      {"C1E", "C1 (complete-object constructor)"}, {"C2E", "C2 (base-object constructor)"},
      {"C3E", "C3 (allocating constructor)"},      {"D0E", "D0 (deleting destructor)"},
      {"D1E", "D1 (complete-object destructor)"},  {"D2E", "D2 (base-object destructor)"}};
  for (const auto& [code, text] : k_variants) {
    if (mangled.find(code) != std::string::npos) {
      return text;
    }
  }
  return "";
}

bool mentions_cxx11_abi(const std::vector<std::string>& differences) {
  return std::any_of(differences.begin(), differences.end(), [](const std::string& difference) {
    const auto wanted = difference.substr(0, difference.find(" (wanted)"));
    const auto defined = difference.substr(difference.find(" (wanted)") + 1);
    return (wanted.find("__cxx11") != std::string::npos) !=
           (defined.find("__cxx11") != std::string::npos);
  });
}

std::vector<std::string> scope_parts(const std::string& scope) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (std::size_t i = 0; i < scope.size(); ++i) {
    const char c = scope[i];
    depth += c == '<' || c == '(' ? 1 : c == '>' || c == ')' ? -1 : 0;
    if (depth == 0 && scope.compare(i, 2, "::") == 0) {
      parts.push_back(current);
      current.clear();
      ++i;
      continue;
    }
    current.push_back(c);
  }
  if (!current.empty()) {
    parts.push_back(current);
  }
  return parts;
}

// "v9", "__1", "v2_3": how libraries name the inline namespaces of their ABI versions.
bool version_like(const std::string& part) {
  const auto digit = part.find_first_of("0123456789");
  return digit != std::string::npos &&
         part.find_first_not_of("0123456789_", digit) == std::string::npos;
}

// Whether the function plausibly moved from scope `wanted` to `defined`
// rather than being another class's function of the same name (PyTorch's
// hundreds of `at::_ops::X::redispatch`): its class moved to another
// namespace (same last part), a namespace was added or removed, or an ABI
// version namespace changed (fmt::v9 to fmt::v10, std::__1).
bool moved_scope(const std::string& wanted, const std::string& defined) {
  const auto a = scope_parts(wanted);
  const auto b = scope_parts(defined);
  if (!a.empty() && !b.empty() && a.back() == b.back()) {
    return true;
  }
  const auto& longer = a.size() > b.size() ? a : b;
  const auto& shorter = a.size() > b.size() ? b : a;
  if (longer.size() == shorter.size() + 1) {
    for (std::size_t skip = 0; skip < longer.size(); ++skip) {
      auto without = longer;
      without.erase(without.begin() + static_cast<std::ptrdiff_t>(skip));
      if (without == shorter) {
        return true;
      }
    }
    return false;
  }
  if (a.size() != b.size()) {
    return false;
  }
  std::size_t differing = 0;
  bool versions = true;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      ++differing;
      versions = versions && version_like(a[i]) && version_like(b[i]);
    }
  }
  return differing == 1 && versions;
}

// "ns::Box" for "ns::Box<int>": template arguments dropped at every level.
std::string without_template_arguments(const std::string& scope) {
  std::string text;
  int depth = 0;
  for (const char c : scope) {
    depth += c == '<' ? 1 : 0;
    if (depth == 0) {
      text.push_back(c);
    }
    depth -= c == '>' ? 1 : 0;
  }
  return text;
}

// How close `defined` is to `wanted`, as a near miss, or nullopt when it is
// not one (another function that merely shares a name).
std::optional<NearMiss> compare(const Signature& wanted, const std::string& wanted_mangled,
                                const Signature& defined, const std::string& defined_mangled,
                                const std::string& library) {
  if (defined.name != wanted.name) {
    return std::nullopt;
  }
  const std::string where = " (defined in " + library + ")";
  NearMiss miss;
  const bool same_scope = defined.scope == wanted.scope;
  const bool same_template = defined.template_args == wanted.template_args;
  const bool same_parameters = defined.parameters == wanted.parameters;
  const bool same_qualifiers = defined.qualifiers == wanted.qualifiers;
  const bool same_tags = defined.abi_tags == wanted.abi_tags;
  const auto differences = signature_differences(wanted, defined, library);
  if (same_scope && same_template && same_parameters && same_qualifiers && same_tags) {
    miss.kind = "constructor_variant";
    miss.likelihood = 95;
    const auto wanted_variant = structor_variant(wanted_mangled);
    const auto defined_variant = structor_variant(defined_mangled);
    if (!wanted_variant.empty() && wanted_variant != defined_variant) {
      miss.differences.push_back("variant: " + wanted_variant + " (wanted) vs " +
                                 (defined_variant.empty() ? defined_mangled : defined_variant) +
                                 where);
    } else if (defined.return_type != wanted.return_type) {
      miss.kind = "return_type";
      miss.differences.push_back("return type: " + wanted.return_type + " (wanted) vs " +
                                 defined.return_type + where);
    } else {
      miss.kind = "mangling";
      miss.differences.push_back("the same name mangled otherwise: " + wanted_mangled +
                                 " (wanted) vs " + defined_mangled + where);
    }
    return miss;
  }
  if (same_scope && same_template) {
    miss.differences = differences;
    if (!same_tags) {
      const auto tags = [](const std::vector<std::string>& list) {
        std::string text;
        for (const auto& tag : list) {
          text += "[abi:" + tag + "]";
        }
        return text.empty() ? std::string("none") : text;
      };
      miss.differences.push_back("ABI tags: " + tags(wanted.abi_tags) + " (wanted) vs " +
                                 tags(defined.abi_tags) + where);
    }
    if (same_parameters && same_qualifiers) {
      miss.kind = "abi_tag";
      miss.likelihood = 90;
    } else if (same_parameters) {
      miss.kind = "qualifiers";
      miss.likelihood = 90;
    } else if (wanted.parameters.size() == defined.parameters.size()) {
      miss.kind = "parameters";
      const auto changed = static_cast<int>(differences.size() - (same_qualifiers ? 0 : 1));
      miss.likelihood = std::max(60, 85 - 5 * changed);
    } else {
      miss.kind = "arity";
      miss.likelihood = 55;
    }
  } else if (same_scope) {
    miss.kind = "template_arguments";
    miss.likelihood = same_parameters ? 70 : 50;
    miss.differences.push_back("template arguments: " + wanted.template_args + " (wanted) vs " +
                               defined.template_args + where);
    miss.differences.insert(miss.differences.end(), differences.begin(), differences.end());
  } else if (without_template_arguments(wanted.scope) ==
                 without_template_arguments(defined.scope) &&
             same_template && same_parameters && same_qualifiers) {
    miss.kind = "template_arguments";
    miss.likelihood = 70;
    miss.differences.push_back("class template arguments: " + wanted.scope + " (wanted) vs " +
                               defined.scope + where);
  } else if (same_template && same_parameters && same_qualifiers &&
             moved_scope(wanted.scope, defined.scope)) {
    miss.kind = "scope";
    miss.likelihood = 75;
    miss.differences.push_back(
        "scope: " + (wanted.scope.empty() ? std::string("(global)") : wanted.scope) +
        " (wanted) vs " + (defined.scope.empty() ? std::string("(global)") : defined.scope) +
        where);
  } else {
    return std::nullopt;
  }
  if (mentions_cxx11_abi(miss.differences)) {
    miss.differences.push_back(
        "std::__cxx11 on one side only: the two were built with different "
        "_GLIBCXX_USE_CXX11_ABI settings");
    miss.likelihood = std::max(miss.likelihood, 88);
  }
  return miss;
}

}  // namespace

std::vector<NearMiss> find_near_misses(const LinkClosure& closure, const std::string& mangled,
                                       const std::string& version, std::size_t limit) {
  std::vector<NearMiss> misses;
  const bool cxx = mangled.starts_with("_Z") && mangled.size() <= k_max_demangled_name;
  const auto wanted = cxx ? parse_signature(demangle(mangled)) : std::nullopt;
  const std::string token = wanted ? mangled_token(*wanted) : "";
  for (const auto& object : closure.objects) {
    const std::string library = object.path.filename().string();
    for (const auto& symbol : object.elf->symbols()) {
      if (!symbol.defined) {
        continue;
      }
      if (symbol.name == mangled) {
        // The very symbol, under a version the reference does not accept.
        NearMiss miss;
        miss.mangled = mangled;
        miss.demangled = demangle(mangled);
        miss.library = object.path;
        miss.kind = "version";
        miss.likelihood = 100;
        miss.differences.push_back("version: " + version_text(version, false) + " (wanted) vs " +
                                   version_text(symbol.version, symbol.hidden) + " (defined in " +
                                   library + ")");
        misses.push_back(std::move(miss));
        continue;
      }
      if (!wanted || !symbol.name.starts_with("_Z") || symbol.name.size() > k_max_demangled_name ||
          (!token.empty() && symbol.name.find(token) == std::string_view::npos)) {
        continue;
      }
      const std::string candidate(symbol.name);
      const auto defined = parse_signature(demangle(candidate));
      if (!defined) {
        continue;
      }
      if (auto miss = compare(*wanted, mangled, *defined, candidate, library)) {
        // Of a constructor's or destructor's variants, the one wanted first.
        const auto variant = structor_variant(candidate);
        miss->likelihood += !variant.empty() && variant == structor_variant(mangled) ? 1 : 0;
        miss->mangled = candidate;
        miss->demangled = demangle(candidate);
        miss->library = object.path;
        misses.push_back(std::move(*miss));
      }
    }
  }
  std::stable_sort(misses.begin(), misses.end(),
                   [](const auto& a, const auto& b) { return a.likelihood > b.likelihood; });
  // One entry per definition as a reader sees it: a symbol table can list
  // one twice (once per version), and a constructor's C1 and C2 read alike.
  std::vector<NearMiss> unique;
  for (auto& miss : misses) {
    if (unique.size() < limit &&
        std::none_of(unique.begin(), unique.end(), [&](const NearMiss& kept) {
          return kept.demangled == miss.demangled && kept.library == miss.library &&
                 kept.kind == miss.kind;
        })) {
      unique.push_back(std::move(miss));
    }
  }
  return unique;
}

SymbolReport resolve_symbols(const LinkClosure& closure) {
  SymbolReport report;
  std::size_t searches = 0;
  for (const auto& object : closure.objects) {
    // System libraries are consistent with each other; the env's are not.
    if (object.system || object.found_via == "executable") {
      continue;
    }
    const bool lacks_dependency = std::any_of(
        closure.missing.begin(), closure.missing.end(),
        [&](const MissingLibrary& missing) { return missing.needed_by == object.path; });
    if (lacks_dependency) {
      report.unchecked.push_back(object.path);
      continue;
    }
    for (const auto& needed : object.elf->needed_versions()) {
      for (const auto& provider : closure.objects) {
        if (provider.elf->soname() != needed.library && provider.needed_as != needed.library) {
          continue;
        }
        const auto& versions = provider.elf->defined_versions();
        if (std::find(versions.begin(), versions.end(), needed.version) == versions.end()) {
          report.missing_versions.push_back(
              {std::string(needed.version), std::string(needed.library), object.path});
        }
        break;
      }
    }
    for (const auto& symbol : object.elf->symbols()) {
      if (symbol.defined || symbol.weak) {
        continue;
      }
      bool resolved = false;
      for (const auto& provider : closure.objects) {
        for (const auto* definition : provider.elf->definitions(symbol.name)) {
          resolved = resolved || satisfies(*definition, symbol);
        }
        if (resolved) {
          break;
        }
      }
      if (resolved) {
        continue;
      }
      UnresolvedSymbol unresolved;
      unresolved.mangled = std::string(symbol.name);
      unresolved.demangled = demangle(unresolved.mangled);
      unresolved.version = std::string(symbol.version);
      unresolved.needed_by = object.path;
      if (searches < k_max_searches) {
        ++searches;
        unresolved.near_misses = find_near_misses(closure, unresolved.mangled, unresolved.version);
      }
      report.unresolved.push_back(std::move(unresolved));
    }
  }
  return report;
}

}  // namespace envcontract::loader
