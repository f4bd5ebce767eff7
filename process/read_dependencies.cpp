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

// Each absolute directory of a colon-separated list (PATH, LD_LIBRARY_PATH).
void add_list(const facts::Environment& environment, const char* name, std::set<fs::path>& into) {
  const auto it = environment.find(name);
  if (it == environment.end()) {
    return;
  }
  std::string_view rest = it->second;
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const auto part = rest.substr(0, colon);
    if (!part.empty() && part.front() == '/') {
      into.insert(fs::path(part).lexically_normal());
    }
    if (colon == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(colon + 1);
  }
}

// Where a glob looks: its entries when only the last part has wildcards,
// the tree of its literal part when a directory of it has some.
void add_pattern(const std::string& pattern, ReadDependencies& into) {
  const auto wild = pattern.find_first_of("*?[{$");
  const std::string literal = pattern.substr(0, wild);
  const auto slash = literal.rfind('/');
  if (slash == std::string::npos || !is_absolute_path(literal)) {
    return;  // a relative pattern is not looked for
  }
  const fs::path dir = slash == 0 ? fs::path("/") : fs::path(literal.substr(0, slash));
  if (wild == std::string::npos) {
    into.paths.insert(fs::path(pattern).lexically_normal());
  } else if (pattern.find('/', wild) == std::string::npos) {
    into.entries.insert(dir.lexically_normal());
  } else {
    into.trees.insert(dir.lexically_normal());
  }
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

void add_env_dependencies(const facts::EnvFacts& env,
                          const std::vector<fs::path>& activation_inputs, ReadDependencies& into) {
  const auto tree = [&](const fs::path& path) {
    if (is_absolute_path(path)) {
      into.trees.insert(path.lexically_normal());
    }
  };
  const auto one = [&](const fs::path& path) {
    if (is_absolute_path(path)) {
      into.paths.insert(path.lexically_normal());
    }
  };
  tree(env.env.prefix);
  one(env.env.python);
  const auto& search = env.static_facts.search_path;
  for (const auto& entry : search.entries) {
    tree(entry.path);
  }
  for (const auto& editable : search.editable) {
    tree(editable.path);
    one(editable.finder);
  }
  for (const auto& unlisted : search.unlisted) {
    tree(unlisted);
  }
  tree(search.stdlib);
  for (const auto& site : env.static_facts.site_packages) {
    tree(site);
  }
  const auto& modules = env.static_facts.module_files;
  std::size_t linked_modules = 0;
  for (std::size_t i = 0; i < modules.size(); ++i) {
    tree(modules.real_directory(i));
    // A module file that has other names (conda links its package cache's
    // files into every env) changes through any of them, and a change made
    // through another names no path of the env: followed by identity, as
    // the files read are. A package's __init__ file was read, so it is.
    // As many as paths recorded at most (each costs the watch a key): an
    // env with more is not kept.
    if (!into.incomplete.empty()) {
      continue;
    }
    const std::string real = modules.file(i).real;
    struct stat info {};
    if (is_absolute_path(real) && ::fstatat(AT_FDCWD, real.c_str(), &info, AT_NO_AUTOMOUNT) == 0 &&
        S_ISREG(info.st_mode) && info.st_nlink > 1) {
      if (++linked_modules > k_max_recorded_paths) {
        into.incomplete = "more than " + std::to_string(k_max_recorded_paths) +
                          " of its modules' files have other names";
        continue;
      }
      into.files.insert(fs::path(real).lexically_normal());
    }
  }
  for (const auto& input : activation_inputs) {
    one(input);
  }
  for (const auto& script : env.activation.scripts) {
    one(script);
  }
  for (const auto* environment : {&env.activation.activated, &env.activation.bare}) {
    add_list(*environment, "LD_LIBRARY_PATH", into.entries);
    add_list(*environment, "PATH", into.entries);
  }
  for (const auto& matches : env.path_matches) {
    for (const auto& expanded : matches.expansions) {
      add_pattern(expanded, into);
    }
  }
  // Read for every env: the loader's cache (which libraries the system
  // dirs hold), and the users and groups its files are read as.
  for (const char* host_file :
       {"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf"}) {
    one(host_file);
  }
  into.entries.insert("/etc/ld.so.conf.d");
}

}  // namespace envcontract::process
