#pragma once

#include <string>

#include "report/report.hpp"

namespace envcontract::report {

struct TableStyle {
  bool verbose = false;  // evidence and remedy under each failing check
  bool colour = false;   // ANSI colours (only on a terminal, never with NO_COLOR)
};

// A report as a person reads it: a summary line (host, verdict, compliant
// envs, contract), the host's reasons, then one row per env and failing
// check with the diagnosis' summary.
std::string render_table(const Report& report, const TableStyle& style);

// Whether `fd` should get colours: a terminal, and NO_COLOR unset.
bool colour_wanted(int fd);

}  // namespace envcontract::report
