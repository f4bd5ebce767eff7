#pragma once

#include <string>

#include "report/report.hpp"

namespace envcontract::report {

// A diagnosis' evidence as lines a person reads in a terminal, each starting
// with `indent`: one `key: value` per line, nested objects indented, text with
// line breaks as an indented block, long lists cut with "... N more". A hang's
// threads are grouped by what they wait in, the spinning ones listed first,
// and its native stack is one frame per line. The JSON report keeps it all.
std::string evidence_text(const Json& evidence, const std::string& indent);

}  // namespace envcontract::report
