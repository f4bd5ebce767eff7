// The dynamic probes of an unchanged env are reused; any change to a file
// that decides its facts probes it again, even when the facts read from files
// stay the same (docs/agent.md). A real venv copied from the demo host, real
// scans, real files touched.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "daemon/contract_source.hpp"
#include "daemon/scanner.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

namespace fs = std::filesystem;
using testing::demo_host;

class Reprobe : public ::testing::Test {
 protected:
  void SetUp() override {
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
                                      "  - {id: py, kind: python, version: \"3.10\"}\n");
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

  static void append(const fs::path& file, const std::string& text) {
    std::ofstream(file, std::ios::app | std::ios::binary) << text;
  }

  testing::TempDir m_dir;
  fs::path m_prefix;
  daemon::ContractHandle m_contract;
  daemon::ScanSettings m_settings;
  daemon::Scanner m_scanner;
};

TEST_F(Reprobe, AnUnchangedEnvIsReusedAndEachDecidingFileReprobes) {
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
TEST_F(Reprobe, ALibraryRewrittenWithItsOldTimesPutBackReprobes) {
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
TEST_F(Reprobe, ParsedLibrariesAreNotHeldBetweenScans) {
  const auto first = m_scanner.scan(*m_contract, m_settings);
  EXPECT_EQ(m_scanner.held_libraries(), 0U);
  const auto second = m_scanner.scan(*m_contract, m_settings);
  EXPECT_EQ(m_scanner.held_libraries(), 0U);
  EXPECT_EQ(m_scanner.last_reused(), 1U);
  EXPECT_EQ(first["verdict"], second["verdict"]);
}

}  // namespace
}  // namespace envcontract
