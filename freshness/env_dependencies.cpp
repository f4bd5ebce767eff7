#include "freshness/env_dependencies.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <set>
#include <string>
#include <string_view>

namespace envcontract::freshness {
namespace {

namespace fs = std::filesystem;
using process::ReadDependencies;

bool is_absolute_path(const fs::path& path) {
  return !path.empty() && path.native().front() == '/';
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

// Where `pattern`'s first wildcard is (npos when it has none), and its text
// before it with glob's escapes undone: the env's values are escaped for
// glob(3) ("/opt/cu\\da" names /opt/cu\da), and the path watched is the
// one glob looks at.
std::pair<std::size_t, std::string> literal_part(const std::string& pattern) {
  std::string literal;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      literal += pattern[++i];
    } else if (std::string_view("*?[{$").find(c) != std::string_view::npos) {
      return {i, literal};
    } else {
      literal += c;
    }
  }
  return {std::string::npos, literal};
}

// Where a glob looks: its entries when only the last part has wildcards,
// the tree of its literal part when a directory of it has some.
void add_pattern(const std::string& pattern, ReadDependencies& into) {
  const auto [wild, literal] = literal_part(pattern);
  const auto slash = literal.rfind('/');
  if (slash == std::string::npos || !is_absolute_path(literal)) {
    return;  // a relative pattern is not looked for
  }
  const fs::path dir = slash == 0 ? fs::path("/") : fs::path(literal.substr(0, slash));
  if (wild == std::string::npos) {
    into.paths.insert(fs::path(literal).lexically_normal());
  } else if (pattern.find('/', wild) == std::string::npos) {
    into.entries.insert(dir.lexically_normal());
  } else {
    into.trees.insert(dir.lexically_normal());
  }
}

}  // namespace

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
      if (++linked_modules > process::k_max_recorded_paths) {
        into.incomplete = "more than " + std::to_string(process::k_max_recorded_paths) +
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

}  // namespace envcontract::freshness
