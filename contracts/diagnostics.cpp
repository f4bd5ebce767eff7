#include "contracts/diagnostics.hpp"

#include <algorithm>
#include <tuple>

namespace envcontract::contracts {

std::string SourceLocation::to_string() const {
  if (line <= 0) {
    return file;
  }
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

std::string Diagnostic::to_string() const {
  const char* level_name = level == DiagnosticLevel::error     ? "error"
                           : level == DiagnosticLevel::warning ? "warning"
                                                               : "note";
  return where.to_string() + ": " + level_name + ": " + message;
}

void Diagnostics::error(SourceLocation where, std::string message) {
  m_items.push_back({DiagnosticLevel::error, std::move(where), std::move(message)});
  ++m_error_count;
}

void Diagnostics::note(SourceLocation where, std::string message) {
  m_items.push_back({DiagnosticLevel::note, std::move(where), std::move(message)});
}

void Diagnostics::warning(SourceLocation where, std::string message) {
  m_items.push_back({DiagnosticLevel::warning, std::move(where), std::move(message)});
}

std::string Diagnostics::text() const {
  std::string lines;
  for (const auto& diagnostic : sorted()) {
    lines += diagnostic.to_string() + "\n";
  }
  return lines;
}

std::vector<Diagnostic> Diagnostics::sorted() const {
  std::vector<Diagnostic> result = m_items;
  std::stable_sort(result.begin(), result.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::tie(a.where.file, a.where.line, a.where.column) <
           std::tie(b.where.file, b.where.line, b.where.column);
  });
  return result;
}

}  // namespace envcontract::contracts
