#pragma once

#include <string>
#include <string_view>

// Python packaging rules that both contracts and probes apply, so a name in a
// contract and a name on disk compare equal exactly when pip says they do.
namespace envcontract::common {

// PEP 503 normalisation of a distribution name: lower case, every run of
// "-", "_" and "." becomes one "-". "Flag__Gems.x" -> "flag-gems-x".
std::string normalize_distribution_name(std::string_view name);

// "3.10" from "3.10.13" (or "3.10"): the part of a Python version its
// lib/pythonX.Y directories and extension tags are named after; "" when the
// version has no minor part.
std::string python_major_minor(std::string_view version);

}  // namespace envcontract::common
