#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "contracts/contract_loader.hpp"
#include "contracts/judgement.hpp"
#include "facts/host.hpp"

namespace envcontract::testing {

// Loads contract text as if from "contract.yaml" in the current directory.
contracts::LoadResult load_text(const std::string& text);

// Loads a native contract holding just the given check list (YAML lines that
// start with "- "), indented under `checks:`.
contracts::LoadResult load_checks(const std::string& checks_yaml);

// Every diagnostic, one "file:line:column: level: message" per entry, sorted.
std::vector<std::string> messages(const contracts::LoadResult& result);

// The error messages joined with newlines, for readable assertion failures.
std::string joined(const contracts::LoadResult& result);

// Every check of a contract holding just `rules` (YAML lines "- {...}")
// judged against `env`.
contracts::EnvJudgement judge_checks(const std::string& rules, const facts::EnvFacts& env);
// The result of check `id` (a test failure, and an empty result, when there is none).
contracts::CheckResult check_of(const contracts::EnvJudgement& judged, const std::string& id);
// The result of the one check "c" written as `rule`.
contracts::CheckResult judge_one(const std::string& rule, const facts::EnvFacts& env);
// Its diagnosis' cause, or "".
std::string cause_of(const contracts::CheckResult& result);
// The result as JSON text, for readable assertion failures.
std::string shown(const contracts::CheckResult& result);

// Where a diagnostic points (1-based, as editors show it): what tests
// assert instead of its prose.
struct Position {
  int line = 0;
  int column = 0;
  bool operator==(const Position&) const = default;
};
std::ostream& operator<<(std::ostream& out, const Position& at);  // "line:column"

// A diagnostic's level and position.
struct DiagnosticAt {
  contracts::DiagnosticLevel level = contracts::DiagnosticLevel::error;
  int line = 0;
  int column = 0;
  bool operator==(const DiagnosticAt&) const = default;
};
std::ostream& operator<<(std::ostream& out, const DiagnosticAt& at);  // "error@line:column"

// Every diagnostic's level and position, sorted as Diagnostics::sorted() is.
std::vector<DiagnosticAt> diagnostics_at(const contracts::Diagnostics& diagnostics);

}  // namespace envcontract::testing
