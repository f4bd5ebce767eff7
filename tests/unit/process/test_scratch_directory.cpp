// process/scratch_directory.cpp: a private directory for one probe, given
// to the probe's user, read back and removed without following what that
// user planted in it. The "child" is a real process run as a real user of
// the tests (tests/support/test_users.hpp).
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "process/scratch_directory.hpp"
#include "process/unique_fd.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_users.hpp"

namespace envcontract::process {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string text_of(const fs::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Credentials credentials_of(const testing::User& user) {
  Credentials credentials;
  credentials.uid = user.uid;
  credentials.gid = user.gid;
  return credentials;
}

// Runs `steps` in a child process as `user`, as a probe runs; true when
// they all succeeded. Only system calls in the child: the test is threaded.
bool as_user(const testing::User& user, const std::function<bool()>& steps) {
  const pid_t child = ::fork();
  if (child == 0) {
    const bool ok = ::setgroups(0, nullptr) == 0 &&
                    ::setresgid(user.gid, user.gid, user.gid) == 0 &&
                    ::setresuid(user.uid, user.uid, user.uid) == 0 && steps();
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  return child > 0 && ::waitpid(child, &status, 0) == child && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

#define REQUIRE_USER(variable, name)                                  \
  const auto variable = testing::ensure_user(name);                   \
  if (!(variable)) {                                                  \
    GTEST_SKIP() << "skipped: no user " << (name) << " (needs root)"; \
  }

TEST(ScratchDirectory, MadePrivateInTheTempDirAndRemovedWithTheObject) {
  fs::path path;
  {
    ScratchDirectory scratch("envcontract-test", std::nullopt);
    ASSERT_TRUE(scratch.ok()) << scratch.error();
    EXPECT_EQ(scratch.error(), "");
    path = scratch.file("probe.py").parent_path();
    EXPECT_EQ(scratch.file("probe.py"), path / "probe.py");
    EXPECT_EQ(path.parent_path(), fs::temp_directory_path());
    EXPECT_TRUE(path.filename().string().starts_with("envcontract-test-")) << path;
    struct stat info {};
    ASSERT_EQ(::lstat(path.c_str(), &info), 0);
    EXPECT_TRUE(S_ISDIR(info.st_mode));
    EXPECT_EQ(info.st_mode & 07777, 0700U);
    EXPECT_EQ(info.st_uid, ::geteuid());
    ASSERT_TRUE(scratch.write("probe.py", "print(1)\n"));
  }
  EXPECT_FALSE(fs::exists(fs::symlink_status(path))) << path;
}

// Inputs are readable by the child's user whatever the agent's umask, and
// written only as new files: a name already there (a link planted to a
// file elsewhere, or to where a file would be made) is refused.
TEST(ScratchDirectory, InputsAreWrittenAsNewFilesReadableWhateverTheUmask) {
  testing::TempDir dir;
  const auto kept = dir.write("kept", "kept\n");
  ScratchDirectory scratch("envcontract-test", std::nullopt);
  ASSERT_TRUE(scratch.ok()) << scratch.error();
  const mode_t old = ::umask(0077);
  const bool written = scratch.write("probe.py", "print(1)\n");
  ::umask(old);
  ASSERT_TRUE(written) << scratch.error();
  struct stat info {};
  ASSERT_EQ(::lstat(scratch.file("probe.py").c_str(), &info), 0);
  EXPECT_TRUE(S_ISREG(info.st_mode));
  EXPECT_EQ(info.st_mode & 07777, 0644U);
  EXPECT_EQ(scratch.read("probe.py", 100), "print(1)\n");

  EXPECT_FALSE(scratch.write("probe.py", "again")) << "never written over";
  fs::create_symlink(kept, scratch.file("to-kept"));
  EXPECT_FALSE(scratch.write("to-kept", "overwritten"));
  EXPECT_NE(scratch.error(), "");
  EXPECT_EQ(text_of(kept), "kept\n");
  fs::create_symlink(dir.path() / "made", scratch.file("to-new"));
  EXPECT_FALSE(scratch.write("to-new", "made"));
  EXPECT_FALSE(fs::exists(dir.path() / "made"));
}

// Handed over, the directory is the child's user's alone: that user reads
// the inputs and writes results, another user can do neither.
TEST(ScratchDirectory, HandedOverItIsTheChildsUsersAlone) {
  REQUIRE_USER(alice, "ectest-alice");
  REQUIRE_USER(bob, "ectest-bob");
  ScratchDirectory scratch("envcontract-test", credentials_of(*alice));
  ASSERT_TRUE(scratch.ok()) << scratch.error();
  ASSERT_TRUE(scratch.write("input", "for the child\n")) << scratch.error();
  ASSERT_TRUE(scratch.hand_over()) << scratch.error();
  const fs::path path = scratch.file("input").parent_path();
  struct stat info {};
  ASSERT_EQ(::lstat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, alice->uid);
  EXPECT_EQ(info.st_gid, alice->gid);
  EXPECT_EQ(info.st_mode & 07777, 0700U);

  const std::string input = scratch.file("input");
  const std::string output = scratch.file("output");
  const std::string bobs = scratch.file("bobs");
  EXPECT_TRUE(as_user(*alice, [&] {
    const int in = ::open(input.c_str(), O_RDONLY);
    const int out = ::open(output.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    const bool ok = in >= 0 && out >= 0 && ::write(out, "result\n", 7) == 7;
    ::close(in);
    ::close(out);
    return ok;
  }));
  EXPECT_TRUE(as_user(*bob, [&] {
    return ::open(input.c_str(), O_RDONLY) < 0 && errno == EACCES &&
           ::open(bobs.c_str(), O_WRONLY | O_CREAT, 0600) < 0 && errno == EACCES;
  }));
  EXPECT_EQ(scratch.read("output", 100), "result\n");
  EXPECT_EQ(scratch.read("input", 100), std::nullopt)
      << "the agent's own file is never taken for the child's output";
}

// What the agent reads back is a regular file of the child's user, below
// the directory: not a link, a FIFO (which would block the agent), a
// device, a directory, a hard link to someone else's file, nor a name that
// climbs out or starts at "/". At most the bytes asked for.
TEST(ScratchDirectory, OnlyTheChildsOwnRegularFilesAreReadBack) {
  REQUIRE_USER(alice, "ectest-alice");
  REQUIRE_USER(bob, "ectest-bob");
  testing::TempDir dir;
  const auto bobs = dir.write("bobs", "bob's\n");
  ASSERT_EQ(::chown(bobs.c_str(), bob->uid, bob->gid), 0);
  const auto alices = dir.write("alices", "alice's elsewhere\n");
  ASSERT_EQ(::chown(alices.c_str(), alice->uid, alice->gid), 0);

  ScratchDirectory scratch("envcontract-test", credentials_of(*alice));
  ASSERT_TRUE(scratch.hand_over()) << scratch.error();
  const fs::path path = scratch.file("x").parent_path();
  const std::string where = path.string();
  ASSERT_TRUE(as_user(*alice, [&] {
    if (::chdir(where.c_str()) != 0) {
      return false;
    }
    const int out = ::open("result", O_WRONLY | O_CREAT | O_EXCL, 0600);
    const bool written = out >= 0 && ::write(out, "0123456789", 10) == 10;
    ::close(out);
    return written && ::symlink("result", "link") == 0 && ::mkfifo("fifo", 0600) == 0 &&
           ::mkdir("dir", 0700) == 0;
  }));
  // What a kernel without protected_hardlinks lets any user make.
  ASSERT_EQ(::link(bobs.c_str(), (path / "hardlink").c_str()), 0);
  const bool device = ::mknod((path / "zero").c_str(), S_IFCHR | 0600, ::makedev(1, 5)) == 0 &&
                      ::chown((path / "zero").c_str(), alice->uid, alice->gid) == 0;
  // Beside the directory, the user's own: still not below it.
  const fs::path beside = path.string() + "-beside";
  std::ofstream(beside) << "beside\n";
  ASSERT_EQ(::chown(beside.c_str(), alice->uid, alice->gid), 0);

  EXPECT_EQ(scratch.read("result", 100), "0123456789");
  EXPECT_EQ(scratch.read("result", 4), "0123");
  const auto reader = scratch.reader();
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->read("result", 100), "0123456789");
  // On a thread, so that a read the FIFO blocked fails the test instead of
  // hanging it.
  auto refused = std::async(std::launch::async, [&] {
    std::string read_anyway;
    for (const std::string& name :
         std::vector<std::string>{"link", "fifo", "dir", "hardlink", "absent",
                                  "../" + beside.filename().string(), alices.string()}) {
      if (scratch.read(name.c_str(), 100) || reader->read(name.c_str(), 100)) {
        read_anyway += name + " ";
      }
    }
    if (device && scratch.read("zero", 100)) {
      read_anyway += "zero";
    }
    return read_anyway;
  });
  if (refused.wait_for(20s) != std::future_status::ready) {
    UniqueFd writer(::open(scratch.file("fifo").c_str(), O_RDWR | O_NONBLOCK));  // wakes it
    refused.wait();
    fs::remove(beside);
    FAIL() << "reading a FIFO the child made blocked the agent";
  }
  EXPECT_EQ(refused.get(), "");
  fs::remove(beside);
}

// A reader keeps the directory's own descriptor: once the directory is
// gone, another made at its name (by anyone) is not read through it.
TEST(ScratchDirectory, AReaderOutlivesItAndNeverReadsWhatTakesItsPlace) {
  std::shared_ptr<const ScratchReader> reader;
  fs::path path;
  {
    ScratchDirectory scratch("envcontract-test", std::nullopt);
    ASSERT_TRUE(scratch.write("out", "first\n")) << scratch.error();
    reader = scratch.reader();
    ASSERT_NE(reader, nullptr);
    path = scratch.file("out").parent_path();
    EXPECT_EQ(reader->read("out", 100), "first\n");
  }
  EXPECT_FALSE(fs::exists(path));
  fs::create_directories(path);
  std::ofstream(path / "out") << "planted\n";
  EXPECT_EQ(reader->read("out", 100), std::nullopt);
  fs::remove_all(path);
}

// Whatever the child leaves (nested directories, directories it made
// read-only or closed to all, links to the agent's files, FIFOs) goes with
// the directory, and nothing a link points to is touched.
TEST(ScratchDirectory, WhatTheChildLeavesGoesAndNothingItLinksTo) {
  REQUIRE_USER(alice, "ectest-alice");
  testing::TempDir dir;
  const auto kept = dir.write("keep/file", "kept\n");
  const fs::path keep_dir = dir.path() / "keep";
  fs::path path;
  {
    ScratchDirectory scratch("envcontract-test", credentials_of(*alice));
    ASSERT_TRUE(scratch.hand_over()) << scratch.error();
    path = scratch.file("x").parent_path();
    const std::string where = path.string();
    const std::string keep_text = keep_dir.string();
    const std::string kept_text = kept.string();
    ASSERT_TRUE(as_user(*alice, [&] {
      const auto make = [](const char* name) {
        const int fd = ::open(name, O_WRONLY | O_CREAT | O_EXCL, 0600);
        return fd >= 0 && ::close(fd) == 0;
      };
      return ::chdir(where.c_str()) == 0 && ::mkdir("a", 0700) == 0 && ::mkdir("a/b", 0700) == 0 &&
             ::mkdir("a/b/c", 0700) == 0 && make("a/b/c/file") && ::mkdir("ro", 0700) == 0 &&
             make("ro/file") && ::mkdir("ro/sub", 0700) == 0 && make("ro/sub/file") &&
             ::chmod("ro/sub", 0500) == 0 && ::chmod("ro", 0500) == 0 &&
             ::mkdir("closed", 0700) == 0 && make("closed/file") && ::chmod("closed", 0) == 0 &&
             make("unreadable") && ::chmod("unreadable", 0) == 0 &&
             ::symlink(keep_text.c_str(), "to-dir") == 0 &&
             ::symlink(kept_text.c_str(), "to-file") == 0 && ::mkdir("links", 0700) == 0 &&
             ::symlink(keep_text.c_str(), "links/to-dir") == 0 && ::mkfifo("fifo", 0600) == 0 &&
             ::link("a/b/c/file", "hard") == 0;
    }));
  }
  EXPECT_FALSE(fs::exists(fs::symlink_status(path))) << path;
  EXPECT_EQ(text_of(kept), "kept\n");
  EXPECT_TRUE(fs::is_directory(keep_dir));
}

// Bounded: a tree deeper than the bound is left (said by the answer), not
// walked without end; a shallower one goes whole.
TEST(ScratchDirectory, RemovingContentsIsBoundedInDepth) {
  testing::TempDir dir;
  fs::path shallow = dir.path() / "shallow";
  fs::path deep = dir.path() / "deep";
  for (int level = 0; level < 8; ++level) {
    shallow /= "d";
  }
  for (int level = 0; level < 64; ++level) {
    deep /= "d";
  }
  dir.write((shallow / "file").lexically_relative(dir.path()), "");
  dir.write((deep / "file").lexically_relative(dir.path()), "");
  const UniqueFd shallow_fd(
      ::open((dir.path() / "shallow").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const UniqueFd deep_fd(::open((dir.path() / "deep").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  EXPECT_TRUE(remove_contents_at(shallow_fd.get()));
  EXPECT_TRUE(fs::is_empty(dir.path() / "shallow"));
  EXPECT_FALSE(remove_contents_at(deep_fd.get()));
  EXPECT_FALSE(fs::is_empty(dir.path() / "deep"));
}

// remove_contents_at lists through a description of its own: a second call
// through the same descriptor sees what is there (a dup would share the
// first listing's offset, at the end, and answer "empty" for a directory
// that is not).
TEST(ScratchDirectory, RemovingAgainThroughOneDescriptorSeesWhatAppearedSince) {
  testing::TempDir dir;
  for (const char* name : {"d/1", "d/2", "d/3"}) {
    dir.write(name, "");
  }
  const UniqueFd fd(::open((dir.path() / "d").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(remove_contents_at(fd.get()));
  ASSERT_TRUE(fs::is_empty(dir.path() / "d"));
  for (const char* name : {"d/4", "d/5", "d/6", "d/7", "d/8"}) {
    dir.write(name, "");
  }
  const bool said_empty = remove_contents_at(fd.get());
  EXPECT_EQ(said_empty, fs::is_empty(dir.path() / "d")) << "its answer is not the directory's";
  EXPECT_TRUE(fs::is_empty(dir.path() / "d"));
}

// Inside another tree, its /tmp is looked up in the tree: a link there
// within the tree is followed, one that climbs out by ".." is not.
TEST(ScratchDirectory, InsideATreeItsTmpIsResolvedInTheTree) {
  testing::TempDir dir;
  const fs::path root = fs::canonical(dir.path()) / "rootfs";
  fs::create_directories(root / "var/tmp");
  fs::create_symlink("var/tmp", root / "tmp");
  fs::path named;
  {
    ScratchDirectory scratch("envcontract-probe", std::nullopt, root);
    ASSERT_TRUE(scratch.ok()) << scratch.error();
    ASSERT_TRUE(scratch.write("probe.py", "print(1)\n"));
    named = scratch.file("probe.py");
    EXPECT_TRUE(named.string().starts_with("/tmp/envcontract-probe-")) << named;
    EXPECT_EQ(text_of(root / "var" / named.relative_path()), "print(1)\n");
  }
  EXPECT_TRUE(fs::is_empty(root / "var/tmp")) << "removed with the object";

  // ../../.. past the tree's "/" and on to a host directory of the tests.
  const fs::path outside = fs::canonical(dir.path()) / "outside";
  fs::create_directories(outside);
  fs::remove(root / "tmp");
  fs::create_symlink("../../../../../../../../../.." + outside.string(), root / "tmp");
  ScratchDirectory scratch("envcontract-probe", std::nullopt, root);
  EXPECT_FALSE(scratch.ok());
  EXPECT_NE(scratch.error(), "");
  EXPECT_TRUE(fs::is_empty(outside)) << "nothing made outside the tree";
}

// The FIFO is the child's user's to open; the agent's read end sees the
// end of the stream only once every writer, its own too, has closed.
TEST(ScratchDirectory, AFifoTheChildWritesIntoEndsWhenEveryWriterHasClosed) {
  REQUIRE_USER(alice, "ectest-alice");
  ScratchDirectory scratch("envcontract-test", credentials_of(*alice));
  ASSERT_TRUE(scratch.hand_over()) << scratch.error();
  auto ends = scratch.make_fifo("progress");
  ASSERT_TRUE(ends.read) << scratch.error();
  ASSERT_TRUE(ends.write) << scratch.error();
  struct stat info {};
  ASSERT_EQ(::lstat(scratch.file("progress").c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  EXPECT_EQ(info.st_uid, alice->uid);
  EXPECT_EQ(info.st_nlink, 1U);

  const std::string fifo = scratch.file("progress");
  EXPECT_TRUE(as_user(*alice, [&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    const bool ok = fd >= 0 && ::write(fd, "step 1\n", 7) == 7;
    ::close(fd);
    return ok;
  }));
  char buffer[64];
  ASSERT_EQ(::read(ends.read.get(), buffer, sizeof buffer), 7);
  EXPECT_EQ(std::string(buffer, 7), "step 1\n");
  errno = 0;
  EXPECT_EQ(::read(ends.read.get(), buffer, sizeof buffer), -1) << "the agent's writer is open";
  EXPECT_EQ(errno, EAGAIN);
  ends.write.reset();
  EXPECT_EQ(::read(ends.read.get(), buffer, sizeof buffer), 0) << "end of stream";
}

// A name already taken (a link the user planted) gets no FIFO, and what it
// points to is not opened.
TEST(ScratchDirectory, AFifoNameAlreadyTakenIsRefused) {
  testing::TempDir dir;
  const auto kept = dir.write("kept", "kept\n");
  ScratchDirectory scratch("envcontract-test", std::nullopt);
  ASSERT_TRUE(scratch.ok()) << scratch.error();
  fs::create_symlink(kept, scratch.file("progress"));
  const auto ends = scratch.make_fifo("progress");
  EXPECT_FALSE(ends.read);
  EXPECT_FALSE(ends.write);
  EXPECT_NE(scratch.error(), "");
  EXPECT_TRUE(fs::is_symlink(scratch.file("progress")));
  EXPECT_EQ(text_of(kept), "kept\n");
}

TEST(ScratchDirectory, RemoveTakesTheNameNotWhatItLeadsTo) {
  testing::TempDir dir;
  const auto kept = dir.write("kept", "kept\n");
  ScratchDirectory scratch("envcontract-test", std::nullopt);
  ASSERT_TRUE(scratch.write("input", "x"));
  fs::create_symlink(kept, scratch.file("link"));
  scratch.remove("input");
  scratch.remove("link");
  EXPECT_FALSE(fs::exists(fs::symlink_status(scratch.file("input"))));
  EXPECT_FALSE(fs::exists(fs::symlink_status(scratch.file("link"))));
  EXPECT_EQ(text_of(kept), "kept\n");
}

// A directory that could not be made does nothing at all, and says why.
TEST(ScratchDirectory, OneThatCouldNotBeMadeDoesNothing) {
  testing::TempDir dir;
  const auto absent = dir.path() / "no-such-tree";
  ScratchDirectory scratch("envcontract-test", std::nullopt, absent);
  EXPECT_FALSE(scratch.ok());
  EXPECT_NE(scratch.error(), "");
  EXPECT_FALSE(scratch.write("x", "y"));
  EXPECT_FALSE(scratch.hand_over());
  EXPECT_EQ(scratch.read("x", 1), std::nullopt);
  EXPECT_EQ(scratch.reader(), nullptr);
  const auto ends = scratch.make_fifo("f");
  EXPECT_FALSE(ends.read);
  EXPECT_FALSE(ends.write);
  EXPECT_FALSE(fs::exists(absent));
}

}  // namespace
}  // namespace envcontract::process
