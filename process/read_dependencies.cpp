#include "process/read_dependencies.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <map>
#include <string_view>

namespace envcontract::process {
namespace fs = std::filesystem;

namespace {

thread_local ReadDependencies* t_recording = nullptr;

bool is_absolute_path(const fs::path& path) {
  return !path.empty() && path.native().front() == '/';
}

void add_bounded(std::set<fs::path>& into, const fs::path& path) {
  if (t_recording == nullptr || !t_recording->incomplete.empty()) {
    return;
  }
  if (path.empty()) {
    return;  // an empty search-path entry: nothing was read
  }
  if (!is_absolute_path(path)) {
    // Relative to wherever the agent runs (a relative RUNPATH is the
    // loader's too): not a path a change can be matched to.
    t_recording->incomplete = "the read looked at a relative path (" + path.string() + ")";
    return;
  }
  const auto& record = *t_recording;
  if (record.paths.size() + record.entries.size() >= k_max_recorded_paths) {
    t_recording->incomplete =
        "the read looked at more than " + std::to_string(k_max_recorded_paths) + " paths";
    return;
  }
  into.insert(path.lexically_normal());
}

bool under_tree(const std::set<fs::path>& trees, const fs::path& path) {
  for (fs::path at = path; !at.empty(); at = at.parent_path()) {
    if (trees.contains(at)) {
      return true;
    }
    if (at == at.parent_path()) {
      break;
    }
  }
  return false;
}

}  // namespace

void ReadDependencies::compact() {
  // A tree under another tree adds nothing.
  for (auto it = trees.begin(); it != trees.end();) {
    const auto parent = it->parent_path();
    it = *it != parent && under_tree(trees, parent) ? trees.erase(it) : std::next(it);
  }
  std::erase_if(entries, [&](const fs::path& dir) { return under_tree(trees, dir); });
  std::erase_if(paths, [&](const fs::path& path) { return under_tree(trees, path); });
}

RecordingReads::RecordingReads(ReadDependencies& into) : m_outer(t_recording) {
  t_recording = &into;
}

RecordingReads::~RecordingReads() {
  t_recording = m_outer;
}

void record_read(const fs::path& path) {
  if (t_recording != nullptr) {
    add_bounded(t_recording->paths, path);
  }
}

void record_listing(const fs::path& dir) {
  if (t_recording != nullptr) {
    add_bounded(t_recording->entries, dir);
  }
}

std::vector<fs::path> link_chain(const fs::path& path) {
  constexpr int k_max_links = 40;
  std::vector<fs::path> chain;
  fs::path current = path;
  for (int links = 0; links < k_max_links && is_absolute_path(current); ++links) {
    fs::path walked = "/";
    bool followed = false;
    for (auto part = std::next(current.begin()); part != current.end(); ++part) {
      if (part->empty()) {
        continue;  // a trailing slash
      }
      walked /= *part;
      struct stat status {};
      if (::lstat(walked.c_str(), &status) != 0) {
        return chain;  // absent from here on: its creation is watched
      }
      if (!S_ISLNK(status.st_mode)) {
        continue;
      }
      char target[PATH_MAX];
      const ssize_t length = ::readlink(walked.c_str(), target, sizeof target - 1);
      if (length <= 0) {
        return chain;
      }
      fs::path next(std::string(target, static_cast<std::size_t>(length)));
      next = is_absolute_path(next) ? next : walked.parent_path() / next;
      for (auto rest = std::next(part); rest != current.end(); ++rest) {
        next /= *rest;
      }
      current = next.lexically_normal();
      chain.push_back(current);
      followed = true;
      break;  // `current` changed: walk it from its start
    }
    if (!followed) {
      break;
    }
  }
  return chain;
}

void add_link_targets(ReadDependencies& dependencies) {
  for (auto* set : {&dependencies.trees, &dependencies.entries}) {
    std::vector<fs::path> targets;
    for (const auto& path : *set) {
      const auto chain = link_chain(path);
      targets.insert(targets.end(), chain.begin(), chain.end());
    }
    set->insert(targets.begin(), targets.end());
  }
  // A path (a library looked for and not found) in a directory reached
  // through a link is also watched where the link leads: created there, it
  // is found. Each directory resolved once (hundreds, not thousands).
  std::map<fs::path, fs::path> real_dirs;
  std::vector<fs::path> elsewhere;
  for (const auto& path : dependencies.paths) {
    const auto [at, inserted] = real_dirs.try_emplace(path.parent_path());
    if (inserted) {
      char buffer[PATH_MAX];
      at->second = ::realpath(at->first.c_str(), buffer) != nullptr ? fs::path(buffer) : at->first;
    }
    if (at->second != at->first) {
      elsewhere.push_back(at->second / path.filename());
    }
  }
  dependencies.paths.insert(elsewhere.begin(), elsewhere.end());
}

}  // namespace envcontract::process
