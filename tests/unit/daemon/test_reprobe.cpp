// The dynamic probes of an unchanged env are reused; any change to a file
// that decides its facts probes it again, even when the facts read from files
// stay the same (docs/agent.md). A real venv copied from the demo host, real
// scans, real files touched.
#include <gtest/gtest.h>

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
