#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

// Facts gathered only because a contract's checks asked for them
// (facts::ProbeRequest): path patterns globbed in an env, executables on its
// activated PATH, device nodes.
namespace envcontract::facts {

using Json = nlohmann::ordered_json;

// At most this many matches are kept per pattern.
inline constexpr std::size_t k_max_glob_matches = 10000;

struct PathMatches {
  std::string pattern;                  // as the contract wrote it
  std::vector<std::string> expansions;  // one per site dir for {site}
  std::vector<std::string> matches;     // sorted; none inside shadowed copies
  bool truncated = false;               // more than k_max_glob_matches matched
  std::string error;                    // why the pattern could not be looked for; "" when it was
};

struct ToolLookup {
  std::string name;
  std::string path;  // the first executable of that name on PATH; "" when none
};

struct DeviceNodes {
  std::string glob;
  std::vector<std::string> matches;
};

Json to_json(const PathMatches& matches);
Json to_json(const ToolLookup& tool);
Json to_json(const DeviceNodes& nodes);

}  // namespace envcontract::facts
