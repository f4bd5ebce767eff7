#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "contracts/contract.hpp"
#include "facts/host.hpp"

namespace envcontract::contracts {

enum class CheckStatus { pass, fail, error, skip, waived };
std::string to_string(CheckStatus status);

// Why a check did not pass, in words an operator can act on.
struct Diagnosis {
  std::string cause;               // a stable code: cuda_build, missing_library, hang, ...
  std::string summary;             // one line
  Json evidence = Json::object();  // the facts that prove it
  std::string remedy;              // what to do about it
};

struct CheckResult {
  std::string id;
  std::string kind;
  Severity severity = Severity::required;
  CheckStatus status = CheckStatus::skip;
  Json expected = nullptr;
  Json actual = nullptr;
  std::optional<Diagnosis> diagnosis;  // for anything that did not pass
  std::vector<Diagnosis> notes;        // advisory findings, e.g. activation_required
};

enum class EnvVerdict { compliant, drift, error };
std::string to_string(EnvVerdict verdict);

struct EnvJudgement {
  EnvVerdict verdict = EnvVerdict::error;
  std::vector<CheckResult> checks;
};

// Judges every check of `contract` against one env's facts (facts::EnvFacts:
// what probes gathered, its dynamic stages included when they ran). A
// required check that fails makes the env drift; one that could not be
// judged, an error. Waivers in force on `now` turn failing checks into
// `waived`.
EnvJudgement judge_env(
    const Contract& contract, const facts::EnvFacts& env_facts,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

Json to_json(const CheckResult& result);
Json to_json(const EnvJudgement& judgement);

}  // namespace envcontract::contracts
