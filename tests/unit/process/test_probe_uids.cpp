// The uids root-owned envs' code runs as: one per env, stable for the
// agent's life, never another process's (a real lock file, a real second
// process holding some of its uids).
#include "process/probe_uids.hpp"

#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <set>

#include "tests/support/background_process.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::process {
namespace {

namespace fs = std::filesystem;

// Keys no other test in this process has reserved (reservations last for
// the process's life).
std::string fresh_key(const std::string& name) {
  return "/test/" + name + "-" + std::to_string(std::random_device{}());
}

// A range of uids well apart from the default one and from any user here.
ProbeUidRange test_range(uid_t count) {
  return {0x70100000 + static_cast<uid_t>(std::random_device{}() % 4096) * 16, count};
}

TEST(ProbeUids, EachKeyKeepsItsOwnUidInTheRange) {
  testing::TempDir dir;
  const fs::path lock = dir.path() / "probe-uids.lock";
  const ProbeUidRange range = test_range(16);
  std::set<uid_t> seen;
  for (int env = 0; env < 16; ++env) {
    const std::string key = fresh_key("env" + std::to_string(env));
    const ProbeUid reserved = reserve_probe_uid(key, range, lock);
    ASSERT_EQ(reserved.problem, "");
    EXPECT_GE(reserved.uid, range.first);
    EXPECT_LT(reserved.uid, range.first + range.count);
    EXPECT_EQ(::getpwuid(reserved.uid), nullptr);
    EXPECT_TRUE(seen.insert(reserved.uid).second) << "two envs share uid " << reserved.uid;
    EXPECT_EQ(reserve_probe_uid(key, range, lock).uid, reserved.uid);
  }
  // Every uid of the range is held: the seventeenth env is told so.
  const ProbeUid none = reserve_probe_uid(fresh_key("one-too-many"), range, lock);
  EXPECT_NE(none.problem.find("no uid of its own is free"), std::string::npos) << none.problem;
}

// Another agent on the host (`envcontractd scan` beside the service) holds
// uids of the range through the same lock file: none of them is handed out.
TEST(ProbeUids, AUidAnotherProcessHoldsIsNeverHandedOut) {
  testing::TempDir dir;
  const fs::path lock = dir.path() / "probe-uids.lock";
  const fs::path ready = dir.path() / "ready";
  const ProbeUidRange range = test_range(4);
  // The other process holds the bytes of the first three uids (a uid's byte
  // is at the uid's offset in the file).
  const pid_t holder = testing::spawn_logged(
      {"/usr/bin/python3", "-c",
       "import fcntl, os, struct, sys, time\n"
       "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\n"
       "first = int(sys.argv[3])\n"
       "fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack('hhqqi', fcntl.F_WRLCK, 0, first, 3, 0))\n"
       "open(sys.argv[2], 'w').close()\n"
       "time.sleep(60)\n",
       lock.string(), ready.string(), std::to_string(range.first)},
      dir.path() / "holder.log");
  // Ended however the test ends.
  struct Reaped {
    pid_t pid;
    ~Reaped() {
      if (pid > 0) {
        ::kill(-pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
  } reaped{holder};
  for (int waited = 0; waited < 200 && !fs::exists(ready); ++waited) {
    ::usleep(50'000);
  }
  ASSERT_TRUE(fs::exists(ready)) << "the other process never took its locks";
  const ProbeUid reserved = reserve_probe_uid(fresh_key("beside"), range, lock);
  EXPECT_EQ(reserved.problem, "");
  EXPECT_EQ(reserved.uid, range.first + 3);
  const ProbeUid none = reserve_probe_uid(fresh_key("no-room"), range, lock);
  EXPECT_NE(none.problem, "");
  ::kill(-holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  reaped.pid = -1;
  // Its locks went with it.
  const ProbeUid after = reserve_probe_uid(fresh_key("after"), range, lock);
  EXPECT_EQ(after.problem, "");
  EXPECT_LT(after.uid, range.first + 3);
}

TEST(ProbeUids, ALockFileThatCannotBeMadeIsSaid) {
  const ProbeUid none =
      reserve_probe_uid(fresh_key("nowhere"), test_range(4), "/proc/no-such-dir/probe-uids.lock");
  EXPECT_NE(none.problem.find("/proc/no-such-dir/probe-uids.lock"), std::string::npos)
      << none.problem;
  EXPECT_NE(none.problem.find("run_root_envs_as"), std::string::npos) << none.problem;
}

}  // namespace
}  // namespace envcontract::process
