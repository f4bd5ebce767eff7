// The dynamic probes of an unchanged env are reused; any change to a file
// that decides its facts probes it again, even when the facts read from files
// stay the same (docs/agent.md). A real venv copied from the demo host, real
// scans, real files touched. Each test runs twice: with the env's files read
// at every scan, and with the change watch, where an unchanged env's facts
// are kept unread, so that the same changes must be seen by the kernel's
// events instead (freshness/change_watch.hpp).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/json_text.hpp"
#include "daemon/contract_source.hpp"
#include "daemon/scanner.hpp"
#include "freshness/change_watch.hpp"
#include "report/report_json.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

namespace fs = std::filesystem;
using testing::demo_host;

class Reprobe : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      std::string why_not;
      if (!freshness::ChangeWatch::start(why_not)) {
        GTEST_SKIP() << "skipped: the kernel will not watch filesystems here: " << why_not;
      }
      m_settings.watch_changes = true;
    }
    m_prefix = m_dir.path() / "xpu210v";
    // A real copy: the test writes into it, and must not write the demo host.
    const auto copied = testing::run_command(
        {"/bin/cp", "-a", (demo_host() / "venvs/xpu210v").string(), m_prefix.string()});
    ASSERT_EQ(copied.exit_code, 0) << copied.err;
    // And a base interpreter of its own: the demo host's shares its files'
    // inodes (hard links, as conda's package cache does) with the machine's
    // Python and other tests' trees, and a link made to one of them while
    // this test runs changes its change time, which the fingerprint reads.
    const fs::path base = m_dir.path() / "python3.10";
    const auto base_copied = testing::run_command(
        {"/bin/cp", "-a", (demo_host() / "opt/python3.10").string(), base.string()});
    ASSERT_EQ(base_copied.exit_code, 0) << base_copied.err;
    std::ofstream(m_prefix / "pyvenv.cfg")
        << "home = " << (base / "bin").string()
        << "\ninclude-system-site-packages = false\nversion = 3.10.13\n";
    fs::remove(m_prefix / "bin/python3.10");
    fs::create_symlink(base / "bin/python3.10", m_prefix / "bin/python3.10");
    const auto contract = m_dir.write("contract.yaml",
                                      "schema_version: 1\nname: reprobe\nchecks:\n"
                                      "  - {id: py, kind: python, version: \"3.10\"}\n"
                                      "  - {id: torch, kind: distributions,"
                                      " pins: {torch: \"==2.10.0+cu129\"}}\n");
    auto loaded = daemon::load_contract(contract);
    ASSERT_TRUE(loaded.ok()) << loaded.error();
    m_contract = loaded.value();
    m_settings.facts.discovery.prefixes = {m_prefix};
    m_settings.reprobe_interval = std::chrono::hours(1);
  }

  // Scans once; true when the env's dynamic facts were reused.
  bool reused() {
    m_scanner.scan(*m_contract, m_settings);
    EXPECT_EQ(m_scanner.last_probed() + m_scanner.last_reused(), 1U);
    return m_scanner.last_reused() == 1;
  }

  // Scans until the watch keeps the env's facts: the first read of a newly
  // watched filesystem and the first probe's bytecode count as changes, and
  // so does what other processes do meanwhile to files the env's facts
  // were read from (tests beside this one hard-link the system libraries
  // its interpreter loads, and mount and unmount): a rescan that reads the
  // env again then is right, and the test waits for one that does not.
  void scan_until_kept() {
    for (int scan = 0; scan < 20; ++scan) {
      m_scanner.scan(*m_contract, m_settings);
      if (scan >= 1 && m_scanner.last_read() == 0) {
        return;
      }
    }
    if (m_settings.watch_changes) {
      ADD_FAILURE() << "20 rescans of an unchanged env all read it again";
    }
  }

  // The env's torch's dist-info, and one saying it is the CPU build, to
  // mount over it.
  fs::path torch_dist_info() const {
    return m_prefix / "lib/python3.10/site-packages/torch-2.10.0+cu129.dist-info";
  }
  fs::path cpu_torch_dist_info() const {
    return m_dir
        .write("other/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.10.0+cpu\n")
        .parent_path();
  }

  static void append(const fs::path& file, const std::string& text) {
    std::ofstream(file, std::ios::app | std::ios::binary) << text;
  }

  testing::TempDir m_dir;
  fs::path m_prefix;
  daemon::ContractHandle m_contract;
  daemon::ScanSettings m_settings;
  daemon::Scanner m_scanner;
};

TEST_P(Reprobe, AnUnchangedEnvIsReusedAndEachDecidingFileReprobes) {
  const fs::path site = m_prefix / "lib/python3.10/site-packages";
  EXPECT_FALSE(reused()) << "the first scan probes";
  EXPECT_TRUE(reused()) << "nothing changed";
  for (const auto& [file, text] : std::vector<std::pair<fs::path, std::string>>{
           {site / "torch/lib/libc10.so", std::string(1, '\0')},  // a library grows a byte
           {site / "torch/version.py", "# edited\n"},  // the version it reads is the same
           {site / "torch-2.10.0+cu129.dist-info/METADATA", "\n"},
       }) {
    ASSERT_TRUE(fs::exists(file)) << file;
    append(file, text);
    EXPECT_FALSE(reused()) << file << " changed, and the env was not probed again";
    EXPECT_TRUE(reused()) << "nothing changed since " << file;
  }
}

// A library rewritten in place, with its size and modification time put back
// as `tar x` or `rsync -t` leave them: only its change time tells, and it
// must.
TEST_P(Reprobe, ALibraryRewrittenWithItsOldTimesPutBackReprobes) {
  const fs::path library = m_prefix / "lib/python3.10/site-packages/torch/lib/libc10.so";
  EXPECT_FALSE(reused()) << "the first scan probes";
  EXPECT_TRUE(reused()) << "nothing changed";
  struct stat before {};
  ASSERT_EQ(::stat(library.c_str(), &before), 0);
  {
    std::fstream file(library, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(before.st_size - 1);
    file.put('\x7f');  // the last byte: the ELF headers stay readable
  }
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, library.c_str(), times, 0), 0);
  struct stat after {};
  ASSERT_EQ(::stat(library.c_str(), &after), 0);
  ASSERT_EQ(after.st_size, before.st_size);
  ASSERT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  ASSERT_EQ(after.st_ino, before.st_ino);
  EXPECT_FALSE(reused()) << "libc10.so was rewritten in place, and the env was not probed again";
}

// Parsed libraries serve one scan: none is held between scans (they made
// most of an idle agent's memory), and a rescan still judges the env's
// libraries (its facts are read, and compared, anew).
TEST_P(Reprobe, ParsedLibrariesAreNotHeldBetweenScans) {
  const auto first = m_scanner.scan(*m_contract, m_settings);
  EXPECT_EQ(m_scanner.held_libraries(), 0U);
  const auto second = m_scanner.scan(*m_contract, m_settings);
  EXPECT_EQ(m_scanner.held_libraries(), 0U);
  EXPECT_EQ(m_scanner.last_reused(), 1U);
  EXPECT_EQ(first.verdict, second.verdict);
}

// With the watch, a rescan of an unchanged env reads none of its files;
// a file changed inside the env, or outside it where its facts come from
// (the base interpreter's standard library, which a venv imports from),
// has it read again.
TEST_P(Reprobe, AnUnchangedEnvIsNotReadAgainWhileTheWatchSeesNoChange) {
  if (!GetParam()) {
    // Without the watch, every scan reads the env's files.
    for (int scan = 0; scan < 3; ++scan) {
      m_scanner.scan(*m_contract, m_settings);
      EXPECT_EQ(m_scanner.last_read(), 1U);
    }
    return;
  }
  m_scanner.scan(*m_contract, m_settings);
  EXPECT_EQ(m_scanner.last_read(), 1U);
  scan_until_kept();
  const auto kept = m_scanner.scan(*m_contract, m_settings);
  EXPECT_EQ(kept.verdict, report::Verdict::compliant);

  append(m_dir.path() / "python3.10/lib/python3.10/os.py", "\n");
  m_scanner.scan(*m_contract, m_settings);
  EXPECT_EQ(m_scanner.last_read(), 1U) << "the base interpreter's os.py changed";
  scan_until_kept();

  // A dist-info removed: the facts kept must not outlive it.
  const fs::path site = m_prefix / "lib/python3.10/site-packages";
  fs::remove_all(site / "torch-2.10.0+cu129.dist-info");
  const auto changed = m_scanner.scan(*m_contract, m_settings);
  EXPECT_EQ(m_scanner.last_read(), 1U);
  EXPECT_EQ(changed.verdict, report::Verdict::drift) << "torch is gone";
}

// conda links its package cache's files into envs: a file of the env
// rewritten in place through its other name changes the env, though no
// path of the env is named by the change.
TEST_P(Reprobe, AFileRewrittenThroughAnotherOfItsNamesIsSeen) {
  const fs::path metadata =
      m_prefix / "lib/python3.10/site-packages/torch-2.10.0+cu129.dist-info/METADATA";
  const fs::path cache = m_dir.path() / "pkgs/torch-2.10.0/METADATA";
  fs::create_directories(cache.parent_path());
  fs::create_hard_link(metadata, cache);
  scan_until_kept();

  std::string text;
  {
    std::ifstream in(cache, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto at = text.find("Version: 2.10.0+cu129");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string("Version: 2.10.0+cu129").size(), "Version: 2.10.0+cpu");
  std::ofstream(cache, std::ios::binary | std::ios::trunc) << text;  // same inode, both names
  ASSERT_EQ(fs::hard_link_count(metadata), 2U);

  const auto report = m_scanner.scan(*m_contract, m_settings);
  EXPECT_EQ(m_scanner.last_read(), 1U);
  EXPECT_EQ(report.verdict, report::Verdict::drift);
  const auto& checks = report.envs.at(0).checks;
  const auto torch =
      std::find_if(checks.begin(), checks.end(),
                   [](const report::CheckReport& check) { return check.id == "torch"; });
  ASSERT_NE(torch, checks.end());
  EXPECT_EQ(torch->actual["torch"], "2.10.0+cpu") << "the version now in its METADATA";
  ASSERT_TRUE(torch->diagnosis);
  EXPECT_EQ(torch->diagnosis->cause, "version_mismatch");
}

// A mount over part of an env shows other files at the same paths, and the
// kernel reports no change of any file for it.
TEST_P(Reprobe, AMountOverPartOfTheEnvIsSeen) {
  const fs::path dist_info = torch_dist_info();
  const fs::path other = cpu_torch_dist_info();
  scan_until_kept();
  if (::mount(other.c_str(), dist_info.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    GTEST_SKIP() << "skipped: cannot bind-mount here: " << std::strerror(errno);
  }
  struct Unmount {
    fs::path point;
    ~Unmount() { ::umount2(point.c_str(), MNT_DETACH); }
  } unmount{dist_info};

  const auto report = m_scanner.scan(*m_contract, m_settings);
  EXPECT_EQ(m_scanner.last_read(), 1U);
  EXPECT_EQ(report.verdict, report::Verdict::drift) << "another METADATA is mounted over its own";
}

// The same through a module that is one file: its interpreter runs it, and
// nothing reads it before (a package's __init__ file is read; a module's
// file is only listed). sitecustomize runs at every start.
TEST_P(Reprobe, AModuleFileRewrittenThroughAnotherOfItsNamesIsSeen) {
  const fs::path module = m_prefix / "lib/python3.10/site-packages/sitecustomize.py";
  std::ofstream(module) << "imported = True\n";
  const fs::path cache = m_dir.path() / "pkgs/site-1.0/sitecustomize.py";
  fs::create_directories(cache.parent_path());
  fs::create_hard_link(module, cache);
  scan_until_kept();
  EXPECT_TRUE(reused());

  append(cache, "raise SystemExit('broken through the package cache')\n");
  ASSERT_EQ(fs::hard_link_count(module), 2U);
  m_scanner.scan(*m_contract, m_settings);
  EXPECT_EQ(m_scanner.last_read(), 1U);
  EXPECT_EQ(m_scanner.last_probed(), 1U) << "its interpreter now exits as it starts";
}

// A mount made while an env is read and removed before the next scan: the
// next scan's mount table is the last one's, and no file changed, but what
// was read came through the mount.
TEST_P(Reprobe, FactsReadWhileAMountCameAndWentAreNotKept) {
  const fs::path dist_info = torch_dist_info();
  const fs::path other = cpu_torch_dist_info();
  scan_until_kept();
  // The env's read starts by opening its pyvenv.cfg: the mount is made then,
  // while the rest of it is read.
  const int events = ::inotify_init1(IN_CLOEXEC);
  ASSERT_GE(events, 0);
  ASSERT_GE(::inotify_add_watch(events, (m_prefix / "pyvenv.cfg").c_str(), IN_OPEN), 0);
  append(m_prefix / "lib/python3.10/site-packages/unrelated.txt", "read it again\n");
  int mounted = -1;
  std::thread mounter([&] {
    pollfd ready{events, POLLIN, 0};
    char buffer[4096];
    if (::poll(&ready, 1, 20000) > 0 && ::read(events, buffer, sizeof buffer) > 0) {
      mounted =
          ::mount(other.c_str(), dist_info.c_str(), nullptr, MS_BIND, nullptr) == 0 ? 0 : errno;
    }
  });
  m_scanner.scan(*m_contract, m_settings);
  mounter.join();
  ::close(events);
  if (mounted != 0) {
    GTEST_SKIP() << "skipped: cannot bind-mount here: " << std::strerror(mounted);
  }
  ASSERT_EQ(::umount2(dist_info.c_str(), MNT_DETACH), 0);

  // (Read again, unless the mount came only once its read was over: its
  // facts are then its own, and kept. Either way, the truth.)
  const auto report = m_scanner.scan(*m_contract, m_settings);
  EXPECT_EQ(report.verdict, report::Verdict::compliant) << "its own METADATA again: 2.10.0+cu129";
}

INSTANTIATE_TEST_SUITE_P(ReadEveryScanOrWatched, Reprobe, ::testing::Bool(),
                         [](const auto& param_info) {
                           return param_info.param ? "Watched" : "ReadEveryScan";
                         });

}  // namespace
}  // namespace envcontract
