#include "process/system_root.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "facts/path_pattern.hpp"
#include "process/stall_guard.hpp"

namespace envcontract::process {
namespace {

// The tree glob(3)'s directory functions read in (they take no context).
thread_local const SystemRoot* t_globbing = nullptr;

void* open_dir_inside(const char* path) {
  const int fd = t_globbing->open_inside(path, O_RDONLY | O_DIRECTORY, true);
  if (fd < 0) {
    return nullptr;
  }
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
  }
  return dir;
}

struct dirent* read_dir(void* dir) {
  return ::readdir(static_cast<DIR*>(dir));
}

void close_dir(void* dir) {
  ::closedir(static_cast<DIR*>(dir));
}

int stat_inside(const char* path, struct stat* info) {
  return t_globbing->stat(path, *info, true) ? 0 : -1;
}

int lstat_inside(const char* path, struct stat* info) {
  return t_globbing->stat(path, *info, false) ? 0 : -1;
}

}  // namespace

bool is_system_root(const std::filesystem::path& dir) {
  if (dir.empty() || dir == "/") {
    return true;
  }
  // Only a marker: a link is enough (os-release is often one), wherever it leads.
  std::error_code error;
  return std::filesystem::symlink_status(dir / "etc/os-release", error).type() !=
             std::filesystem::file_type::not_found ||
         std::filesystem::symlink_status(dir / "usr/lib/os-release", error).type() !=
             std::filesystem::file_type::not_found;
}

bool is_process_root(const std::filesystem::path& root) {
  const std::string text = root.lexically_normal().string();
  if (!text.starts_with("/proc/") || !text.ends_with("/root")) {
    return false;
  }
  const std::string pid = text.substr(6, text.size() - 6 - 5);
  return !pid.empty() && pid.size() < 10 &&
         std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::filesystem::path canonical_in(const std::filesystem::path& root,
                                   const std::filesystem::path& path, std::error_code& error) {
  error.clear();
  if (root.empty() || root == "/") {
    return std::filesystem::weakly_canonical(path, error);
  }
  const bool process_root = is_process_root(root);
  // A tree on the host's disk is named by the kernel from the agent's "/":
  // under the tree's own real path.
  const std::filesystem::path real_root =
      process_root ? std::filesystem::path() : std::filesystem::weakly_canonical(root, error);
  if (error) {
    return path;
  }
  const SystemRoot tree(root);
  if (!tree.error().empty()) {
    error = std::make_error_code(std::errc::permission_denied);
    return path;
  }
  // The longest part that exists is resolved by the kernel, inside the
  // tree; the rest is appended as it is, as weakly_canonical does.
  std::filesystem::path inside = tree.inside(path.lexically_normal().string());
  std::filesystem::path rest;
  while (true) {
    const int fd = tree.open_inside(inside.string(), O_PATH, true);
    if (fd >= 0) {
      std::error_code unread;
      const auto named =
          std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd), unread);
      ::close(fd);
      if (unread || !named.is_absolute()) {
        error = unread ? unread : std::make_error_code(std::errc::invalid_argument);
        return path;
      }
      // Below a process's root the kernel names it as the tree's processes
      // do, from the tree's "/"; below a tree on the host's disk, from the
      // agent's "/", under the tree's real path.
      std::filesystem::path seen = named;
      if (!process_root) {
        const std::string text = named.string();
        const std::string top = real_root.string();
        if (text == top) {
          seen = "/";
        } else if (top == "/") {
          seen = named;  // the tree is the host's own "/" (a root linked to it)
        } else if (text.starts_with(top + "/")) {
          seen = text.substr(top.size());
        } else {
          error = std::make_error_code(std::errc::invalid_argument);  // not below the tree
          return path;
        }
      }
      return under_root(root, rest.empty() ? seen : seen / rest);
    }
    if (errno != ENOENT || inside == inside.root_path()) {
      error = std::error_code(errno, std::generic_category());
      return path;
    }
    rest = rest.empty() ? inside.filename() : inside.filename() / rest;
    inside = inside.parent_path();
  }
}

std::filesystem::path under_root(const std::filesystem::path& root,
                                 const std::filesystem::path& path) {
  if (root.empty() || root == "/" || path.is_relative()) {
    return path;
  }
  const std::string text = path.string();
  const std::string root_text = root.string();
  // The path inside the tree, normalised as an absolute path of its own:
  // ".." above the tree's "/" stays at its "/", as RESOLVE_IN_ROOT keeps it.
  std::filesystem::path inside = path;
  if (text == root_text) {
    inside = "/";
  } else if (text.starts_with(root_text + "/")) {
    inside = std::filesystem::path(std::string_view(text).substr(root_text.size()));
  }
  const auto normal = inside.lexically_normal();
  // Appended, not `root / normal`: an absolute right side would replace the root.
  std::filesystem::path joined = root;
  if (normal != "/") {
    joined += normal;
  }
  return joined;
}

SystemRoot::SystemRoot(std::filesystem::path dir) : m_dir(std::move(dir)) {
  if (is_host()) {
    return;
  }
  note_reading(m_dir);
  m_fd = ::open(m_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (m_fd < 0) {
    m_error = m_dir.string() + ": " + std::strerror(errno);
  }
}

SystemRoot::~SystemRoot() {
  if (m_fd >= 0) {
    ::close(m_fd);
  }
}

std::string SystemRoot::inside(const std::string& path) const {
  if (is_host()) {
    return path;
  }
  const std::string dir = m_dir.string();
  if (path == dir) {
    return "/";
  }
  if (path.starts_with(dir + "/")) {
    return path.substr(dir.size());
  }
  return path;
}

std::string SystemRoot::outside(const std::string& path) const {
  if (is_host()) {
    return path;
  }
  return m_dir.string() + (path.starts_with('/') ? "" : "/") + path;
}

int SystemRoot::open_inside(const std::string& path, int flags, bool follow) const {
  if (is_host()) {
    return ::open(path.c_str(), flags | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
  }
  if (m_fd < 0) {
    errno = EBADF;
    return -1;
  }
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
  // Magic links (/proc/self/root, /proc/PID/fd/N) lead wherever the process
  // reading them stands: never followed inside a tree.
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  const std::string relative = path.empty() ? "." : path;
  // EAGAIN: a rename raced the lookup of "..": openat2(2) asks to retry.
  for (int attempt = 0;; ++attempt) {
    const int fd =
        static_cast<int>(::syscall(SYS_openat2, m_fd, relative.c_str(), &how, sizeof how));
    if (fd >= 0 || errno != EAGAIN || attempt == 3) {
      return fd;
    }
  }
}

std::optional<std::string> SystemRoot::read_link(const std::string& path) const {
  // The link itself, opened below the tree's root; readlinkat(2) of an
  // O_PATH descriptor with an empty name reads the link it names.
  const int fd = open_inside(path, O_PATH, false);
  if (fd < 0) {
    return std::nullopt;
  }
  std::string target(PATH_MAX, '\0');
  const ssize_t length = ::readlinkat(fd, "", target.data(), target.size());
  const int saved = errno;
  ::close(fd);
  errno = saved;
  if (length < 0 || static_cast<std::size_t>(length) >= target.size()) {
    return std::nullopt;
  }
  target.resize(static_cast<std::size_t>(length));
  return target;
}

bool SystemRoot::stat(const std::string& path, struct stat& info, bool follow) const {
  if (is_host()) {
    return (follow ? ::stat(path.c_str(), &info) : ::lstat(path.c_str(), &info)) == 0;
  }
  // O_PATH with O_NOFOLLOW opens a symlink itself: fstat describes the link.
  const int fd = open_inside(path, O_PATH, follow);
  if (fd < 0) {
    return false;
  }
  const bool ok = ::fstat(fd, &info) == 0;
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return ok;
}

SystemRoot::Globbed SystemRoot::glob(const std::string& pattern) const {
  Globbed result;
  std::string in_tree = pattern;
  if (!is_host()) {
    // The pattern escapes what the env controls, the tree's own path too.
    const std::string escaped = facts::glob_literal(m_dir.string());
    if (pattern == escaped || pattern.starts_with(escaped + "/")) {
      in_tree = pattern.size() == escaped.size() ? "/" : pattern.substr(escaped.size());
    } else {
      in_tree = inside(pattern);
    }
  }
  note_reading(outside(in_tree));
  glob_t matches{};
  int flags = GLOB_NOSORT;
  if (!is_host()) {
    if (!m_error.empty()) {
      result.error = m_error;
      return result;
    }
    flags |= GLOB_ALTDIRFUNC;
    matches.gl_opendir = open_dir_inside;
    matches.gl_readdir = read_dir;
    matches.gl_closedir = close_dir;
    matches.gl_stat = stat_inside;
    matches.gl_lstat = lstat_inside;
  }
  t_globbing = this;
  const int status = ::glob(in_tree.c_str(), flags, nullptr, &matches);
  t_globbing = nullptr;
  if (status == 0) {
    for (std::size_t i = 0; i < matches.gl_pathc; ++i) {
      // A ".." of the pattern right after the tree's "/" stopped there when
      // it was read: named so too, never as ROOT/../.. (a host path outside
      // the tree). Other ".." stay: after a link they climb from its target.
      std::string_view match = matches.gl_pathv[i];
      while (match.starts_with("/../") || match == "/..") {
        match.remove_prefix(3);
      }
      result.paths.push_back(outside(match.empty() ? "/" : std::string(match)));
    }
  } else if (status != GLOB_NOMATCH) {
    result.error =
        pattern + ": " +
        (status == GLOB_NOSPACE ? "out of memory while globbing" : "a directory could not be read");
  }
  ::globfree(&matches);
  std::sort(result.paths.begin(), result.paths.end());
  return result;
}

}  // namespace envcontract::process
