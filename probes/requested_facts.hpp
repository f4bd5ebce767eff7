#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "facts/path_pattern.hpp"
#include "facts/requested.hpp"
#include "process/run_as.hpp"
#include "process/system_root.hpp"

// Facts gathered only because a contract's checks asked for them
// (facts::ProbeRequest): path patterns globbed in an env, executables on its
// activated PATH, device nodes of the host. The judges read these facts and
// never the filesystem. Everything is read inside the env's system root
// (process/system_root.hpp): the agent's own filesystem, or the container
// rootfs the env lies in, where absolute patterns, PATH directories and
// device globs name the rootfs' own paths.
namespace envcontract::probes {

using facts::k_max_glob_matches;
using facts::to_json;

using Json = nlohmann::ordered_json;

using facts::PathMatches;

using facts::ToolLookup;

using facts::DeviceNodes;

// glob(3) of each pattern's expansions, read as whoever the caller reads as
// (ReadingAs the env's user). What the env controls (its prefix, site dirs,
// ${VAR} values) is matched literally; matches inside `hidden` (shadowed
// copies of packages, which import never sees) are dropped before the cap.
// With no site dirs known, a {site} pattern is an error, not "no match".
std::vector<PathMatches> match_path_patterns(const std::vector<std::string>& patterns,
                                             const facts::PathAnchors& anchors,
                                             const std::vector<std::string>& hidden,
                                             const process::SystemRoot& root);

// Each name looked up along `path` (a PATH value) as a shell run by `run_as`
// would: the first regular file its user may execute. Empty and relative
// PATH entries (the working directory of whoever runs it) are skipped.
std::vector<ToolLookup> find_tools(const std::vector<std::string>& names, const std::string& path,
                                   const facts::RunAs& run_as, const process::SystemRoot& root);

std::vector<DeviceNodes> glob_device_nodes(const std::vector<std::string>& globs,
                                           const process::SystemRoot& root);

}  // namespace envcontract::probes
