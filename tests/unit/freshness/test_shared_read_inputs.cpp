// What every env's read of a scan shares (the mount table, the loader's
// cache) changing while envs are read: facts read then are not kept
// (freshness/kept_facts.hpp). Real mounts and real renames, each test in a
// child process with a mount namespace of its own, so that the mounts other
// tests make meanwhile are not its changes.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>

#include "freshness/kept_facts.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::freshness {
namespace {

namespace fs = std::filesystem;

constexpr int k_no_namespace = 77;

// Runs `body` in a forked child whose mounts are its own (none propagate
// in or out): its exit status, k_no_namespace where that cannot be had.
int in_own_mount_namespace(const std::function<int()>& body) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::alarm(20);  // a lock held by another thread at the fork cannot hang the suite
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      ::_exit(k_no_namespace);
    }
    // Whatever happens, the child ends here: never in the rest of the suite.
    try {
      ::_exit(body());
    } catch (...) {
      ::_exit(98);
    }
  }
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child || !WIFEXITED(status)) {
    return -1;
  }
  return WEXITSTATUS(status);
}

TEST(SharedReadInputs, NothingChangedSaysNothing) {
  testing::TempDir dir;
  const auto cache = dir.write("ld.so.cache", "glibc-ld.so.cache1.1");
  const int status = in_own_mount_namespace([&] {
    SharedReadInputs inputs(cache.string());
    return inputs.changed().empty() && inputs.changed().empty() ? 0 : 5;
  });
  if (status == k_no_namespace) {
    GTEST_SKIP() << "skipped: no mount namespace of its own here";
  }
  EXPECT_EQ(status, 0) << "5: a change was told where none was made; 98: it threw";
}

// ldconfig writes a new cache beside the old and renames it over.
TEST(SharedReadInputs, TheLoadersCacheReplacedIsAChange) {
  testing::TempDir dir;
  const auto cache = dir.write("ld.so.cache", "glibc-ld.so.cache1.1");
  const auto next = dir.write("ld.so.cache~", "glibc-ld.so.cache1.1");  // the same bytes
  const int status = in_own_mount_namespace([&] {
    SharedReadInputs inputs(cache.string());
    if (::rename(next.c_str(), cache.c_str()) != 0) {
      return 3;
    }
    return inputs.changed() == cache.string() + " changed while it was read" ? 0 : 5;
  });
  if (status == k_no_namespace) {
    GTEST_SKIP() << "skipped: no mount namespace of its own here";
  }
  EXPECT_EQ(status, 0) << "3: cannot rename; 5: the new cache was not told; 98: it threw";
}

// A mount made and removed again before anyone looks leaves the table as it
// was: the change is still told, and stays told.
TEST(SharedReadInputs, AMountMadeAndRemovedIsAChange) {
  testing::TempDir dir;
  const auto cache = dir.write("ld.so.cache", "glibc-ld.so.cache1.1");
  const auto point = dir.path() / "point";
  fs::create_directories(point);
  const int status = in_own_mount_namespace([&] {
    SharedReadInputs inputs(cache.string());
    if (!inputs.changed().empty()) {
      return 4;
    }
    if (::mount(dir.path().c_str(), point.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
        ::umount2(point.c_str(), MNT_DETACH) != 0) {
      return 3;
    }
    const std::string told = "a mount was made or removed while it was read";
    return inputs.changed() == told && inputs.changed() == told ? 0 : 5;
  });
  if (status == k_no_namespace || status == 3) {
    GTEST_SKIP() << "skipped: cannot mount in a namespace of its own here";
  }
  EXPECT_EQ(status, 0) << "4: a change told before any; 5: the mount was not told; 98: it threw";
}

}  // namespace
}  // namespace envcontract::freshness
