#include "tests/support/contract_text.hpp"

#include <sstream>

namespace envcontract::testing {

contracts::LoadResult load_text(const std::string& text) {
  return contracts::load_contract_text(text, "contract.yaml");
}

contracts::LoadResult load_checks(const std::string& checks_yaml) {
  std::istringstream lines(checks_yaml);
  std::string text = "schema_version: 1\nchecks:\n";
  for (std::string line; std::getline(lines, line);) {
    text += "  " + line + "\n";
  }
  return load_text(text);
}

std::vector<std::string> messages(const contracts::LoadResult& result) {
  std::vector<std::string> lines;
  for (const auto& diagnostic : result.diagnostics.sorted()) {
    lines.push_back(diagnostic.to_string());
  }
  return lines;
}

std::string joined(const contracts::LoadResult& result) {
  std::string text;
  for (const auto& line : messages(result)) {
    text += line + "\n";
  }
  return text;
}

std::ostream& operator<<(std::ostream& out, const Position& at) {
  return out << at.line << ":" << at.column;
}

std::ostream& operator<<(std::ostream& out, const DiagnosticAt& at) {
  const char* level = at.level == contracts::DiagnosticLevel::error     ? "error"
                      : at.level == contracts::DiagnosticLevel::warning ? "warning"
                                                                        : "note";
  return out << level << "@" << at.line << ":" << at.column;
}

std::vector<DiagnosticAt> diagnostics_at(const contracts::Diagnostics& diagnostics) {
  std::vector<DiagnosticAt> all;
  for (const auto& diagnostic : diagnostics.sorted()) {
    all.push_back({diagnostic.level, diagnostic.where.line, diagnostic.where.column});
  }
  return all;
}

}  // namespace envcontract::testing
