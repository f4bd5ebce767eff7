// The change watch on real filesystems: real files created, written, renamed
// and chmodded under a temporary directory, and the kernel's own fanotify
// events telling which reads they concern.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "freshness/change_watch.hpp"
#include "freshness/env_dependencies.hpp"
#include "process/read_dependencies.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::freshness {
namespace {

namespace fs = std::filesystem;

class ChangeWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why_not;
    m_watch = ChangeWatch::start(why_not);
    if (!m_watch) {
      GTEST_SKIP() << "skipped: the kernel will not watch filesystems here: " << why_not;
    }
    m_mounts = process::MountTable::load();
    // The first read of a filesystem not yet watched counts as changed
    // (what happened during it was not seen); these tests start after it.
    process::ReadDependencies first;
    first.trees.insert(m_dir.path());
    auto interest = m_watch->open();
    ASSERT_EQ(m_watch->settle(*interest, first, m_mounts), "");
    const auto change = m_watch->changed(*interest);
    ASSERT_TRUE(change.has_value());
    EXPECT_EQ(change->kind, Change::Kind::first_watch) << change->text;
  }

  // A read that depended on `dependencies`, settled at once.
  std::shared_ptr<ChangeWatch::Interest> read(const process::ReadDependencies& dependencies) {
    auto interest = m_watch->open();
    EXPECT_EQ(m_watch->settle(*interest, dependencies, m_mounts), "");
    EXPECT_EQ(m_watch->changed(*interest), std::nullopt) << "nothing changed yet";
    return interest;
  }

  // What changed, in words ("" for nothing).
  std::string change(ChangeWatch::Interest& interest) {
    const auto seen = m_watch->changed(interest);
    return seen ? seen->text : "";
  }

  // `relative` under the test's directory as the watch names it: from its
  // filesystem's own root, the mount point left out.
  fs::path as_watched(const std::string& relative) const {
    const fs::path path = fs::canonical(m_dir.path()) / relative;
    const auto mount = m_mounts.mount_of(path);
    return (mount.root / path.lexically_relative(mount.point)).lexically_normal();
  }

  // What changed, typed; a test failure when nothing did.
  Change seen(ChangeWatch::Interest& interest) {
    const auto changed = m_watch->changed(interest);
    EXPECT_TRUE(changed.has_value()) << "nothing changed";
    return changed.value_or(Change{});
  }

  testing::TempDir m_dir;
  std::shared_ptr<ChangeWatch> m_watch;
  process::MountTable m_mounts;
};

TEST_F(ChangeWatchTest, AChangeUnderATreeCountsAndOneBesideItDoesNot) {
  const fs::path env = m_dir.path() / "env";
  fs::create_directories(env / "lib/site-packages/torch");
  process::ReadDependencies dependencies;
  dependencies.trees.insert(env);
  auto interest = read(dependencies);

  m_dir.write("env-notes.txt", "beside the env, not in it\n");
  fs::create_directories(m_dir.path() / "other/lib");
  EXPECT_EQ(change(*interest), "") << "nothing under the tree changed";

  m_dir.write("env/lib/site-packages/torch/version.py", "__version__ = '2.10.0'\n");
  const Change changed = seen(*interest);
  EXPECT_EQ(changed.kind, Change::Kind::path_changed) << changed.text;
  EXPECT_EQ(changed.path, as_watched("env/lib/site-packages/torch/version.py"));
}

// A library the loader looked for and did not find: the same name created
// there later changes the resolution; another name does not.
TEST_F(ChangeWatchTest, AnAbsentPathCountsOnceItIsCreated) {
  fs::create_directories(m_dir.path() / "lib");
  process::ReadDependencies dependencies;
  dependencies.paths.insert(m_dir.path() / "lib/libbkcl.so");
  auto interest = read(dependencies);

  m_dir.write("lib/libother.so", "");
  EXPECT_EQ(change(*interest), "");
  m_dir.write("lib/libbkcl.so", "");
  EXPECT_EQ(seen(*interest).path, as_watched("lib/libbkcl.so"));
}

// A directory on the way to a path renamed, or its mode changed: the path
// now names something else, or reads differently for the env's user.
TEST_F(ChangeWatchTest, ARenameOrAChmodOnTheWayToAPathCounts) {
  m_dir.write("a/b/libc10.so", "");
  process::ReadDependencies dependencies;
  dependencies.paths.insert(m_dir.path() / "a/b/libc10.so");
  auto renamed = read(dependencies);
  fs::rename(m_dir.path() / "a", m_dir.path() / "c");
  EXPECT_NE(change(*renamed), "") << "a/ was renamed";

  fs::rename(m_dir.path() / "c", m_dir.path() / "a");
  auto chmodded = read(dependencies);
  ASSERT_EQ(::chmod((m_dir.path() / "a/b").c_str(), 0700), 0);
  EXPECT_NE(change(*chmodded).find("a/b"), std::string::npos);
}

// A PATH or LD_LIBRARY_PATH directory: an entry added, removed or changed
// in it counts, what happens in its subdirectories does not.
TEST_F(ChangeWatchTest, ADirectorysEntriesCountAndItsSubdirectoriesDoNot) {
  fs::create_directories(m_dir.path() / "bin/sub");
  m_dir.write("bin/xpu-smi", "#!/bin/sh\n");
  process::ReadDependencies dependencies;
  dependencies.entries.insert(m_dir.path() / "bin");
  auto interest = read(dependencies);
  m_dir.write("bin/sub/helper", "");
  EXPECT_EQ(change(*interest), "");
  ASSERT_EQ(::chmod((m_dir.path() / "bin/xpu-smi").c_str(), 0755), 0);
  EXPECT_NE(change(*interest).find("bin/xpu-smi"), std::string::npos);
}

// What changes between the read's start and the moment it names what it
// read counts: the read may have seen the old contents.
TEST_F(ChangeWatchTest, AChangeWhileTheReadRunsCounts) {
  fs::create_directories(m_dir.path() / "env/bin");
  auto interest = m_watch->open();
  m_dir.write("env/bin/activate", "export XPU_VISIBLE_DEVICES=0\n");
  process::ReadDependencies dependencies;
  dependencies.trees.insert(m_dir.path() / "env");
  ASSERT_EQ(m_watch->settle(*interest, dependencies, m_mounts), "");
  const Change changed = seen(*interest);
  EXPECT_EQ(changed.kind, Change::Kind::changed_while_read) << changed.text;
  EXPECT_EQ(changed.path, as_watched("env/bin/activate"));
}

// Paths reached through a bind mount are the filesystem's own paths: a
// change made through the other name counts.
TEST_F(ChangeWatchTest, AChangeMadeThroughAnotherMountOfTheSameFilesCounts) {
  const fs::path real = m_dir.path() / "srv/home/alice";
  const fs::path alias = m_dir.path() / "home";
  fs::create_directories(real / "env/lib");
  fs::create_directories(alias);
  if (::mount(real.parent_path().c_str(), alias.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    GTEST_SKIP() << "skipped: cannot bind-mount here: " << std::strerror(errno);
  }
  struct Unmount {
    fs::path point;
    ~Unmount() { ::umount2(point.c_str(), MNT_DETACH); }
  } unmount{alias};
  m_mounts = process::MountTable::load();
  process::ReadDependencies dependencies;
  dependencies.trees.insert(alias / "alice/env");
  auto interest = read(dependencies);
  m_dir.write("srv/home/alice/env/lib/libxpytorch.so", "");
  EXPECT_NE(change(*interest).find("libxpytorch.so"), std::string::npos)
      << "changed through " << real << ", read through " << alias;
}

// What the kernel does not see change is never taken as unchanged.
TEST_F(ChangeWatchTest, AFilesystemItCannotWatchIsSaidAndCountsAsChanged) {
  process::ReadDependencies dependencies;
  dependencies.trees.insert(m_dir.path());
  dependencies.paths.insert("/proc/sys/kernel/hostname");
  auto interest = m_watch->open();
  const std::string why = m_watch->settle(*interest, dependencies, m_mounts);
  EXPECT_NE(why.find("proc"), std::string::npos) << why;
  EXPECT_EQ(seen(*interest).kind, Change::Kind::not_watched);
}

// A file read is followed by identity as well: rewritten in place through
// a name outside every path the read depended on (conda's package cache,
// hard-linked into the env), it counts.
TEST_F(ChangeWatchTest, AFileRewrittenThroughAnotherNameCounts) {
  const fs::path library = m_dir.write("env/lib/libxpytorch.so", "v1\n");
  fs::create_directories(m_dir.path() / "pkgs");
  fs::create_hard_link(library, m_dir.path() / "pkgs/libxpytorch.so");
  process::ReadDependencies dependencies;
  dependencies.trees.insert(m_dir.path() / "env");
  dependencies.files.insert(library);
  auto interest = read(dependencies);
  m_dir.write("pkgs/other.so", "");
  EXPECT_EQ(change(*interest), "") << "another file of the cache";
  std::ofstream(m_dir.path() / "pkgs/libxpytorch.so", std::ios::app) << "v2\n";
  const Change changed = seen(*interest);
  EXPECT_EQ(changed.kind, Change::Kind::path_changed);
  EXPECT_EQ(changed.path, fs::path()) << "no path of the env names it";
  EXPECT_NE(changed.text.find("another of its names"), std::string::npos) << changed.text;
}

// A file read through a link to somewhere no tree covers: replaced there
// (a new file renamed over it), it counts.
TEST_F(ChangeWatchTest, AFileReadThroughALinkCountsWhenItsTargetIsReplaced) {
  m_dir.write("opt/vendor/lib/libbkcl.so", "v1\n");
  fs::create_directories(m_dir.path() / "env/lib");
  fs::create_symlink(m_dir.path() / "opt/vendor/lib/libbkcl.so",
                     m_dir.path() / "env/lib/libbkcl.so");
  process::ReadDependencies dependencies;
  dependencies.trees.insert(m_dir.path() / "env");
  dependencies.files.insert(m_dir.path() / "env/lib/libbkcl.so");
  auto interest = read(dependencies);
  m_dir.write("opt/vendor/lib/libbkcl.so.new", "v2\n");
  EXPECT_EQ(change(*interest), "") << "a file beside it";
  fs::rename(m_dir.path() / "opt/vendor/lib/libbkcl.so.new",
             m_dir.path() / "opt/vendor/lib/libbkcl.so");
  EXPECT_NE(change(*interest).find("libbkcl.so"), std::string::npos);
}

// A venv's python -> /usr/bin/python3 -> /etc/alternatives/python3 ->
// python3.9: the alternative switched changes the env's interpreter, though
// neither the first name nor the last changed.
TEST_F(ChangeWatchTest, ALinkInTheMiddleOfAChainCounts) {
  const fs::path root = m_dir.path();
  m_dir.write("usr/bin/python3.9", "");
  m_dir.write("usr/bin/python3.11", "");
  fs::create_directories(root / "etc/alternatives");
  fs::create_directories(root / "env/bin");
  fs::create_symlink(root / "usr/bin/python3.9", root / "etc/alternatives/python3");
  fs::create_symlink(root / "etc/alternatives/python3", root / "usr/bin/python3");
  fs::create_symlink(root / "usr/bin/python3", root / "env/bin/python");
  EXPECT_EQ(process::link_chain(root / "env/bin/python"),
            (std::vector<fs::path>{root / "usr/bin/python3", root / "etc/alternatives/python3",
                                   root / "usr/bin/python3.9"}));
  process::ReadDependencies dependencies;
  dependencies.paths.insert(root / "env/bin/python");
  dependencies.files.insert(root / "env/bin/python");
  auto interest = read(dependencies);
  fs::remove(root / "etc/alternatives/python3");
  fs::create_symlink(root / "usr/bin/python3.11", root / "etc/alternatives/python3");
  EXPECT_NE(change(*interest).find("alternatives/python3"), std::string::npos);
}

// A site-packages inside the prefix that is a link to a directory elsewhere:
// a module added there is a change of the env, though the prefix's tree
// does not hold it.
TEST_F(ChangeWatchTest, ATreeThatIsALinkIsWatchedWhereItLeads) {
  const fs::path root = m_dir.path();
  fs::create_directories(root / "shared/site-packages");
  fs::create_directories(root / "env/lib/python3.10");
  fs::create_directory_symlink(root / "shared/site-packages",
                               root / "env/lib/python3.10/site-packages");
  process::ReadDependencies dependencies;
  dependencies.trees.insert(root / "env");
  dependencies.trees.insert(root / "env/lib/python3.10/site-packages");
  process::add_link_targets(dependencies);
  dependencies.compact();
  auto interest = read(dependencies);
  m_dir.write("shared/site-packages/triton.py", "backend = 'cuda'\n");
  EXPECT_NE(change(*interest).find("triton.py"), std::string::npos);
}

// A library looked for and not found in the env's lib, which is a link to a
// directory elsewhere: created there, it is found, and counts.
TEST_F(ChangeWatchTest, AnAbsentPathBehindALinkCountsWhereTheLinkLeads) {
  const fs::path root = m_dir.path();
  fs::create_directories(root / "opt/vendor/lib");
  fs::create_directories(root / "env");
  fs::create_directory_symlink(root / "opt/vendor/lib", root / "env/lib");
  process::ReadDependencies dependencies;
  dependencies.trees.insert(root / "env");
  dependencies.paths.insert(root / "env/lib/libbkcl.so");
  process::add_link_targets(dependencies);
  dependencies.compact();
  auto interest = read(dependencies);
  m_dir.write("opt/vendor/lib/libbkcl.so", "");
  EXPECT_NE(change(*interest).find("libbkcl.so"), std::string::npos);
}

// A filesystem's mark ends with it: unmounted, every read on it counts as
// changed; mounted again at the same place, it is watched anew.
TEST_F(ChangeWatchTest, AFilesystemUnmountedAndMountedAgainIsWatchedAnew) {
  const fs::path point = m_dir.path() / "data";
  fs::create_directories(point);
  const auto mount = [&] {
    return ::mount("envcontract-test", point.c_str(), "tmpfs", 0, "size=1m");
  };
  if (mount() != 0) {
    GTEST_SKIP() << "skipped: cannot mount a tmpfs here: " << std::strerror(errno);
  }
  m_dir.write("data/env/lib/libc10.so", "");
  process::ReadDependencies dependencies;
  dependencies.trees.insert(point / "env");
  dependencies.files.insert(point / "env/lib/libc10.so");
  m_mounts = process::MountTable::load();
  auto first = m_watch->open();
  ASSERT_EQ(m_watch->settle(*first, dependencies, m_mounts), "");
  auto before = read(dependencies);
  ASSERT_EQ(::umount2(point.c_str(), 0), 0) << std::strerror(errno);
  EXPECT_EQ(seen(*before).kind, Change::Kind::remounted) << change(*before);

  ASSERT_EQ(mount(), 0) << std::strerror(errno);
  struct Unmount {
    fs::path point;
    ~Unmount() { ::umount2(point.c_str(), MNT_DETACH); }
  } unmount{point};
  m_dir.write("data/env/lib/libc10.so", "");
  m_mounts = process::MountTable::load();
  auto marking = m_watch->open();
  ASSERT_EQ(m_watch->settle(*marking, dependencies, m_mounts), "");
  EXPECT_EQ(seen(*marking).kind, Change::Kind::first_watch) << "marked anew";
  auto after = read(dependencies);
  m_dir.write("data/env/lib/libc10.so", "rewritten\n");
  EXPECT_NE(change(*after).find("libc10.so"), std::string::npos);
}

// Directories are named from their handles, not from text a user chooses:
// one named as the kernel names a removed directory is still followed.
TEST_F(ChangeWatchTest, ADirectoryNamedLikeARemovedOneIsFollowed) {
  fs::create_directories(m_dir.path() / "x (deleted)");
  process::ReadDependencies dependencies;
  dependencies.trees.insert(m_dir.path() / "x (deleted)");
  auto interest = read(dependencies);
  m_dir.write("x (deleted)/sitecustomize.py", "import os\n");
  EXPECT_NE(change(*interest).find("sitecustomize.py"), std::string::npos);
}

// The watch holds nothing open on a filesystem: a disk (here a tmpfs) whose
// files were read can still be unmounted.
TEST_F(ChangeWatchTest, AWatchedFilesystemCanStillBeUnmounted) {
  const fs::path point = m_dir.path() / "data";
  fs::create_directories(point);
  if (::mount("envcontract-test", point.c_str(), "tmpfs", 0, "size=1m") != 0) {
    GTEST_SKIP() << "skipped: cannot mount a tmpfs here: " << std::strerror(errno);
  }
  m_dir.write("data/env/lib/libbkcl.so", "");
  m_mounts = process::MountTable::load();
  process::ReadDependencies dependencies;
  dependencies.trees.insert(point / "env");
  dependencies.files.insert(point / "env/lib/libbkcl.so");
  auto interest = m_watch->open();
  EXPECT_EQ(m_watch->settle(*interest, dependencies, m_mounts), "");
  m_dir.write("data/env/lib/libbkcl.so", "changed\n");
  EXPECT_NE(change(*interest), "");
  const int unmounted = ::umount2(point.c_str(), 0);
  const int error = errno;
  if (unmounted != 0) {
    ::umount2(point.c_str(), MNT_DETACH);
  }
  EXPECT_EQ(unmounted, 0) << std::strerror(error);
}

// A read left blocked never settles: it counts as changed, and the changes
// logged for it are let go.
TEST_F(ChangeWatchTest, AnAbandonedReadCountsAsChanged) {
  auto interest = m_watch->open();
  m_watch->abandon(*interest);
  EXPECT_EQ(seen(*interest).kind, Change::Kind::unfinished);
  process::ReadDependencies dependencies;
  dependencies.trees.insert(m_dir.path());
  EXPECT_EQ(m_watch->settle(*interest, dependencies, m_mounts), "settled twice");
}

// More changes while a read runs than are kept for matching: the read counts
// as changed, though another read held the log open before it began.
TEST(ChangeWatchLog, MoreChangesWhileAReadRunsThanAreKeptCount) {
  std::string why_not;
  auto watch = ChangeWatch::start(why_not, 8);
  if (!watch) {
    GTEST_SKIP() << "skipped: the kernel will not watch filesystems here: " << why_not;
  }
  testing::TempDir dir;
  const auto mounts = process::MountTable::load();
  process::ReadDependencies first;
  first.trees.insert(dir.path());
  auto marking = watch->open();
  ASSERT_EQ(watch->settle(*marking, first, mounts), "");

  auto held = watch->open();  // a read that runs on (a slow env)
  for (int i = 0; i < 16; ++i) {
    dir.write("busy/file" + std::to_string(i), "");
  }
  auto interest = watch->open();
  dir.write("env/lib/libc10.so", "");
  process::ReadDependencies dependencies;
  dependencies.trees.insert(dir.path() / "unrelated");
  ASSERT_EQ(watch->settle(*interest, dependencies, mounts), "");
  const auto seen = watch->changed(*interest);
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->kind, Change::Kind::lost) << seen->text;
  EXPECT_NE(seen->text.find("more changed while it was read"), std::string::npos) << seen->text;
}

// The paths a reader notes are recorded, and a tree covers what is under it.
TEST(ReadDependencies, ReadsAreRecordedAndATreeCoversWhatIsUnderIt) {
  process::ReadDependencies dependencies;
  {
    process::RecordingReads recording(dependencies);
    process::record_read("/opt/env/lib/python3.11/site-packages/torch/__init__.py");
    process::record_read("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
    process::record_listing("/usr/lib/x86_64-linux-gnu");
  }
  process::record_read("/not/recorded/once/it/ends");
  dependencies.trees.insert("/opt/env");
  dependencies.trees.insert("/opt/env/lib");
  dependencies.compact();
  EXPECT_EQ(dependencies.trees, std::set<fs::path>{"/opt/env"});
  EXPECT_EQ(dependencies.paths, std::set<fs::path>{"/usr/lib/x86_64-linux-gnu/libstdc++.so.6"});
  EXPECT_EQ(dependencies.entries, std::set<fs::path>{"/usr/lib/x86_64-linux-gnu"});
  EXPECT_EQ(dependencies.incomplete, "");
}

// A relative path names no place a change can be matched to: the read's
// facts are then not kept.
TEST(ReadDependencies, ARelativePathReadIsSaid) {
  process::ReadDependencies dependencies;
  process::RecordingReads recording(dependencies);
  process::record_read("lib/python3.10/site-packages/torch/__init__.py");
  EXPECT_NE(dependencies.incomplete.find("relative path"), std::string::npos);
}

TEST(ReadDependencies, MoreReadsThanAreKeptAreSaid) {
  process::ReadDependencies dependencies;
  process::RecordingReads recording(dependencies);
  for (std::size_t i = 0; i <= process::k_max_recorded_paths; ++i) {
    process::record_read("/usr/lib/lib" + std::to_string(i) + ".so");
  }
  EXPECT_EQ(dependencies.paths.size(), process::k_max_recorded_paths);
  EXPECT_NE(dependencies.incomplete.find("more than"), std::string::npos);
}

// A module's file with other names is followed by identity (a change through
// conda's package cache names no path of the env); one with a single name
// is covered by its directory. Past the bound, the read says so.
TEST(ReadDependencies, ModuleFilesWithOtherNamesAreFollowedByIdentity) {
  testing::TempDir dir;
  const auto linked = dir.write("site/linked.py", "");
  fs::create_hard_link(linked, dir.path() / "pkgs-linked.py");
  const auto alone = dir.write("site/alone.py", "");
  facts::EnvFacts env;
  env.env.prefix = dir.path();
  env.static_facts.module_files.add("alone", alone.string(), alone.string());
  env.static_facts.module_files.add("linked", linked.string(), linked.string());
  env.static_facts.module_files.finish();
  process::ReadDependencies dependencies;
  add_env_dependencies(env, {}, dependencies);
  EXPECT_EQ(dependencies.files, std::set<fs::path>{linked});
  EXPECT_EQ(dependencies.incomplete, "");

  facts::EnvFacts many;
  many.env.prefix = dir.path();
  for (std::size_t i = 0; i <= process::k_max_recorded_paths; ++i) {
    const std::string name = "m" + std::to_string(1000000 + i);  // added in name order
    many.static_facts.module_files.add(name, linked.string(), linked.string());
  }
  many.static_facts.module_files.finish();
  process::ReadDependencies too_many;
  add_env_dependencies(many, {}, too_many);
  EXPECT_EQ(too_many.incomplete, "more than " + std::to_string(process::k_max_recorded_paths) +
                                     " of its modules' files have other names");
}

}  // namespace
}  // namespace envcontract::freshness
