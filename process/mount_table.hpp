#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Filesystems served by a user's own process. Any user may mount one
// (fusermount is setuid) over a directory they own, such as their home or an
// env; its server can then leave every read of it unanswered, and a read
// that waits on it cannot be interrupted short of killing the reader. The
// agent never reads such a filesystem: discovery does not enter it, and an
// env on one or holding one is reported, not read.
namespace envcontract::process {

struct UserMount {
  std::filesystem::path mount_point;
  std::string fstype;  // "fuse.sshfs", "fuse", "fuseblk"
  uid_t user_id = 0;   // who mounted it (the user_id= option FUSE records)
};

// Whether a filesystem of this type is served by something that can stop
// answering: a network filesystem, or FUSE.
bool served_from_elsewhere(const std::string& fstype);

// "/home/alice/mnt is a fuse.sshfs filesystem mounted by alice (uid 1000)"
std::string describe(const UserMount& mount);

class MountTable {
 public:
  // This process's mounts (/proc/self/mountinfo). An unreadable table is an
  // empty one: the agent's per-env deadlines still bound what a read costs.
  static MountTable load();
  // The lines of a mountinfo file (proc(5)); for tests.
  static MountTable parse(std::string_view mountinfo);

  // The user mount that `path` lies in (at or below its mount point).
  std::optional<UserMount> holding(const std::filesystem::path& path) const;
  // The first user mount at or below `dir`.
  std::optional<UserMount> within(const std::filesystem::path& dir) const;

  const std::vector<UserMount>& user_mounts() const { return m_user_mounts; }

  struct Mount {
    std::filesystem::path point;
    std::string fstype;
    std::filesystem::path root = "/";  // what of its filesystem is mounted there
    std::string device;                // "major:minor" of its filesystem
    std::string options;               // this mount's own: "rw,nosuid,noexec,relatime"
  };
  // The mount `path` is on, by its text (the last, longest mount point
  // holding it; "/" of no type when none does).
  Mount mount_of(const std::filesystem::path& path) const;
  const std::vector<Mount>& mounts() const { return m_mounts; }

 private:
  std::vector<UserMount> m_user_mounts;
  std::vector<Mount> m_mounts;  // every mount, in mount order
};

}  // namespace envcontract::process
