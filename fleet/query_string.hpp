#pragma once

#include <string>
#include <utility>
#include <vector>

namespace envcontract::fleet {

// "?name=value&..." with names and values percent-encoded (RFC 3986: every
// byte but the unreserved ones), parameters with an empty value left out;
// "" when none is left.
std::string query_string(const std::vector<std::pair<std::string, std::string>>& parameters);

}  // namespace envcontract::fleet
