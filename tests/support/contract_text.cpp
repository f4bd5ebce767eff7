#include "tests/support/contract_text.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "common/json_text.hpp"

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

contracts::EnvJudgement judge_checks(const std::string& rules, const facts::EnvFacts& env) {
  auto loaded = load_checks(rules);
  EXPECT_TRUE(loaded.contract) << joined(loaded);
  if (!loaded.contract) {
    return {};
  }
  return contracts::judge_env(*loaded.contract, env);
}

contracts::CheckResult check_of(const contracts::EnvJudgement& judged, const std::string& id) {
  for (const auto& check : judged.checks) {
    if (check.id == id) {
      return check;
    }
  }
  ADD_FAILURE() << "no check " << id;
  return {};
}

contracts::CheckResult judge_one(const std::string& rule, const facts::EnvFacts& env) {
  return check_of(judge_checks(rule, env), "c");
}

std::string cause_of(const contracts::CheckResult& result) {
  return result.diagnosis ? result.diagnosis->cause : "";
}

std::string shown(const contracts::CheckResult& result) {
  return common::json_text(contracts::to_json(result));
}

}  // namespace envcontract::testing
