#include "probes/requested_facts.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include <fcntl.h>

namespace envcontract::probes {
namespace {

bool inside_any(const std::string& path, const std::vector<std::string>& dirs) {
  return std::any_of(dirs.begin(), dirs.end(), [&](const std::string& dir) {
    return path == dir || path.starts_with(dir + "/");
  });
}

// Whether the user of `run_as` may execute `path` (a regular file of
// `root`): checked on the mode bits, because access(2) asks for the real
// uid, root's.
bool executable_by(const process::SystemRoot& root, const std::string& path,
                   const facts::RunAs& run_as) {
  struct stat info {};
  if (!root.stat(path, info) || !S_ISREG(info.st_mode)) {
    return false;
  }
  if (::geteuid() != 0) {
    if (root.is_host()) {
      return ::access(path.c_str(), X_OK) == 0;  // the agent runs env code as itself
    }
    // Inside a tree: the agent's own permission, by the mode bits too.
    const int fd = root.open_inside(path, O_PATH, true);
    // The file as opened inside the tree, through its descriptor's magic link.
    const bool allowed =
        fd >= 0 && ::access(("/proc/self/fd/" + std::to_string(fd)).c_str(), X_OK) == 0;
    if (fd >= 0) {
      ::close(fd);
    }
    return allowed;
  }
  if (run_as.uid == 0) {
    return (info.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) != 0;
  }
  if (info.st_uid == run_as.uid) {
    return (info.st_mode & S_IXUSR) != 0;
  }
  const bool in_group =
      info.st_gid == run_as.gid ||
      std::find(run_as.groups.begin(), run_as.groups.end(), info.st_gid) != run_as.groups.end();
  return (info.st_mode & (in_group ? S_IXGRP : S_IXOTH)) != 0;
}

}  // namespace

std::vector<PathMatches> match_path_patterns(const std::vector<std::string>& patterns,
                                             const facts::PathAnchors& anchors,
                                             const std::vector<std::string>& hidden,
                                             const process::SystemRoot& root) {
  std::vector<PathMatches> result;
  for (const auto& pattern : patterns) {
    PathMatches entry{pattern, facts::expand_path_pattern(pattern, anchors, true), {}, false, ""};
    if (entry.expansions.empty()) {
      entry.error = "the env's site dirs are unknown, so {site} cannot be looked in";
    }
    for (const auto& expanded : entry.expansions) {
      auto globbed = root.glob(expanded);
      if (!globbed.error.empty() && entry.error.empty()) {
        entry.error = globbed.error;
      }
      for (auto& match : globbed.paths) {
        if (inside_any(match, hidden)) {
          continue;
        }
        if (entry.matches.size() < k_max_glob_matches) {
          entry.matches.push_back(std::move(match));
        } else {
          entry.truncated = true;
        }
      }
    }
    result.push_back(std::move(entry));
  }
  return result;
}

std::vector<ToolLookup> find_tools(const std::vector<std::string>& names, const std::string& path,
                                   const facts::RunAs& run_as, const process::SystemRoot& root) {
  std::vector<ToolLookup> result;
  for (const auto& name : names) {
    ToolLookup lookup{name, ""};
    std::istringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      if (dir.empty() || dir.front() != '/') {
        continue;
      }
      const std::string candidate = root.inside(dir) + "/" + name;
      if (executable_by(root, candidate, run_as)) {
        lookup.path = root.outside(candidate);
        break;
      }
    }
    result.push_back(std::move(lookup));
  }
  return result;
}

std::vector<DeviceNodes> glob_device_nodes(const std::vector<std::string>& globs,
                                           const process::SystemRoot& root) {
  std::vector<DeviceNodes> result;
  for (const auto& pattern : globs) {
    auto globbed = root.glob(pattern);
    if (globbed.paths.size() > k_max_glob_matches) {
      globbed.paths.resize(k_max_glob_matches);
    }
    result.push_back({pattern, std::move(globbed.paths)});
  }
  return result;
}

}  // namespace envcontract::probes
