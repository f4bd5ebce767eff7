#include "loader/symbol_names.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string_view>

namespace envcontract::loader {

namespace {

// Stands for an operator's spelling while nesting is counted: "operator<"
// and "operator()" would otherwise open brackets that never close.
constexpr char k_operator_mark = '\x01';

std::string ordinal(std::size_t n) {
  const char* suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    suffix = n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
  }
  return std::to_string(n) + suffix;
}

bool opens(char c) {
  return c == '<' || c == '(' || c == '[' || c == '{';
}

bool closes(char c) {
  return c == '>' || c == ')' || c == ']' || c == '}';
}

bool identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::string trim_spaces(const std::string& text) {
  const auto first = text.find_first_not_of(' ');
  const auto last = text.find_last_not_of(' ');
  return first == std::string::npos ? "" : text.substr(first, last - first + 1);
}

// Splits at commas outside any nesting.
std::vector<std::string> split_top_level(const std::string& text) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (const char c : text) {
    depth += opens(c) ? 1 : closes(c) ? -1 : 0;
    if (c == ',' && depth == 0) {
      parts.push_back(trim_spaces(current));
      current.clear();
      continue;
    }
    current.push_back(c);
  }
  if (!trim_spaces(current).empty()) {
    parts.push_back(trim_spaces(current));
  }
  return parts;
}

// The operator in `prefix` ("ns::Vec::operator+=", "operator new[]",
// "A::operator int"), replaced by a mark; its spelling goes to `spelling`.
std::string mask_operator(const std::string& prefix, std::string& spelling) {
  for (auto at = prefix.find("operator"); at != std::string::npos;
       at = prefix.find("operator", at + 8)) {
    const bool starts_word = at == 0 || prefix[at - 1] == ':' || prefix[at - 1] == ' ';
    const std::size_t after = at + 8;
    if (!starts_word || (after < prefix.size() && identifier_char(prefix[after]))) {
      continue;
    }
    std::size_t end = after;
    const std::string_view rest = std::string_view(prefix).substr(after);
    if (rest.starts_with("()") || rest.starts_with("[]")) {
      end += 2;
    } else if (rest.starts_with(" ")) {
      end = prefix.size();  // new, delete, or a conversion: the rest is its type
    } else {
      while (end < prefix.size() &&
             std::string_view("+-*/%^&|~!=<>,").find(prefix[end]) != std::string_view::npos) {
        ++end;
      }
      // "operator< <int>": the space ends the spelling; template arguments follow.
    }
    spelling = prefix.substr(at, end - at);
    return prefix.substr(0, at) + k_operator_mark + prefix.substr(end);
  }
  return prefix;
}

std::string unmask(std::string text, const std::string& spelling) {
  const auto at = text.find(k_operator_mark);
  if (at != std::string::npos) {
    text.replace(at, 1, spelling);
  }
  return text;
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
  // GCC's split-off parts: "f(int) [clone .cold]".
  if (const auto clone = text.find(" [clone "); clone != std::string::npos) {
    text.resize(clone);
  }
  Signature signature;
  for (bool stripped = true; stripped;) {
    stripped = false;
    for (const char* qualifier : {" const", " volatile", " &&", " &"}) {
      if (text.size() > std::string_view(qualifier).size() && text.ends_with(qualifier)) {
        signature.qualifiers = qualifier + signature.qualifiers;
        text.resize(text.size() - std::string_view(qualifier).size());
        stripped = true;
      }
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
  const std::string parameters = text.substr(open + 1, text.size() - open - 2);
  if (parameters != "" && parameters != "void") {
    signature.parameters = split_top_level(parameters);
  }
  std::string spelling;
  const std::string prefix = mask_operator(text.substr(0, open), spelling);
  // Demangled template instances start with their return type: it ends at
  // the last space outside any nesting ("std::pair<int, int> ns::f<int>"),
  // except the one in "operator< <int>" before template arguments.
  std::size_t start = 0;
  depth = 0;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    depth += opens(prefix[i]) ? 1 : closes(prefix[i]) ? -1 : 0;
    if (depth == 0 && prefix[i] == ' ' && (i + 1 == prefix.size() || prefix[i + 1] != '<')) {
      start = i + 1;
    }
  }
  if (start > 0) {
    signature.return_type = unmask(trim_spaces(prefix.substr(0, start - 1)), spelling);
  }
  std::size_t last_colons = std::string::npos;
  depth = 0;
  for (std::size_t i = start; i < prefix.size(); ++i) {
    depth += opens(prefix[i]) ? 1 : closes(prefix[i]) ? -1 : 0;
    if (depth == 0 && prefix.compare(i, 2, "::") == 0) {
      last_colons = i;
    }
  }
  std::string name;
  if (last_colons != std::string::npos) {
    signature.scope = unmask(prefix.substr(start, last_colons - start), spelling);
    name = prefix.substr(last_colons + 2);
  } else {
    name = prefix.substr(start);
  }
  // ABI tags, then template arguments, off the name.
  for (auto tag = name.find("[abi:"); tag != std::string::npos; tag = name.find("[abi:")) {
    const auto close = name.find(']', tag);
    if (close == std::string::npos) {
      break;
    }
    signature.abi_tags.push_back(name.substr(tag + 5, close - tag - 5));
    name.erase(tag, close - tag + 1);
  }
  if (const auto angle = name.find('<'); angle != std::string::npos && name.back() == '>') {
    signature.template_args = trim_spaces(name.substr(angle));
    name = trim_spaces(name.substr(0, angle));
  }
  signature.name = unmask(name, spelling);
  signature.qualified_name = (signature.scope.empty() ? "" : signature.scope + "::") +
                             signature.name + signature.template_args;
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

}  // namespace envcontract::loader
