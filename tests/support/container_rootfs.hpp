#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace envcontract::testing {

// A root filesystem of the test's own, built in well under a second: Debian's
// python3 and bash with every library they and the standard library's
// extension modules load, and the standard library itself (hard links to
// this machine's files, copies across filesystems); an os-release, passwd and
// group, /tmp, /proc and /dev to mount over; and its own ld.so.cache, made by
// `ldconfig -r` over an etc/ld.so.conf that also names `library_dirs` (paths
// as the container names them). Returns "" when it is built, or why not (a
// reason to skip: ldconfig -r needs root).
std::string make_container_rootfs(const std::filesystem::path& rootfs,
                                  const std::vector<std::string>& library_dirs = {});

// Where bubblewrap is, or "" when it is not installed.
std::string bubblewrap_path();

// The exec prefix that enters `rootfs` as a container would be entered:
// bubblewrap with the rootfs read-only at /, its /tmp writable, a /proc and
// /dev of its own, and pid, ipc and uts namespaces of its own.
std::vector<std::string> bubblewrap_prefix(const std::filesystem::path& rootfs);

// A long-running container without an engine: bubblewrap with `rootfs`
// read-only at /, a tmpfs at /tmp (so the rootfs's own /tmp is not what its
// processes see), and pid, ipc and uts namespaces of its own, running an
// idle interpreter until destroyed (bwrap's words in `log`). pid() is that interpreter's (the
// process to nsenter), 0 when it did not start.
class RunningContainer {
 public:
  RunningContainer(const std::filesystem::path& rootfs, const std::filesystem::path& log);
  ~RunningContainer();
  RunningContainer(const RunningContainer&) = delete;
  RunningContainer& operator=(const RunningContainer&) = delete;
  pid_t pid() const { return m_inside; }

 private:
  pid_t m_bwrap = 0;
  pid_t m_inside = 0;
};

}  // namespace envcontract::testing
