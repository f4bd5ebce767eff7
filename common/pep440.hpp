#pragma once

#include <optional>
#include <string>
#include <string_view>

// Comparing Python versions the way pip does (PEP 440), for the cases
// contracts use: release numbers, pre-releases (a, b, rc), post and dev
// releases, local segments ("+cpu", "+ascend3.5").
namespace envcontract::common {

// Whether `text` is a PEP 440 version ("2.10.0", "0.6.2a2", "0.7.0+ascend3.5").
bool is_version(std::string_view text);

// <0, 0, >0 as a compares to b; local segments compared only when both have
// one. nullopt when either is not a PEP 440 version.
std::optional<int> compare_versions(std::string_view a, std::string_view b);

// Whether `version` satisfies one clause `op` `spec` ("==", "!=", ">=", "<=",
// ">", "<", "~=", "==="; "==" and "!=" take a trailing ".*"). A spec without
// a local segment ignores the version's local segment (==0.7.0 matches
// 0.7.0+ascend3.5).
bool satisfies(std::string_view version, std::string_view op, std::string_view spec);

}  // namespace envcontract::common
