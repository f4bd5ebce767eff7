#include "daemon/contract_detection.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "contracts/contract_loader.hpp"
#include "process/system_root.hpp"

namespace envcontract::daemon {
namespace {

// The directories a tool is looked for in, as the tree at the detect root
// names them: the agent's PATH, then the usual ones.
std::vector<std::string> tool_dirs() {
  std::vector<std::string> dirs;
  const char* path = std::getenv("PATH");
  std::istringstream parts(path != nullptr ? path : "");
  for (std::string dir; std::getline(parts, dir, ':');) {
    if (!dir.empty() && dir.front() == '/') {
      dirs.push_back(dir);
    }
  }
  for (const char* dir : {"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/usr/local/sbin"}) {
    dirs.emplace_back(dir);
  }
  return dirs;
}

// An executable file named `tool` in one of `dirs`, its links resolved
// inside the tree (a host mounted at /host links its tools to its own /opt,
// not the agent's).
bool has_tool(const process::SystemRoot& tree, const std::vector<std::string>& dirs,
              const std::string& tool) {
  return std::any_of(dirs.begin(), dirs.end(), [&](const std::string& dir) {
    struct stat info {};
    return tree.stat(dir + "/" + tool, info, true) && S_ISREG(info.st_mode) &&
           (info.st_mode & 0111) != 0;
  });
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
  // Device nodes and tools are looked for inside the tree at `root`, as its
  // own processes would find them (its links resolved below it).
  const process::SystemRoot tree(root);
  const auto dirs = tool_dirs();
  std::vector<Candidate> candidates;
  std::string looked_for;
  std::string unloaded;  // contracts that could not be read, with their first error
  for (const auto& file : files) {
    const auto loaded = contracts::load_contract_file(file);
    if (!loaded.contract) {
      const auto sorted = loaded.diagnostics.sorted();
      const auto first_error = std::find_if(sorted.begin(), sorted.end(), [](const auto& d) {
        return d.level == contracts::DiagnosticLevel::error;
      });
      unloaded += (unloaded.empty() ? "" : "; ") +
                  (first_error != sorted.end() ? first_error->to_string() : file.string());
      continue;
    }
    const auto& detect = loaded.contract->detect;
    Candidate candidate{file, loaded.contract->name, loaded.contract->platform, 0, ""};
    for (const auto& pattern : detect.device_nodes) {
      looked_for += (looked_for.empty() ? "" : ", ") + pattern;
      const auto found = tree.glob(pattern).paths;
      if (!found.empty()) {
        ++candidate.score;
        candidate.why += (candidate.why.empty() ? "found " : " and ") + found.front();
      }
    }
    for (const auto& tool : detect.tools) {
      looked_for += (looked_for.empty() ? "" : ", ") + tool;
      if (has_tool(tree, dirs, tool)) {
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
        ")" + (unloaded.empty() ? "" : "; contracts that could not be read: " + unloaded) +
        "; name a contract with --contract"};
  }
  const int best = std::max_element(candidates.begin(), candidates.end(), [](auto& a, auto& b) {
                     return a.score < b.score;
                   })->score;
  std::erase_if(candidates, [&](const auto& c) { return c.score < best; });
  if (candidates.size() > 1) {
    // Contracts of one platform tied: its main contract (named after it)
    // decides. Signals of two platforms tied: nothing does.
    const bool one_platform = std::all_of(candidates.begin(), candidates.end(), [&](const auto& c) {
      return c.platform == candidates.front().platform;
    });
    const auto main = std::find_if(candidates.begin(), candidates.end(),
                                   [](const auto& c) { return c.name == c.platform; });
    if (one_platform && main != candidates.end() &&
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
