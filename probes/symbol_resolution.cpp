#include "probes/symbol_resolution.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace envcontract::probes {
namespace fs = std::filesystem;

namespace {

std::string ordinal(std::size_t n) {
  const char* suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    suffix = n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
  }
  return std::to_string(n) + suffix;
}

// Splits at commas outside <>, (), [] nesting.
std::vector<std::string> split_top_level(const std::string& text) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (const char c : text) {
    if (c == '<' || c == '(' || c == '[') {
      ++depth;
    } else if (c == '>' || c == ')' || c == ']') {
      --depth;
    }
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
      continue;
    }
    current.push_back(c);
  }
  if (!current.empty()) {
    parts.push_back(current);
  }
  for (auto& part : parts) {
    const auto first = part.find_first_not_of(' ');
    const auto last = part.find_last_not_of(' ');
    part = first == std::string::npos ? "" : part.substr(first, last - first + 1);
  }
  return parts;
}

// The unqualified last component of "a::b::name", as it appears mangled
// ("4name"): a cheap filter before demangling candidates.
std::string mangled_token(const std::string& qualified_name) {
  const auto colons = qualified_name.rfind("::");
  const std::string last =
      colons == std::string::npos ? qualified_name : qualified_name.substr(colons + 2);
  return std::to_string(last.size()) + last;
}

bool satisfies(const DynamicSymbol& definition, const DynamicSymbol& reference) {
  if (!reference.version.empty()) {
    return definition.version == reference.version;
  }
  // An unversioned reference binds to the default (non-hidden) definition.
  return !definition.hidden;
}

std::optional<NearMiss> find_near_miss(const LinkClosure& closure, const std::string& mangled) {
  const auto wanted = parse_signature(demangle(mangled));
  if (!wanted || mangled.rfind("_Z", 0) != 0) {
    return std::nullopt;
  }
  const std::string token = mangled_token(wanted->qualified_name);
  for (const auto& object : closure.objects) {
    for (const auto& symbol : object.elf->symbols()) {
      if (!symbol.defined || symbol.name == mangled ||
          symbol.name.find(token) == std::string_view::npos) {
        continue;
      }
      const std::string candidate(symbol.name);
      const auto defined = parse_signature(demangle(candidate));
      if (!defined || defined->qualified_name != wanted->qualified_name) {
        continue;
      }
      NearMiss miss;
      miss.mangled = candidate;
      miss.demangled = demangle(candidate);
      miss.library = object.path;
      miss.differences = signature_differences(*wanted, *defined, object.path.filename().string());
      return miss;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string demangle(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && text ? std::string(text.get()) : mangled;
}

std::optional<Signature> parse_signature(const std::string& demangled) {
  std::string text = demangled;
  Signature signature;
  // Trailing qualifiers of member functions.
  for (const char* qualifier : {" const", " volatile", " &&", " &"}) {
    while (text.size() > std::string_view(qualifier).size() && text.ends_with(qualifier)) {
      signature.qualifiers = qualifier + signature.qualifiers;
      text.resize(text.size() - std::string_view(qualifier).size());
    }
  }
  if (text.empty() || text.back() != ')') {
    return std::nullopt;
  }
  int depth = 0;
  std::size_t open = std::string::npos;
  for (std::size_t i = text.size(); i-- > 0;) {
    if (text[i] == ')') {
      ++depth;
    } else if (text[i] == '(' && --depth == 0) {
      open = i;
      break;
    }
  }
  if (open == std::string::npos || open == 0) {
    return std::nullopt;
  }
  signature.qualified_name = text.substr(0, open);
  const std::string parameters = text.substr(open + 1, text.size() - open - 2);
  if (parameters != "" && parameters != "void") {
    signature.parameters = split_top_level(parameters);
  }
  return signature;
}

std::vector<std::string> signature_differences(const Signature& wanted, const Signature& defined,
                                               const std::string& defining_library) {
  std::vector<std::string> differences;
  const std::string where = " (defined in " + defining_library + ")";
  const std::size_t common = std::min(wanted.parameters.size(), defined.parameters.size());
  for (std::size_t i = 0; i < common; ++i) {
    if (wanted.parameters[i] != defined.parameters[i]) {
      differences.push_back(ordinal(i + 1) + " parameter: " + wanted.parameters[i] +
                            " (wanted) vs " + defined.parameters[i] + where);
    }
  }
  if (wanted.parameters.size() != defined.parameters.size()) {
    differences.push_back("wanted " + std::to_string(wanted.parameters.size()) +
                          " parameters, the definition has " +
                          std::to_string(defined.parameters.size()) + where);
  }
  if (wanted.qualifiers != defined.qualifiers) {
    differences.push_back("qualifiers: '" + wanted.qualifiers + "' (wanted) vs '" +
                          defined.qualifiers + "'" + where);
  }
  return differences;
}

SymbolReport resolve_symbols(const LinkClosure& closure) {
  SymbolReport report;
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
      unresolved.near_miss = find_near_miss(closure, unresolved.mangled);
      report.unresolved.push_back(std::move(unresolved));
    }
  }
  return report;
}

}  // namespace envcontract::probes
