#pragma once

#include <string>
#include <vector>

#include "discovery/python_env.hpp"
#include "facts/dynamic.hpp"
#include "probes/fact_names.hpp"

namespace envcontract::probes {

// What the probe program wrote into its result file (JSON Lines, schema 1).
struct ProbeReport {
  std::vector<facts::ProbeRecord> records;  // every record but start and end
  bool started = false;                     // a valid start record was seen
  bool ended = false;                       // the end record was seen: the stage finished
  std::string stage;                        // as its start record names it
  double seconds = -1;                      // the stage's own time, from its end record
  std::string error;                        // the first malformed line; nothing after it is trusted
};

// Parses the report. Any line that is not a JSON object with a string
// "type", or a start record of another schema version, ends the parse with
// an error: env code may have written into the file.
ProbeReport parse_probe_report(const std::string& text);

// The report of a chain (several stages in one interpreter): one per start
// record, in order. What precedes the first start record makes a report of
// its own that never started. A malformed line ends the parse, with the
// error in the report it fell in.
std::vector<ProbeReport> parse_probe_reports(const std::string& text);

}  // namespace envcontract::probes
