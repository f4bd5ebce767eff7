// Hang diagnosis gives an env's owner no reach beyond their own
// (docs/security.md): eu-stack runs as the owner with CAP_SYS_PTRACE alone,
// and follows no debug link to a file the owner placed beside a library.
// Real users, a real hung process, real eu-stack.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "probes/hang_diagnosis.hpp"
#include "process/process_runner.hpp"
#include "tests/support/background_process.hpp"
#include "tests/support/compile.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_users.hpp"

namespace envcontract::probes {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* k_eu_stack = "/usr/bin/eu-stack";

std::optional<testing::User> test_user_or_skip_reason(std::string& reason) {
  if (::geteuid() != 0) {
    reason = "needs root, to run the hung process and the sampler as another user";
    return std::nullopt;
  }
  if (::access(k_eu_stack, X_OK) != 0) {
    reason = "eu-stack is not installed (apt install elfutils)";
    return std::nullopt;
  }
  auto user = testing::ensure_user("ectest-alice");
  if (!user) {
    reason = "useradd could not make ectest-alice";
  }
  return user;
}

// The sampler's credentials: the owner's uid, gid and no groups, with
// CAP_SYS_PTRACE (bit 19) alone in every set, and no_new_privs.
TEST(HangDiagnosisReach, TheStackSamplerHoldsOnlyCapSysPtraceAsTheOwner) {
  std::string skip;
  const auto alice = test_user_or_skip_reason(skip);
  if (!alice) {
    GTEST_SKIP() << "skipped: " << skip;
  }
  const auto own =
      testing::status_fields(testing::run_command({"/bin/cat", "/proc/self/status"}).out);
  if ((std::stoull(own.at("CapEff"), nullptr, 16) & (1ULL << 19)) == 0) {
    GTEST_SKIP() << "skipped: this root holds no CAP_SYS_PTRACE to hand on (a container's root)";
  }
  process::ProcessSpec spec;
  spec.argv = {"/bin/cat", "/proc/self/status"};
  spec.credentials = process::Credentials{alice->uid, alice->gid, {}};
  spec.credentials->keep_ptrace = true;
  const auto result = process::run_process(spec, process::ProcessLimits{});
  ASSERT_TRUE(result.succeeded()) << result.describe() << result.err;
  auto lines = testing::status_fields(result.out);
  const std::string uid = std::to_string(alice->uid);
  EXPECT_EQ(lines["Uid"], uid + "\t" + uid + "\t" + uid + "\t" + uid);
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
    EXPECT_EQ(lines[set], "0000000000080000") << set;
  }
  EXPECT_EQ(lines["NoNewPrivs"], "1");
  EXPECT_EQ(lines["Groups"], "");
}

// Kills the process group it holds when the test ends, however it ends.
struct KilledAtEnd {
  pid_t pid = -1;
  ~KilledAtEnd() {
    if (pid > 0) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

// A library whose .gnu_debuglink names `debug_name` and whose own symbol
// table is stripped, so a stack sampler goes looking for that file.
void build_with_debuglink(const fs::path& library, const std::string& source,
                          const std::string& debug_name, const fs::path& staging) {
  testing::build_shared_library(library, source);
  // objcopy reads a file of the link's name to checksum it: a harmless one
  // elsewhere, since only its base name is recorded.
  fs::create_directories(staging);
  std::ofstream(staging / debug_name) << "not debug information\n";
  for (const auto& step :
       {std::vector<std::string>{"/usr/bin/objcopy", "--strip-unneeded", library.string()},
        std::vector<std::string>{"/usr/bin/objcopy",
                                 "--add-gnu-debuglink=" + (staging / debug_name).string(),
                                 library.string()}}) {
    const auto done = testing::run_command(step);
    ASSERT_EQ(done.exit_code, 0) << done.err;
  }
}

// An env's owner points the debug links of the libraries a hung process
// loads at root's private file, a FIFO nobody writes to and a device node.
// Sampled as root, eu-stack opened all three (the FIFO blocked it until its
// time-out). Now it opens none, and still names the spinning function.
TEST(HangDiagnosisReach, TheStackSamplerOpensNoFileTheOwnerPlacedForIt) {
  std::string skip;
  const auto alice = test_user_or_skip_reason(skip);
  if (!alice) {
    GTEST_SKIP() << "skipped: " << skip;
  }
  testing::TempDir dir;
  fs::permissions(dir.path(), fs::perms::all);  // the hung process writes `ready` here
  const fs::path lib = dir.path() / "env" / "lib";
  const fs::path staging = dir.path() / "staging";
  build_with_debuglink(lib / "libec_spin.so",
                       "void ec_spin(void) { for (volatile unsigned long i = 0;; ++i) {} }\n",
                       "ec_secret.debug", staging);
  build_with_debuglink(lib / "libec_fifo.so",
                       "#include <unistd.h>\nvoid ec_wait_fifo(void) { for (;;) pause(); }\n",
                       "ec_fifo.debug", staging);
  build_with_debuglink(lib / "libec_readable.so",
                       "#include <unistd.h>\nvoid ec_wait_readable(void) { for (;;) pause(); }\n",
                       "ec_readable.debug", staging);
  build_with_debuglink(lib / "libec_device.so",
                       "#include <unistd.h>\nvoid ec_wait_device(void) { for (;;) pause(); }\n",
                       "ec_device.debug", staging);
  testing::chown_tree(dir.path() / "env", alice->uid, alice->gid);

  // Root's private file, a FIFO of the owner's, a device node (the null
  // device: harmless if opened, as /dev/watchdog would not be).
  const fs::path secret = lib / "ec_secret.debug";
  const fs::path fifo = lib / "ec_fifo.debug";
  const fs::path device = lib / "ec_device.debug";
  // And a file the owner may read, which only the sampler's debug directory
  // keeps it from opening (the owner's rights alone would not).
  const fs::path readable = lib / "ec_readable.debug";
  std::ofstream(readable) << "the owner's own\n";
  ASSERT_EQ(::chown(readable.c_str(), alice->uid, alice->gid), 0);
  std::ofstream(secret) << "root's secret\n";
  ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(::chown(fifo.c_str(), alice->uid, alice->gid), 0);
  ASSERT_EQ(::mknod(device.c_str(), S_IFCHR | 0600, ::makedev(1, 3)), 0);

  const fs::path ready = dir.path() / "ready";
  const fs::path script = dir.path() / "hang.py";
  std::ofstream(script)
      << "import ctypes, threading\n"
      << "lib = '" << lib.string() << "/'\n"
      << "fifo = ctypes.CDLL(lib + 'libec_fifo.so')\n"
      << "device = ctypes.CDLL(lib + 'libec_device.so')\n"
      << "readable = ctypes.CDLL(lib + 'libec_readable.so')\n"
      << "spin = ctypes.CDLL(lib + 'libec_spin.so')\n"
      << "threading.Thread(target=fifo.ec_wait_fifo, daemon=True).start()\n"
      << "threading.Thread(target=device.ec_wait_device, daemon=True).start()\n"
      << "threading.Thread(target=readable.ec_wait_readable, daemon=True).start()\n"
      << "open('" << ready.string() << "', 'w').close()\n"
      << "spin.ec_spin()\n";
  KilledAtEnd hung;
  hung.pid = testing::spawn_logged({"/usr/bin/setpriv", "--reuid=" + std::to_string(alice->uid),
                                    "--regid=" + std::to_string(alice->gid), "--clear-groups",
                                    "/usr/bin/python3", script.string()},
                                   dir.path() / "hang.log");
  for (int waited = 0; waited < 200 && !fs::exists(ready); ++waited) {
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(fs::exists(ready))
      << "the hung process never started: "
      << testing::run_command({"/bin/cat", (dir.path() / "hang.log").string()}).out;

  const int watch = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(watch, 0);
  for (const auto& decoy : {secret, fifo, device, readable}) {
    ASSERT_GE(::inotify_add_watch(watch, decoy.c_str(), IN_OPEN | IN_ACCESS), 0) << decoy;
  }

  const auto diagnosis =
      diagnose_hang(hung.pid, {}, process::Credentials{alice->uid, alice->gid, {}}, 300ms);

  std::array<char, 4096> events{};
  const auto read = ::read(watch, events.data(), events.size());
  const int read_error = errno;
  ::close(watch);
  EXPECT_EQ(read, -1) << "the sampler opened a file the env's owner placed for it";
  EXPECT_EQ(read_error, EAGAIN);

  EXPECT_EQ(diagnosis.classification, "spin") << diagnosis.summary;
  ASSERT_FALSE(diagnosis.native_stack.empty()) << diagnosis.native_stack_problem;
  EXPECT_EQ(diagnosis.native_stack[0].function, "ec_spin");
  EXPECT_EQ(diagnosis.native_stack[0].library, "libec_spin.so");
  EXPECT_NE(diagnosis.summary.find("in ec_spin (libec_spin.so)"), std::string::npos)
      << diagnosis.summary;
}

}  // namespace
}  // namespace envcontract::probes
