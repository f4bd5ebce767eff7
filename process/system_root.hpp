#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

// Paths read inside an operating system tree other than the agent's own (a
// container's root filesystem scanned with --root) as a process inside it
// would see them: "/usr/local/xpu/lib" means ROOT/usr/local/xpu/lib, and an
// absolute symlink or ".." in the tree stays inside it (openat2's
// RESOLVE_IN_ROOT), so nothing in a rootfs can point the agent at the host.
namespace envcontract::process {

// Whether `dir` holds an operating system tree (an os-release file, which
// every distribution's image has) rather than merely envs: only then are a
// contract's absolute paths, PATH and device nodes read inside it.
bool is_system_root(const std::filesystem::path& dir);

// An absolute `path` of the tree at `root`, as the agent names it: ROOT +
// path, normalised so that ".." never climbs above ROOT (a path already
// under `root`, as activation writes an env's own, is taken as inside it;
// "/" and relative paths are returned as they are). Lexical only: a symlink
// in the tree that the agent follows later still resolves on the host
// (docs/probes.md, "Known limits" of system roots).
std::filesystem::path under_root(const std::filesystem::path& root,
                                 const std::filesystem::path& path);

// Whether `root` names a process's root directory, /proc/PID/root: how the
// agent reaches a running container's files as its processes see them
// (volumes included), with no path through the engine's storage, which is
// root's alone (docker's 0710, podman's 0700). A thread reading as an env's
// user passes it (it is gated by CAP_SYS_PTRACE, not by the directories
// above), and below it each directory is checked as that user. It is a
// magic link: realpath(3) of a path under it names the path inside the
// container as if it were the host's, so such paths are resolved with
// canonical_in(), never with std::filesystem::canonical.
bool is_process_root(const std::filesystem::path& root);

// `path` (a path under `root`, as the agent names it) with its links
// resolved inside `root`, as the tree's own processes would resolve them (an
// absolute link starts again at the tree's "/", ".." stops there), and named
// again under `root`; the part that does not exist is appended as it is.
// `root` is a process's root (a running container's) or a tree on the
// host's disk (an image's rootfs, a --root tree); for the host ("/"):
// std::filesystem::weakly_canonical.
std::filesystem::path canonical_in(const std::filesystem::path& root,
                                   const std::filesystem::path& path, std::error_code& error);

class SystemRoot {
 public:
  // The tree at `dir` ("/" reads the agent's own filesystem as is).
  explicit SystemRoot(std::filesystem::path dir);
  ~SystemRoot();
  SystemRoot(const SystemRoot&) = delete;
  SystemRoot& operator=(const SystemRoot&) = delete;

  const std::filesystem::path& dir() const { return m_dir; }
  bool is_host() const { return m_dir == "/"; }
  // Why the tree cannot be read ("" when it can).
  const std::string& error() const { return m_error; }

  // A path as the tree names it: a host path under the tree loses the
  // tree's prefix (activation writes host paths of an env), any other
  // absolute path is already the tree's own.
  std::string inside(const std::string& path) const;
  // A path of the tree as the agent names it, for reports: ROOT + path.
  std::string outside(const std::string& path) const;

  // stat(2) (or lstat(2) when !follow) of the tree's `path`.
  bool stat(const std::string& path, struct stat& info, bool follow = true) const;

  struct Globbed {
    std::vector<std::string> paths;  // sorted, as the agent names them
    std::string error;
  };
  // glob(3) of `pattern` inside the tree (patterns name the tree's paths or
  // host paths under it, as inside() takes them).
  Globbed glob(const std::string& pattern) const;

  // open(2) of the tree's `path` (openat2(2) below it): -1 with errno set
  // when it fails.
  int open_inside(const std::string& path, int flags, bool follow) const;
  // The target of the link at the tree's `path`, as the link says it
  // (readlink(2)); nullopt with errno set when it is not a link or cannot
  // be read.
  std::optional<std::string> read_link(const std::string& path) const;

 private:
  std::filesystem::path m_dir;
  int m_fd = -1;
  std::string m_error;
};

}  // namespace envcontract::process
