#pragma once

#include <string>

namespace envcontract::common {

// Text for a terminal: control characters (an escape sequence, a carriage
// return, a bell; as UTF-8, the C1 controls and the bidirectional overrides)
// shown as \xNN, so that env output, contracts and reports from hosts we do
// not control never drive the operator's terminal or reorder what it shows.
// `keep_newlines` leaves '\n' for renderings that split text into lines
// themselves.
std::string printable(const std::string& text, bool keep_newlines = false);

}  // namespace envcontract::common
