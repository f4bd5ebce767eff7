#include "discovery/interpreter_links.hpp"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>

#include "process/run_as.hpp"
#include "process/system_root.hpp"

namespace envcontract::discovery {
namespace fs = std::filesystem;

namespace {

// Linux's own bound on the links one lookup follows (MAXSYMLINKS).
constexpr int k_max_links = 40;

}  // namespace

std::string python_version_in_name(const std::string& name) {
  if (!name.starts_with("python")) {
    return "";
  }
  std::string version = name.substr(6);
  if (version.ends_with('t')) {
    version.pop_back();
  }
  const auto dot = version.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == version.size()) {
    return "";
  }
  for (std::size_t i = 0; i < version.size(); ++i) {
    if (i != dot && !std::isdigit(static_cast<unsigned char>(version[i]))) {
      return "";
    }
  }
  return version;
}

std::string InterpreterLinks::text(const fs::path& prefix) const {
  if (chain.empty()) {
    return "";
  }
  const auto relative = chain[0].lexically_relative(prefix);
  std::string out = relative.empty() || relative.string().starts_with("..") ? chain[0].string()
                                                                            : relative.string();
  for (const auto& link : written) {
    out += " -> " + link;
  }
  return out;
}

std::string InterpreterLinks::python_version() const {
  if (chain.empty() || missing || loop || unreadable != 0 || !regular) {
    return "";
  }
  return python_version_in_name(chain.back().filename().string());
}

InterpreterLinks follow_interpreter_links(const facts::PythonEnv& env) {
  InterpreterLinks links;
  const process::ReadingAs reading(env.reader());
  if (!reading.ok()) {
    links.chain.push_back(env.python);
    links.unreadable = EPERM;
    return links;
  }
  const bool in_container = !env.exec.empty() && !env.system_root.empty() && env.system_root != "/";
  const process::SystemRoot tree(in_container ? env.system_root : fs::path("/"));
  fs::path path = env.python;
  links.chain.push_back(path);
  for (int followed = 0;; ++followed) {
    links.last_inside = tree.inside(path.string());
    struct stat info {};
    if (!tree.stat(links.last_inside, info, false)) {
      if (errno == ENOENT || errno == ENOTDIR) {
        links.missing = true;
      } else {
        links.unreadable = errno;
      }
      return links;
    }
    if (!S_ISLNK(info.st_mode)) {
      links.regular = S_ISREG(info.st_mode);
      return links;
    }
    if (followed == k_max_links) {
      links.loop = true;
      return links;
    }
    const auto target = tree.read_link(links.last_inside);
    if (!target || target->empty()) {
      links.unreadable = target ? EINVAL : errno;
      return links;
    }
    // The next path as the agent names it: an absolute link starts at the
    // tree's "/", a relative one at its link's directory, that directory's
    // own links resolved first (so ".." climbs from where it really is),
    // and ".." stops at the tree's "/", as it does for the tree's own
    // processes (joined under the tree's root, it would climb out of it).
    const fs::path written(*target);
    std::error_code error;
    const fs::path next =
        written.is_absolute()
            ? written
            : fs::path(tree.inside(
                  process::canonical_in(tree.dir(), path.parent_path(), error).string())) /
                  written;
    path = tree.outside(next.lexically_normal().string());
    links.written.push_back(*target);
    links.chain.push_back(path);
  }
}

}  // namespace envcontract::discovery
