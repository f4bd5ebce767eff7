#include "probes/probe_report.hpp"

#include <sstream>

#include "common/json_from_outside.hpp"

namespace envcontract::probes {
namespace {

// Reads `text` line by line into `reports`: with `split`, each start record
// begins a report of its own; without, all go into one.
void parse_into(const std::string& text, bool split, std::vector<ProbeReport>& reports) {
  std::istringstream lines(text);
  int number = 0;
  auto current = [&]() -> ProbeReport& {
    if (reports.empty()) {
      reports.emplace_back();
    }
    return reports.back();
  };
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (line.empty()) {
      continue;
    }
    // Env code can write this file: nesting deeper than any record has is
    // dropped while parsing, so "[[[[..." cannot make it large, and nesting
    // past the bound of every outside document makes the line malformed.
    // (The file's reader bounds its size, so any of its lines fits.)
    auto parsed = common::parse_outside_json(line, "probe output",
                                             {.max_bytes = text.size(), .kept_depth = 8});
    const Json record = parsed ? std::move(parsed).value() : Json();
    if (!record.is_object() || !record.contains("type") || !record["type"].is_string()) {
      current().error =
          "malformed probe output at line " + std::to_string(number) + ": " + line.substr(0, 120);
      return;
    }
    const std::string type = record["type"].get<std::string>();
    if (type == "start") {
      const auto version = record.find("schema_version");
      if (version == record.end() || !version->is_number_integer() || *version != 1) {
        current().error =
            "probe output has an unknown schema_version at line " + std::to_string(number);
        return;
      }
      if (split || reports.empty()) {
        reports.emplace_back();
      }
      reports.back().started = true;
      const auto stage = record.find("stage");
      reports.back().stage =
          stage != record.end() && stage->is_string() ? stage->get<std::string>() : std::string();
    } else if (type == "end") {
      current().ended = true;
      const auto seconds = record.find("seconds");
      // A time no stage can take (1e300, from env code that wrote the
      // record itself) would overflow the milliseconds it becomes.
      constexpr double k_longest_stage_seconds = 366.0 * 24 * 3600;
      const double value =
          seconds != record.end() && seconds->is_number() ? seconds->get<double>() : -1;
      if (value >= 0 && value <= k_longest_stage_seconds) {
        current().seconds = value;
      }
    } else {
      current().records.push_back(facts::probe_record_from_json(record));
    }
  }
}

}  // namespace

ProbeReport parse_probe_report(const std::string& text) {
  std::vector<ProbeReport> reports;
  parse_into(text, false, reports);
  return reports.empty() ? ProbeReport{} : std::move(reports.front());
}

std::vector<ProbeReport> parse_probe_reports(const std::string& text) {
  std::vector<ProbeReport> reports;
  parse_into(text, true, reports);
  return reports;
}

}  // namespace envcontract::probes
