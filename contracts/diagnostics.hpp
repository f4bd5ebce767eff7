#pragma once

#include <string>
#include <vector>

namespace envcontract::contracts {

// A position in a source file, 1-based as editors and compilers print it.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;

  // "file:line:column", or just "file" when the position is unknown.
  std::string to_string() const;
};

// note: what the loader made of a file, for its author; never a problem.
enum class DiagnosticLevel { error, warning, note };

struct Diagnostic {
  DiagnosticLevel level = DiagnosticLevel::error;
  SourceLocation where;
  std::string message;

  // "file:line:column: error: message", the form editors jump to.
  std::string to_string() const;
};

// Collects every problem found in one pass, so a contract author sees all of
// them at once instead of fixing one error per run.
class Diagnostics {
 public:
  void error(SourceLocation where, std::string message);
  void warning(SourceLocation where, std::string message);
  void note(SourceLocation where, std::string message);

  bool has_errors() const { return m_error_count > 0; }
  std::size_t error_count() const { return m_error_count; }
  const std::vector<Diagnostic>& all() const { return m_items; }

  // Sorted by file, line and column: the order a reader expects, whatever
  // order the checks ran in.
  std::vector<Diagnostic> sorted() const;
  // Every one, sorted, as "file:line:column: level: message" lines: what a
  // command prints before it goes on, or stops when any is an error.
  std::string text() const;

 private:
  std::vector<Diagnostic> m_items;
  std::size_t m_error_count = 0;
};

}  // namespace envcontract::contracts
