// freshness/change_keys.cpp: how the change watch names a path (its device
// and its place in its filesystem) and a file (its identity), on real files.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "freshness/change_keys.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::freshness {
namespace {

namespace fs = std::filesystem;

// The filesystem id of `path`, as statfs gives it.
std::uint64_t fsid_at(const fs::path& path) {
  struct statfs filesystem {};
  EXPECT_EQ(::statfs(path.c_str(), &filesystem), 0) << path;
  return fsid_of(&filesystem.f_fsid);
}

// The handle the kernel gives for `path`, held in storage of the largest size.
struct Handle {
  alignas(file_handle) std::array<char, sizeof(file_handle) + MAX_HANDLE_SZ> storage{};
  file_handle& get() { return *reinterpret_cast<file_handle*>(storage.data()); }
};

Handle handle_of(const fs::path& path) {
  Handle handle;
  handle.get().handle_bytes = MAX_HANDLE_SZ;
  int mount_id = 0;
  EXPECT_EQ(::name_to_handle_at(AT_FDCWD, path.c_str(), &handle.get(), &mount_id, 0), 0) << path;
  return handle;
}

TEST(ChangeKeys, APathsKeyNamesItsDeviceAndGivesThePathBack) {
  const std::string key = key_of("259:3", "/srv/envs/torch");
  EXPECT_EQ(key, "259:3:/srv/envs/torch");
  EXPECT_EQ(path_of_key(key), "/srv/envs/torch");
  EXPECT_FALSE(is_object_key(key));
  EXPECT_EQ(path_of_key(key_of("8:1", "/")), "/");
  // A colon in the path is the path's: only the device's own are left out.
  EXPECT_EQ(path_of_key(key_of("8:1", "/opt/a:/b")), "/opt/a:/b");
  EXPECT_FALSE(is_object_key(""));
}

// Each ancestor once, up to the filesystem's root and no further: the watch
// walks a key up this way to find the directories and trees it lies in.
TEST(ChangeKeys, ParentKeysClimbToTheFilesystemsRootAndStop) {
  std::vector<std::string> climbed;
  for (std::string at = key_of("259:3", "/srv/envs/torch"); !at.empty(); at = parent_key(at)) {
    climbed.push_back(at);
  }
  EXPECT_EQ(climbed, (std::vector<std::string>{"259:3:/srv/envs/torch", "259:3:/srv/envs",
                                               "259:3:/srv", "259:3:/"}));
  EXPECT_EQ(parent_key(key_of("8:1", "/")), "");
  // A colon followed by a slash within the path does not stop the climb early.
  EXPECT_EQ(parent_key(key_of("8:1", "/opt/a:/b")), key_of("8:1", "/opt/a:"));
  EXPECT_EQ(parent_key(key_of("8:1", "/opt/a:")), key_of("8:1", "/opt"));
  EXPECT_EQ(parent_key(""), "");
}

TEST(ChangeKeys, TheSameFileByAnyOfItsNamesHasOneIdentity) {
  testing::TempDir dir;
  const fs::path file = dir.write("env/lib/module.py", "x = 1\n");
  const fs::path hard_link = dir.path() / "env/lib/other-name.py";
  fs::create_hard_link(file, hard_link);
  const fs::path symlink = dir.path() / "link.py";
  fs::create_symlink(file, symlink);

  const Identity by_name = identify(file);
  ASSERT_FALSE(by_name.key.empty()) << by_name.problem;
  EXPECT_TRUE(is_object_key(by_name.key));
  EXPECT_EQ(by_name.problem, "") << "a file the kernel identifies can be watched";
  EXPECT_EQ(identify(hard_link).key, by_name.key);
  EXPECT_EQ(identify(symlink).key, by_name.key);
  // Where the link leads, not the link: its changes happen there.
  EXPECT_EQ(identify(symlink).real, fs::canonical(file));
  EXPECT_EQ(by_name.real, fs::canonical(file));
  EXPECT_EQ(identify(hard_link).real, fs::canonical(hard_link));
}

TEST(ChangeKeys, DifferentFilesAndAReplacedFileHaveDifferentIdentities) {
  testing::TempDir dir;
  const fs::path file = dir.write("module.py", "x = 1\n");
  const fs::path twin = dir.write("twin.py", "x = 1\n");
  const std::string first = identify(file).key;
  ASSERT_FALSE(first.empty());
  EXPECT_NE(identify(twin).key, first) << "same content, another file";

  // Written in place: the same file still.
  std::ofstream(file, std::ios::app) << "y = 2\n";
  EXPECT_EQ(identify(file).key, first);

  // Replaced through a rename (as installers do): another file under the
  // name. The old one is kept by another name, so that its inode is not
  // reused, and keeps its identity.
  const fs::path old = dir.path() / "old.py";
  fs::create_hard_link(file, old);
  const fs::path replacement = dir.write("module.py.new", "x = 3\n");
  fs::rename(replacement, file);
  const std::string replaced = identify(file).key;
  EXPECT_FALSE(replaced.empty());
  EXPECT_NE(replaced, first);
  EXPECT_EQ(identify(old).key, first);
}

// The key a fanotify event yields (the file's filesystem id and handle) is the
// key of the file read: that is how a change is matched to what read it.
TEST(ChangeKeys, TheKernelsHandleOfAFileGivesTheKeyOfTheFileRead) {
  testing::TempDir dir;
  const fs::path file = dir.write("pyvenv.cfg", "home = /usr/bin\n");
  const Identity identity = identify(file);
  ASSERT_FALSE(identity.key.empty());
  EXPECT_EQ(identity.fsid, fsid_at(dir.path()));
  Handle handle = handle_of(file);
  EXPECT_EQ(object_key(fsid_at(file), handle.get()), identity.key);
  // The same handle on another filesystem is another file.
  EXPECT_NE(object_key(identity.fsid + 1, handle.get()), identity.key);
  // An object key can never be taken for a path's, which starts with a digit.
  EXPECT_EQ(identity.key.front(), '\0');
}

TEST(ChangeKeys, AnAbsentFileHasNoIdentityAndNoProblem) {
  testing::TempDir dir;
  const Identity absent = identify(dir.path() / "missing.py");
  EXPECT_EQ(absent.key, "");
  EXPECT_EQ(absent.problem, "") << "its name is watched instead";
  EXPECT_EQ(absent.fsid, 0U);
  EXPECT_EQ(absent.real, fs::path());

  fs::create_symlink(dir.path() / "missing.py", dir.path() / "dangling.py");
  const Identity dangling = identify(dir.path() / "dangling.py");
  EXPECT_EQ(dangling.key, "");
  EXPECT_EQ(dangling.problem, "");
}

// procfs gives no file handles; a file of one name is then watched by that
// name, which is no problem: no other name could change it unseen.
TEST(ChangeKeys, AFileOfOneNameTheKernelCannotIdentifyIsNoProblem) {
  struct stat status {};
  ASSERT_EQ(::stat("/proc/self/status", &status), 0);
  ASSERT_EQ(status.st_nlink, 1U);
  const Identity identity = identify("/proc/self/status");
  EXPECT_EQ(identity.key, "");
  EXPECT_EQ(identity.problem, "");
}

}  // namespace
}  // namespace envcontract::freshness
