#pragma once

#include <string>

#include "common/printable.hpp"
#include "report/report.hpp"

namespace envcontract::report {

// Text for a terminal (common/printable.hpp), here where reports are drawn.
using common::printable;

// `value` with every string (keys included) made printable, newlines kept:
// what the table renderings draw from.
Json printable_json(const Json& value);

}  // namespace envcontract::report
