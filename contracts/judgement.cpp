#include "contracts/judgement.hpp"

#include "contracts/check_kind.hpp"
#include "contracts/env_facts.hpp"

namespace envcontract::contracts {

std::string to_string(CheckStatus status) {
  switch (status) {
    case CheckStatus::pass:
      return "pass";
    case CheckStatus::fail:
      return "fail";
    case CheckStatus::error:
      return "error";
    case CheckStatus::skip:
      return "skip";
    case CheckStatus::waived:
      break;
  }
  return "waived";
}

std::string to_string(EnvVerdict verdict) {
  switch (verdict) {
    case EnvVerdict::compliant:
      return "compliant";
    case EnvVerdict::drift:
      return "drift";
    case EnvVerdict::error:
      break;
  }
  return "error";
}

namespace judges {

void fail(CheckResult& result, std::string cause, std::string summary, Json evidence,
          std::string remedy) {
  result.status = CheckStatus::fail;
  result.diagnosis =
      Diagnosis{std::move(cause), std::move(summary), std::move(evidence), std::move(remedy)};
}

void pass(CheckResult& result) {
  result.status = CheckStatus::pass;
  result.diagnosis.reset();
}

}  // namespace judges

EnvJudgement judge_env(const Contract& contract, const Json& env_facts) {
  const EnvFactsView facts(env_facts);
  EnvJudgement judgement;
  bool failed = false;
  bool errored = false;
  for (const auto& check : contract.checks) {
    CheckResult result;
    result.id = check.id;
    result.kind = check.kind;
    result.severity = check.severity;
    result.expected = check.params;
    const CheckKind* kind = find_check_kind(check.kind);
    if (kind == nullptr || kind->judge == nullptr) {
      result.status = CheckStatus::error;
      result.diagnosis =
          Diagnosis{"unsupported_check",
                    "checks of kind '" + check.kind + "' cannot be judged by this version yet",
                    Json::object(), "upgrade envcontract, or mark the check advisory"};
    } else {
      kind->judge(check, facts, result);
    }
    if (check.severity == Severity::required) {
      failed = failed || result.status == CheckStatus::fail;
      errored = errored || result.status == CheckStatus::error;
    }
    judgement.checks.push_back(std::move(result));
  }
  judgement.verdict = failed    ? EnvVerdict::drift
                      : errored ? EnvVerdict::error
                                : EnvVerdict::compliant;
  return judgement;
}

namespace {

Json diagnosis_json(const Diagnosis& diagnosis) {
  return {{"cause", diagnosis.cause},
          {"summary", diagnosis.summary},
          {"evidence", diagnosis.evidence},
          {"remedy", diagnosis.remedy}};
}

}  // namespace

Json to_json(const CheckResult& result) {
  Json json = {{"id", result.id},
               {"kind", result.kind},
               {"severity", to_string(result.severity)},
               {"status", to_string(result.status)},
               {"expected", result.expected},
               {"actual", result.actual}};
  json["diagnosis"] = result.diagnosis ? diagnosis_json(*result.diagnosis) : Json(nullptr);
  auto notes = Json::array();
  for (const auto& note : result.notes) {
    notes.push_back(diagnosis_json(note));
  }
  json["notes"] = notes;
  return json;
}

Json to_json(const EnvJudgement& judgement) {
  auto checks = Json::array();
  for (const auto& check : judgement.checks) {
    checks.push_back(to_json(check));
  }
  return {{"verdict", to_string(judgement.verdict)}, {"checks", checks}};
}

}  // namespace envcontract::contracts
