#include "probes/requested_facts.hpp"

#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

namespace envcontract::probes {
namespace {

std::vector<std::string> glob_paths(const std::string& pattern) {
  std::vector<std::string> paths;
  glob_t matches{};
  if (::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &matches) == 0) {
    for (std::size_t i = 0; i < matches.gl_pathc && i < k_max_glob_matches; ++i) {
      paths.emplace_back(matches.gl_pathv[i]);
    }
  }
  ::globfree(&matches);
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace

std::vector<PathMatches> match_path_patterns(const std::vector<std::string>& patterns,
                                             const facts::PathAnchors& anchors) {
  std::vector<PathMatches> result;
  for (const auto& pattern : patterns) {
    PathMatches entry{pattern, facts::expand_path_pattern(pattern, anchors), {}};
    for (const auto& expanded : entry.expansions) {
      for (auto& match : glob_paths(expanded)) {
        if (entry.matches.size() < k_max_glob_matches) {
          entry.matches.push_back(std::move(match));
        }
      }
    }
    result.push_back(std::move(entry));
  }
  return result;
}

std::vector<ToolLookup> find_tools(const std::vector<std::string>& names, const std::string& path) {
  std::vector<ToolLookup> result;
  for (const auto& name : names) {
    ToolLookup lookup{name, ""};
    std::istringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
      if (::access(candidate.c_str(), X_OK) == 0) {
        lookup.path = candidate;
        break;
      }
    }
    result.push_back(std::move(lookup));
  }
  return result;
}

std::vector<DeviceNodes> glob_device_nodes(const std::vector<std::string>& globs) {
  std::vector<DeviceNodes> result;
  for (const auto& pattern : globs) {
    result.push_back({pattern, glob_paths(pattern)});
  }
  return result;
}

Json to_json(const PathMatches& matches) {
  return {{"pattern", matches.pattern},
          {"expansions", matches.expansions},
          {"matches", matches.matches}};
}

Json to_json(const ToolLookup& tool) {
  return {{"name", tool.name}, {"path", tool.path.empty() ? Json(nullptr) : Json(tool.path)}};
}

Json to_json(const DeviceNodes& nodes) {
  return {{"glob", nodes.glob}, {"matches", nodes.matches}};
}

}  // namespace envcontract::probes
