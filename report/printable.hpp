#pragma once

#include <string>

#include "report/report.hpp"

namespace envcontract::report {

// Text for a terminal: control characters (an escape sequence, a carriage
// return, a bell; as UTF-8, the C1 controls and the bidirectional overrides)
// shown as \xNN, so that env output and reports from hosts we do not
// control never drive the operator's terminal or reorder what it shows. `keep_newlines`
// leaves '\n' for renderings that split text into lines themselves.
std::string printable(const std::string& text, bool keep_newlines = false);

// `value` with every string (keys included) made printable, newlines kept:
// what the table renderings draw from.
Json printable_json(const Json& value);

}  // namespace envcontract::report
