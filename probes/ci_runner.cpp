#include "probes/ci_runner.hpp"

#include <cctype>

namespace envcontract::probes {
namespace {

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

}  // namespace

std::string expand_variables(const std::string& text, const facts::Environment& environment) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] != '$' || i + 1 == text.size()) {
      out += text[i++];
      continue;
    }
    const bool braced = text[i + 1] == '{';
    const std::size_t start = i + (braced ? 2 : 1);
    std::size_t end = start;
    while (end < text.size() && name_char(text[end])) {
      ++end;
    }
    const bool closed = !braced || (end < text.size() && text[end] == '}');
    if (end == start || !closed) {
      out += text[i++];
      continue;
    }
    const std::size_t after = braced ? end + 1 : end;
    const auto value = environment.find(text.substr(start, end - start));
    out += value != environment.end() ? value->second : text.substr(i, after - i);
    i = after;
  }
  return out;
}

facts::Environment layered_environment(
    facts::Environment base, const std::vector<std::pair<std::string, std::string>>& layers) {
  for (const auto& [name, value] : layers) {
    base[name] = expand_variables(value, base);
  }
  return base;
}

std::vector<std::string> ci_runner_argv(const std::string& command) {
  return {"/bin/bash", "--noprofile", "--norc", "-c", "set -euo pipefail\n" + command};
}

}  // namespace envcontract::probes
