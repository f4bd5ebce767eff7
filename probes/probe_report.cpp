#include "probes/probe_report.hpp"

#include <sstream>

namespace envcontract::probes {

ProbeReport parse_probe_report(const std::string& text) {
  ProbeReport report;
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (line.empty()) {
      continue;
    }
    // Env code can write this file: nesting deeper than any record has is
    // dropped while parsing, so "[[[[..." cannot make it large.
    auto record = Json::parse(
        line, [](int depth, Json::parse_event_t, Json&) { return depth <= 8; }, false);
    if (record.is_discarded() || !record.is_object() || !record.contains("type") ||
        !record["type"].is_string()) {
      report.error =
          "malformed probe output at line " + std::to_string(number) + ": " + line.substr(0, 120);
      return report;
    }
    const std::string type = record["type"].get<std::string>();
    if (type == "start") {
      const auto version = record.find("schema_version");
      if (version == record.end() || !version->is_number_integer() || *version != 1) {
        report.error =
            "probe output has an unknown schema_version at line " + std::to_string(number);
        return report;
      }
      report.started = true;
    } else if (type == "end") {
      report.ended = true;
    } else {
      report.records.push_back(facts::probe_record_from_json(record));
    }
  }
  return report;
}

}  // namespace envcontract::probes
