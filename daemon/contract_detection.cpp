#include "daemon/contract_detection.hpp"

#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "contracts/contract_loader.hpp"

namespace envcontract::daemon {
namespace {

std::vector<std::string> matching_paths(const std::filesystem::path& root,
                                        const std::string& pattern) {
  const std::string rooted = (root / std::filesystem::path(pattern).relative_path()).string();
  glob_t found{};
  std::vector<std::string> paths;
  if (::glob(rooted.c_str(), GLOB_NOSORT, nullptr, &found) == 0) {
    for (std::size_t i = 0; i < found.gl_pathc; ++i) {
      paths.emplace_back(found.gl_pathv[i]);
    }
  }
  ::globfree(&found);
  return paths;
}

std::vector<std::filesystem::path> tool_dirs(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> dirs;
  const char* path = std::getenv("PATH");
  std::istringstream parts(path != nullptr ? path : "");
  for (std::string dir; std::getline(parts, dir, ':');) {
    if (!dir.empty()) {
      dirs.push_back(root / std::filesystem::path(dir).relative_path());
    }
  }
  for (const char* dir : {"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/usr/local/sbin"}) {
    dirs.push_back(root / std::filesystem::path(dir).relative_path());
  }
  return dirs;
}

bool has_tool(const std::vector<std::filesystem::path>& dirs, const std::string& tool) {
  return std::any_of(dirs.begin(), dirs.end(),
                     [&](const auto& dir) { return ::access((dir / tool).c_str(), X_OK) == 0; });
}

struct Candidate {
  std::filesystem::path file;
  std::string name;
  std::string platform;
  int score = 0;
  std::string why;
};

}  // namespace

common::Result<DetectedContract> detect_contract(const std::filesystem::path& contracts_dir,
                                                 const std::filesystem::path& root) {
  std::error_code error;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(contracts_dir, error)) {
    if (entry.path().extension() == ".yaml" || entry.path().extension() == ".yml") {
      files.push_back(entry.path());
    }
  }
  if (error) {
    return common::Error{"contract: auto cannot read " + contracts_dir.string() + ": " +
                         error.message() +
                         "; set contracts_dir, or name a contract with --contract"};
  }
  std::sort(files.begin(), files.end());
  const auto dirs = tool_dirs(root);
  std::vector<Candidate> candidates;
  std::string looked_for;
  for (const auto& file : files) {
    const auto loaded = contracts::load_contract_file(file);
    if (!loaded.contract) {
      continue;
    }
    const auto& detect = loaded.contract->detect;
    Candidate candidate{file, loaded.contract->name, loaded.contract->platform, 0, ""};
    for (const auto& pattern : detect.device_nodes) {
      looked_for += (looked_for.empty() ? "" : ", ") + pattern;
      const auto found = matching_paths(root, pattern);
      if (!found.empty()) {
        ++candidate.score;
        candidate.why += (candidate.why.empty() ? "found " : " and ") + found.front();
      }
    }
    for (const auto& tool : detect.tools) {
      looked_for += (looked_for.empty() ? "" : ", ") + tool;
      if (has_tool(dirs, tool)) {
        ++candidate.score;
        candidate.why += (candidate.why.empty() ? "found " : " and ") + tool;
      }
    }
    if (candidate.score > 0) {
      candidates.push_back(std::move(candidate));
    }
  }
  if (candidates.empty()) {
    return common::Error{
        "contract: auto found no accelerator this host's contracts know (looked for " +
        (looked_for.empty() ? std::string("nothing: no contract in ") + contracts_dir.string() +
                                  " has a detect section"
                            : looked_for) +
        "); name a contract with --contract"};
  }
  const int best = std::max_element(candidates.begin(), candidates.end(), [](auto& a, auto& b) {
                     return a.score < b.score;
                   })->score;
  std::erase_if(candidates, [&](const auto& c) { return c.score < best; });
  if (candidates.size() > 1) {
    const auto main = std::find_if(candidates.begin(), candidates.end(),
                                   [](const auto& c) { return c.name == c.platform; });
    if (main != candidates.end() &&
        std::count_if(candidates.begin(), candidates.end(),
                      [](const auto& c) { return c.name == c.platform; }) == 1) {
      return DetectedContract{main->file, main->why};
    }
    std::string names;
    for (const auto& c : candidates) {
      names += (names.empty() ? "" : ", ") + c.file.filename().string();
    }
    return common::Error{"contract: auto cannot choose between " + names + " (" +
                         candidates.front().why + "); name one with --contract"};
  }
  return DetectedContract{candidates.front().file, candidates.front().why};
}

}  // namespace envcontract::daemon
