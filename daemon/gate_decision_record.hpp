#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "report/ci_output.hpp"
#include "report/report.hpp"

namespace envcontract::daemon {

// One CI gate decision as the agent keeps it (docs/ci.md): which job asked,
// for which env, under which contract, what was decided and who judged.
// What the job says of itself (its CI, id, link, bypass reason) is its
// claim: any local user can ask the agent, so it is recorded as given, cut
// to a bounded size and made printable, and never decides anything.
struct GateDecisionRecord {
  using Outcome = report::GateDecision::Outcome;
  // agent: the agent judged the env itself; job: the job's gate judged it
  // (under a contract the agent does not hold, or an env it does not know)
  // and told the agent what it decided.
  enum class JudgedBy { agent, job };

  std::int64_t id = 0;
  std::string at;  // RFC 3339
  std::string ci;  // github, gitlab, or "" for another CI
  std::string job_id;
  std::string job_url;
  std::string env;  // the env's prefix; "" for every env found
  std::string contract_name;
  std::string contract_sha256;
  Outcome outcome = Outcome::unknown;
  std::string bypass;  // the reason a stopped job started anyway; "" for none
  JudgedBy judged_by = JudgedBy::agent;
  std::string why;  // the decision on one line

  // The job was stopped and did not start anyway.
  bool stopped() const { return outcome != Outcome::go && bypass.empty(); }
};

const char* to_string(GateDecisionRecord::JudgedBy judged_by);
std::optional<GateDecisionRecord::Outcome> gate_outcome_from(std::string_view text);
std::optional<GateDecisionRecord::JudgedBy> judged_by_from(std::string_view text);

// Which decisions GET /api/v1/gate/decisions lists, newest first.
struct GateDecisionQuery {
  std::optional<GateDecisionRecord::JudgedBy> judged_by;  // none: both kinds
  std::int64_t before = 0;                                // only older ids; 0: from the newest
  std::size_t limit = 100;
};

// Its JSON form (GET /api/v1/gate/decisions).
report::Json to_json(const GateDecisionRecord& record);

// What the job claims, bounded: at most 512 bytes, printable.
std::string claimed(std::string_view text);

}  // namespace envcontract::daemon
