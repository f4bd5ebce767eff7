#include "daemon/gate_routes.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>

#include "daemon/agent.hpp"
#include "report/report_json.hpp"

namespace envcontract::daemon {

namespace {

using Json = report::Json;

// The request's parameters, each at most once and each one `allowed`; or
// the error answer saying which is wrong.
std::optional<PlainResponse> parameters_problem(const PlainRequest& request,
                                                const std::set<std::string>& allowed,
                                                const std::string& endpoint) {
  std::set<std::string> seen;
  for (const auto& [key, value] : request.params) {
    if (!allowed.contains(key)) {
      std::string names;
      for (const auto& name : allowed) {
        names += (names.empty() ? "" : ", ") + name;
      }
      return error_answer(
          400, "unknown parameter '" + claimed(key) + "'; " + endpoint + " takes " + names);
    }
    if (!seen.insert(key).second) {
      return error_answer(400, "parameter '" + key + "' is given twice");
    }
  }
  return std::nullopt;
}

std::string parameter(const PlainRequest& request, const std::string& name) {
  const auto found = request.params.find(name);
  return found == request.params.end() ? "" : found->second;
}

std::optional<std::int64_t> positive_number(const std::string& text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 1) {
    return std::nullopt;
  }
  return value;
}

bool is_sha256(const std::string& text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

PlainResponse gate_answer(Agent& agent, const PlainRequest& request) {
  if (auto problem = parameters_problem(
          request, {"env", "contract", "ci", "job_id", "job_url", "bypass"}, "gate")) {
    return *problem;
  }
  GateRequest gate;
  gate.env = parameter(request, "env");
  gate.contract_digest = parameter(request, "contract");
  gate.ci = parameter(request, "ci");
  gate.job_id = parameter(request, "job_id");
  gate.job_url = parameter(request, "job_url");
  gate.bypass = parameter(request, "bypass");
  if (!gate.contract_digest.empty() && !is_sha256(gate.contract_digest)) {
    return error_answer(400, "contract is the SHA-256 of the contract as judged (64 hex digits)");
  }
  if (!gate.env.empty() && gate.env.front() != '/') {
    return error_answer(400, "env is the env's prefix, an absolute path");
  }
  const auto answer = agent.gate(gate);
  using Refusal = GateAnswer::Refusal;
  switch (answer.refusal) {
    case Refusal::none:
      break;
    case Refusal::contract_differs:
      return error_answer(409, answer.message);
    case Refusal::env_unknown:
      return error_answer(404, answer.message);
    case Refusal::busy: {
      auto busy = error_answer(503, answer.message);
      busy.headers.emplace_back("Retry-After", "5");
      return busy;
    }
    case Refusal::no_contract:
    case Refusal::stopping:
      return error_answer(503, answer.message);
  }
  return json_answer(200, {{"decision", to_json(answer.record)},
                           {"probed", answer.probed},
                           {"reused", answer.reused},
                           {"elapsed_ms", answer.elapsed_ms},
                           {"report", report::to_json(answer.report)}});
}

PlainResponse gate_record_answer(Agent& agent, const PlainRequest& request) {
  if (auto problem = parameters_problem(request,
                                        {"outcome", "env", "contract_name", "contract_sha256", "ci",
                                         "job_id", "job_url", "bypass", "why"},
                                        "gate/record")) {
    return *problem;
  }
  if (!agent.admit_job_gate_record()) {
    auto busy =
        error_answer(429, "more than " + std::to_string(GateService::max_claimed_per_minute) +
                              " decisions of jobs' own were recorded in the last minute");
    busy.headers.emplace_back("Retry-After", "60");
    return busy;
  }
  const auto outcome = gate_outcome_from(parameter(request, "outcome"));
  if (!outcome) {
    return error_answer(400, "outcome is go, drift or unknown");
  }
  GateDecisionRecord record;
  record.outcome = *outcome;
  record.env = claimed(parameter(request, "env"));
  record.contract_name = claimed(parameter(request, "contract_name"));
  record.contract_sha256 = claimed(parameter(request, "contract_sha256"));
  record.ci = claimed(parameter(request, "ci"));
  record.job_id = claimed(parameter(request, "job_id"));
  record.job_url = claimed(parameter(request, "job_url"));
  record.bypass =
      *outcome == GateDecisionRecord::Outcome::go ? "" : claimed(parameter(request, "bypass"));
  record.why = claimed(parameter(request, "why"));
  const auto id = agent.record_job_gate_decision(record);
  if (!id) {
    return error_answer(500, id.error());
  }
  return json_answer(201, {{"id", id.value()}});
}

PlainResponse gate_decisions_answer(Agent& agent, const PlainRequest& request) {
  if (auto problem =
          parameters_problem(request, {"limit", "judged_by", "before"}, "gate/decisions")) {
    return *problem;
  }
  GateDecisionQuery query;
  if (const std::string text = parameter(request, "limit"); !text.empty()) {
    const auto limit = positive_number(text);
    if (!limit || *limit > 1000) {
      return error_answer(400, "limit is a number from 1 to 1000");
    }
    query.limit = static_cast<std::size_t>(*limit);
  }
  if (const std::string text = parameter(request, "before"); !text.empty()) {
    const auto before = positive_number(text);
    if (!before) {
      return error_answer(400, "before is a decision's id: the next page starts below it");
    }
    query.before = *before;
  }
  if (const std::string judge = parameter(request, "judged_by"); !judge.empty()) {
    query.judged_by = judged_by_from(judge);
    if (!query.judged_by) {
      return error_answer(400, "judged_by is agent or job");
    }
  }
  auto decisions = Json::array();
  try {
    for (const auto& record : agent.gate_decisions(query)) {
      decisions.push_back(to_json(record));
    }
  } catch (const std::exception& e) {
    return error_answer(500, std::string("the store could not be read: ") + e.what());
  }
  return json_answer(200, {{"decisions", decisions}});
}

}  // namespace envcontract::daemon
