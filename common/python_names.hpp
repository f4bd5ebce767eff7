#pragma once

#include <string>
#include <string_view>

// Python packaging rules that both contracts and probes apply, so a name in a
// contract and a name on disk compare equal exactly when pip says they do.
namespace envcontract::common {

// PEP 503 normalisation of a distribution name: lower case, every run of
// "-", "_" and "." becomes one "-". "Flag__Gems.x" -> "flag-gems-x".
std::string normalize_distribution_name(std::string_view name);

}  // namespace envcontract::common
