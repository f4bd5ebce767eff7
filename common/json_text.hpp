#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace envcontract::common {

// JSON text of `value` that never throws: strings from outside (file names,
// contract text, env output) may hold invalid UTF-8, on which nlohmann's
// dump() throws; here such bytes become U+FFFD. `indent` < 0: one line.
std::string json_text(const nlohmann::ordered_json& value, int indent = -1);

}  // namespace envcontract::common
