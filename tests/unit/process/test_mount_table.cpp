// process/mount_table.cpp: the mounts of this process read from mountinfo
// (proc(5)), and the filesystems served by a user's own process among them.
#include <gtest/gtest.h>
#include <pwd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "process/mount_table.hpp"

namespace envcontract::process {
namespace {

namespace fs = std::filesystem;

// One mountinfo line: id parent major:minor root point options [optional...] - fstype source super.
std::string line(const std::string& device, const std::string& root, const std::string& point,
                 const std::string& options, const std::string& optional, const std::string& fstype,
                 const std::string& super) {
  return "40 1 " + device + " " + root + " " + point + " " + options +
         (optional.empty() ? "" : " " + optional) + " - " + fstype + " source " + super + "\n";
}

std::vector<fs::path> points(const MountTable& table) {
  std::vector<fs::path> out;
  for (const auto& mount : table.mounts()) {
    out.push_back(mount.point);
  }
  return out;
}

TEST(MountTable, ReadsEachMountsFieldsWithOrWithoutOptionalFields) {
  const auto table = MountTable::parse(
      "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
      "37 22 8:17 /exports/envs /srv/envs ro,nosuid - xfs /dev/sdb1 rw,attr2\n"
      "38 22 0:45 / /scratch rw,noexec shared:7 master:2 propagate_from:1 - nfs4 "
      "nas:/scratch rw,vers=4.2\n");
  ASSERT_EQ(table.mounts().size(), 3U);
  const auto& root = table.mounts()[0];
  EXPECT_EQ(root.point, "/");
  EXPECT_EQ(root.fstype, "ext4");
  EXPECT_EQ(root.root, "/");
  EXPECT_EQ(root.device, "8:1");
  EXPECT_EQ(root.options, "rw,relatime");
  const auto& bound = table.mounts()[1];
  EXPECT_EQ(bound.point, "/srv/envs");
  EXPECT_EQ(bound.fstype, "xfs");
  EXPECT_EQ(bound.root, "/exports/envs") << "a bind mount of a directory within its filesystem";
  EXPECT_EQ(bound.device, "8:17");
  EXPECT_EQ(bound.options, "ro,nosuid") << "the mount's own options, not the superblock's";
  EXPECT_EQ(table.mounts()[2].fstype, "nfs4") << "three optional fields before the separator";
  EXPECT_EQ(table.mounts()[2].device, "0:45");
  EXPECT_TRUE(table.user_mounts().empty()) << "none is FUSE";
}

// The kernel writes space, tab, newline and backslash as \ooo; a backslash
// not followed by three octal digits is itself.
TEST(MountTable, UnescapesMountPointsAndRoots) {
  const auto table = MountTable::parse(
      line("0:50", "/my\\040data", "/home/alice/my\\040files", "rw", "", "ext4", "rw") +
      line("0:51", "/", "/mnt/tab\\011new\\012line\\134back", "rw", "", "ext4", "rw") +
      line("0:52", "/", "/mnt/ends\\040", "rw", "", "ext4", "rw") +
      line("0:53", "/", "/mnt/not\\08a\\04", "rw", "", "ext4", "rw"));
  EXPECT_EQ(points(table),
            (std::vector<fs::path>{"/home/alice/my files", "/mnt/tab\tnew\nline\\back",
                                   "/mnt/ends ", "/mnt/not\\08a\\04"}));
  ASSERT_FALSE(table.mounts().empty());
  EXPECT_EQ(table.mounts()[0].root, "/my data");
}

TEST(MountTable, SkipsMalformedLinesAndKeepsTheRest) {
  const auto table = MountTable::parse(
      "\n"
      "garbage\n"
      "22 1 8:1 / /short rw\n"                           // six fields
      "23 1 8:1 / /no-separator rw shared:1 ext4 x y\n"  // no " - "
      "24 1 8:1 / /no-super rw - ext4 /dev/sda1\n"       // no superblock options
      "25 1 8:1 / /kept rw - ext4 /dev/sda1 rw\n"
      "26 1 8:1 / /last rw - ext4 /dev/sda1 rw");  // no final newline
  EXPECT_EQ(points(table), (std::vector<fs::path>{"/kept", "/last"}));
  EXPECT_TRUE(MountTable::parse("").mounts().empty());
}

TEST(MountTable, ReadsVeryLongLines) {
  const std::string deep = "/data/" + std::string(100000, 'd');
  std::string optional;
  for (int i = 0; i < 2000; ++i) {
    optional += (i == 0 ? "" : " ") + std::string("shared:") + std::to_string(i);
  }
  const auto table = MountTable::parse(
      line("0:60", "/", deep, "rw", optional, "fuse.sshfs", "rw,user_id=1000,group_id=1000") +
      line("0:61", "/", "/after", "rw", "", "ext4", "rw"));
  EXPECT_EQ(points(table), (std::vector<fs::path>{deep, "/after"}));
  ASSERT_EQ(table.user_mounts().size(), 1U);
  EXPECT_EQ(table.user_mounts()[0].user_id, 1000U);
}

// FUSE records who mounted it as user_id= among the superblock options.
// Root's own is not a user's; one that does not say who is taken for a
// user's, since it cannot be shown to be root's.
TEST(MountTable, UserMountsAreFuseMountsNotMountedByRoot) {
  const auto table = MountTable::parse(
      line("0:70", "/", "/home/alice/remote", "rw", "shared:5", "fuse.sshfs",
           "rw,user_id=1000,group_id=1000") +
      line("0:71", "/", "/cvmfs/sft", "ro", "", "fuse", "ro,user_id=0,group_id=0") +
      line("0:72", "/", "/media/usb", "rw", "", "fuseblk", "rw,group_id=0,user_id=1001") +
      line("0:73", "/", "/home/bob/x", "rw", "", "fuse", "rw,allow_other") +
      line("0:74", "/", "/home/carol/y", "rw", "", "fuse.rclone", "rw,user_id=12x") +
      line("0:75", "/", "/sys/fs/fuse/connections", "rw", "", "fusectl", "rw") +
      line("0:76", "/", "/nfs/home", "rw", "", "nfs", "rw,user_id=1000"));
  EXPECT_EQ(table.mounts().size(), 7U) << "every mount is in the table";
  const auto& user = table.user_mounts();
  ASSERT_EQ(user.size(), 4U);
  EXPECT_EQ(user[0].mount_point, "/home/alice/remote");
  EXPECT_EQ(user[0].fstype, "fuse.sshfs");
  EXPECT_EQ(user[0].user_id, 1000U);
  EXPECT_EQ(user[1].mount_point, "/media/usb");
  EXPECT_EQ(user[1].fstype, "fuseblk");
  EXPECT_EQ(user[1].user_id, 1001U);
  EXPECT_EQ(user[2].mount_point, "/home/bob/x");
  EXPECT_EQ(user[2].user_id, static_cast<uid_t>(-1)) << "no user_id: not shown to be root's";
  EXPECT_EQ(user[3].mount_point, "/home/carol/y");
  EXPECT_EQ(user[3].user_id, static_cast<uid_t>(-1)) << "an unreadable user_id is none";
}

TEST(MountTable, APathIsHeldByTheUserMountItLiesAtOrBelow) {
  const auto table = MountTable::parse(
      line("0:31", "/", "/home/alice/mnt", "rw", "", "fuse.sshfs", "rw,user_id=1000"));
  for (const char* inside : {"/home/alice/mnt", "/home/alice/mnt/", "/home/alice/mnt/env/bin"}) {
    const auto held = table.holding(inside);
    ASSERT_TRUE(held.has_value()) << inside;
    EXPECT_EQ(held->mount_point, "/home/alice/mnt");
    EXPECT_EQ(held->user_id, 1000U);
  }
  // A name that only starts the same is beside the mount, not in it.
  for (const char* outside : {"/home/alice/mnt2", "/home/alice/mnt2/env", "/home/alice", "/"}) {
    EXPECT_EQ(table.holding(outside), std::nullopt) << outside;
  }
}

TEST(MountTable, ADirectoryHoldsTheUserMountsAtOrBelowIt) {
  const auto table = MountTable::parse(
      line("0:31", "/", "/home/alice/mnt", "rw", "", "fuse.sshfs", "rw,user_id=1000") +
      line("0:32", "/", "/home/bob/data", "rw", "", "fuse", "rw,user_id=1001"));
  for (const char* above : {"/", "/home", "/home/alice", "/home/alice/mnt"}) {
    const auto found = table.within(above);
    ASSERT_TRUE(found.has_value()) << above;
    EXPECT_EQ(found->mount_point, "/home/alice/mnt") << above << ": the first in mount order";
  }
  EXPECT_EQ(table.within("/home/bob").value_or(UserMount{}).mount_point, "/home/bob/data");
  for (const char* beside : {"/home/ali", "/home/alice/mnt/sub", "/opt", "/home/bo"}) {
    EXPECT_EQ(table.within(beside), std::nullopt) << beside;
  }
}

// A directory written with a trailing slash names the same directory:
// within("/home/alice/") finds /home/alice/mnt as within("/home/alice") does.
TEST(MountTable, ADirectoryWrittenWithATrailingSlashHoldsTheSameMounts) {
  const auto table = MountTable::parse(
      line("0:31", "/", "/home/alice/mnt", "rw", "", "fuse.sshfs", "rw,user_id=1000"));
  ASSERT_TRUE(table.within("/home/alice").has_value());
  const auto found = table.within("/home/alice/");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->mount_point, "/home/alice/mnt");
}

TEST(MountTable, APathIsOnTheLastOfTheLongestMountPointsHoldingIt) {
  const auto table = MountTable::parse(line("8:1", "/", "/", "rw", "", "ext4", "rw") +
                                       line("8:2", "/", "/srv", "rw", "", "xfs", "rw") +
                                       line("8:3", "/envs", "/srv/envs", "ro", "", "xfs", "rw") +
                                       line("0:40", "/", "/srv/envs", "rw", "", "tmpfs", "rw") +
                                       line("8:4", "/", "/srv/envs-old", "rw", "", "ext4", "rw"));
  const auto on = [&](const char* path) { return table.mount_of(path); };
  EXPECT_EQ(on("/srv/envs/torch/bin/python").device, "0:40") << "mounted over: the later one";
  EXPECT_EQ(on("/srv/envs").fstype, "tmpfs");
  EXPECT_EQ(on("/srv/envs-old/x").device, "8:4");
  EXPECT_EQ(on("/srv/envsx").device, "8:2") << "a name that only starts the same";
  EXPECT_EQ(on("/srv").device, "8:2");
  EXPECT_EQ(on("/usr/bin/python3").device, "8:1");
  EXPECT_EQ(on("/").point, "/");
  EXPECT_EQ(on("/").fstype, "ext4");

  // None holds it: "/" of no type.
  const auto none = MountTable::parse(line("8:2", "/", "/srv", "rw", "", "xfs", "rw"));
  const auto outside = none.mount_of("/usr/lib");
  EXPECT_EQ(outside.point, "/");
  EXPECT_EQ(outside.fstype, "");
  EXPECT_EQ(outside.root, "/");
  EXPECT_EQ(outside.device, "");
}

TEST(MountTable, NetworkAndFuseFilesystemsAreServedFromElsewhere) {
  for (const char* remote :
       {"nfs", "nfs4", "cifs", "smb3", "ceph", "lustre", "gpfs", "9p", "glusterfs", "afs", "beegfs",
        "orangefs", "sshfs", "fuse", "fuseblk", "fuse.sshfs", "fuse.cvmfs2"}) {
    EXPECT_TRUE(served_from_elsewhere(remote)) << remote;
  }
  // fusectl is the kernel's own view of FUSE connections, served by no one.
  for (const char* local :
       {"ext4", "xfs", "btrfs", "tmpfs", "overlay", "proc", "fusectl", "nfsd", "fuse2", ""}) {
    EXPECT_FALSE(served_from_elsewhere(local)) << local;
  }
}

TEST(MountTable, DescribesAUserMountByItsUsersNameWhenThereIsOne) {
  EXPECT_EQ(describe({"/home/alice/mnt", "fuse.sshfs", 0}),
            "/home/alice/mnt is a fuse.sshfs filesystem mounted by root (uid 0)");
  const uid_t unknown = 3999999999U;
  ASSERT_EQ(::getpwuid(unknown), nullptr) << "a uid no user has";
  EXPECT_EQ(describe({"/mnt/x", "fuse", unknown}),
            "/mnt/x is a fuse filesystem mounted by uid 3999999999");
}

TEST(MountTable, LoadsThisProcesssOwnMounts) {
  const auto table = MountTable::load();
  ASSERT_FALSE(table.mounts().empty());
  for (const auto& mount : table.mounts()) {
    EXPECT_TRUE(mount.point.is_absolute()) << mount.point;
    EXPECT_FALSE(mount.fstype.empty()) << mount.point;
    EXPECT_NE(mount.device.find(':'), std::string::npos) << mount.point;
  }
  const auto root = table.mount_of("/");
  EXPECT_EQ(root.point, "/");
  EXPECT_FALSE(root.fstype.empty()) << "the root mount is in the table";
  const auto proc = table.mount_of("/proc/self/status");
  EXPECT_EQ(proc.point, "/proc");
  EXPECT_EQ(proc.fstype, "proc");
}

}  // namespace
}  // namespace envcontract::process
