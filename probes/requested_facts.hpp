#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "facts/path_pattern.hpp"

// Facts gathered only because a contract's checks asked for them
// (facts::ProbeRequest): path patterns globbed in an env, executables on its
// activated PATH, device nodes of the host. The judges read these facts and
// never the filesystem: a rootfs scanned with --root is judged on what was
// gathered from it.
namespace envcontract::probes {

using Json = nlohmann::ordered_json;

// At most this many matches are kept per pattern.
inline constexpr std::size_t k_max_glob_matches = 10000;

struct PathMatches {
  std::string pattern;                  // as the contract wrote it
  std::vector<std::string> expansions;  // one per site dir for {site}
  std::vector<std::string> matches;     // sorted
};

struct ToolLookup {
  std::string name;
  std::string path;  // the first executable of that name on PATH; "" when none
};

struct DeviceNodes {
  std::string glob;
  std::vector<std::string> matches;
};

// glob(3) of each pattern's expansions (read as whoever the caller reads as).
std::vector<PathMatches> match_path_patterns(const std::vector<std::string>& patterns,
                                             const facts::PathAnchors& anchors);

// Each name looked up along `path` (a PATH value), as a shell would.
std::vector<ToolLookup> find_tools(const std::vector<std::string>& names, const std::string& path);

std::vector<DeviceNodes> glob_device_nodes(const std::vector<std::string>& globs);

Json to_json(const PathMatches& matches);
Json to_json(const ToolLookup& tool);
Json to_json(const DeviceNodes& nodes);

}  // namespace envcontract::probes
