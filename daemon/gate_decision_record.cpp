#include "daemon/gate_decision_record.hpp"

#include "report/printable.hpp"

namespace envcontract::daemon {

const char* to_string(GateDecisionRecord::JudgedBy judged_by) {
  return judged_by == GateDecisionRecord::JudgedBy::agent ? "agent" : "job";
}

std::optional<GateDecisionRecord::Outcome> gate_outcome_from(std::string_view text) {
  for (const auto outcome : {GateDecisionRecord::Outcome::go, GateDecisionRecord::Outcome::drift,
                             GateDecisionRecord::Outcome::unknown}) {
    if (text == report::to_string(outcome)) {
      return outcome;
    }
  }
  return std::nullopt;
}

std::optional<GateDecisionRecord::JudgedBy> judged_by_from(std::string_view text) {
  for (const auto by : {GateDecisionRecord::JudgedBy::agent, GateDecisionRecord::JudgedBy::job}) {
    if (text == to_string(by)) {
      return by;
    }
  }
  return std::nullopt;
}

report::Json to_json(const GateDecisionRecord& record) {
  return {{"id", record.id},
          {"at", record.at},
          {"job",
           {{"ci", record.ci.empty() ? report::Json(nullptr) : report::Json(record.ci)},
            {"id", record.job_id},
            {"url", record.job_url}}},
          {"env", record.env},
          {"contract", {{"name", record.contract_name}, {"sha256", record.contract_sha256}}},
          {"outcome", report::to_string(record.outcome)},
          {"stopped", record.stopped()},
          {"bypass", record.bypass.empty() ? report::Json(nullptr) : report::Json(record.bypass)},
          {"judged_by", to_string(record.judged_by)},
          {"why", record.why}};
}

std::string claimed(std::string_view text) {
  constexpr std::size_t k_most = 512;
  // Made printable before it is cut, a unit at a time (a byte, or a UTF-8
  // character with its continuation bytes): an escape (\xNN) counts the four
  // bytes it takes, and the cut never splits an escape or a character.
  std::string shown;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = begin + 1;
    while (end < text.size() && end - begin < 4 &&
           (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
      ++end;
    }
    const std::string unit = report::printable(std::string(text.substr(begin, end - begin)));
    if (shown.size() + unit.size() > k_most) {
      break;
    }
    shown += unit;
    begin = end;
  }
  return shown;
}

}  // namespace envcontract::daemon
