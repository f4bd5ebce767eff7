#pragma once

#include <map>
#include <string>
#include <vector>

namespace envcontract::facts {

// Path patterns of contracts are anchored at "{prefix}" (the env), "{site}"
// (each of its site dirs) or "/", and may name "${VAR}" of the activated
// environment. The same expansion serves probes (which glob the result) and
// judges (which compare with it).
struct PathAnchors {
  std::string prefix;
  std::vector<std::string> sites;  // in sys.path order; {site} expands once per entry
  std::map<std::string, std::string> variables;
};

// `pattern` expanded once per site dir when it names {site} (none when the
// site dirs are unknown), else once. An unset ${VAR} expands to "". With
// `for_glob`, the substituted values (which the env controls) have glob's
// special characters escaped: only the contract's own wildcards match.
std::vector<std::string> expand_path_pattern(const std::string& pattern, const PathAnchors& anchors,
                                             bool for_glob = false);

// `value` with glob(3)'s special characters escaped, to be matched literally.
std::string glob_literal(const std::string& value);

// The ${VAR} names in `pattern` that `variables` leaves unset.
std::vector<std::string> unset_variables(const std::string& pattern,
                                         const std::map<std::string, std::string>& variables);

}  // namespace envcontract::facts
