// daemon/contract_detection.cpp: `contract: auto`, picked by the devices and tools under a root.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "contracts/contract_loader.hpp"
#include "daemon/contract_detection.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

using daemon::detect_contract;

std::string yaml_list(const std::vector<std::string>& items) {
  std::string list = "[";
  for (const auto& item : items) {
    list += (list.size() > 1 ? ", \"" : "\"") + item + "\"";
  }
  return list + "]";
}

// A valid contract with a detect section.
std::string contract_text(const std::string& name, const std::string& platform,
                          const std::vector<std::string>& device_nodes,
                          const std::vector<std::string>& tools = {}) {
  return "schema_version: 1\nname: " + name + "\nplatform: " + platform +
         "\ndetect:\n  device_nodes: " + yaml_list(device_nodes) +
         "\n  tools: " + yaml_list(tools) + "\nchecks:\n  - kind: python\n    version: '3.10'\n";
}

// Sets PATH for the test's length (tools are looked for on it), then puts it back.
class ScopedPath {
 public:
  explicit ScopedPath(const std::string& value) {
    if (const char* old = std::getenv("PATH")) {
      m_saved = old;
    }
    ::setenv("PATH", value.c_str(), 1);
  }
  ~ScopedPath() {
    if (m_saved) {
      ::setenv("PATH", m_saved->c_str(), 1);
    } else {
      ::unsetenv("PATH");
    }
  }
  ScopedPath(const ScopedPath&) = delete;
  ScopedPath& operator=(const ScopedPath&) = delete;

 private:
  std::optional<std::string> m_saved;
};

// A contracts dir and a host root, both empty to begin with.
class ContractAutoDetection : public ::testing::Test {
 protected:
  std::filesystem::path add_contract(const std::string& file, const std::string& text) {
    return m_contracts.write(file, text);
  }
  std::filesystem::path add_node(const std::string& relative) { return m_root.write(relative, ""); }
  std::filesystem::path add_tool(const std::string& relative, mode_t mode = 0755) {
    const auto tool = m_root.write(relative, "#!/bin/sh\n");
    ::chmod(tool.c_str(), mode);
    return tool;
  }
  common::Result<daemon::DetectedContract> detect() {
    return detect_contract(m_contracts.path(), m_root.path());
  }

  testing::TempDir m_contracts;
  testing::TempDir m_root;
};

TEST_F(ContractAutoDetection, ADeviceNodeUnderTheRootPicksItsContractAndSaysWhere) {
  const auto xpu = add_contract("xpu.yaml", contract_text("xpu", "kunlunxin", {"/dev/xpu*"}));
  add_contract("npu.yaml", contract_text("npu", "ascend", {"/dev/davinci[0-9]*"}));
  const auto node = add_node("dev/xpu0");
  const auto detected = detect();
  ASSERT_TRUE(detected.ok()) << detected.error();
  EXPECT_EQ(detected.value().file, xpu);
  EXPECT_EQ(detected.value().why, "found " + node.string());
}

// Real character devices, as a host's /dev holds them.
TEST_F(ContractAutoDetection, RealDeviceNodesAreFound) {
  add_contract("xpu.yaml", contract_text("xpu", "kunlunxin", {"/dev/xpu*"}));
  const auto npu = add_contract("npu.yaml", contract_text("npu", "ascend", {"/dev/davinci[0-9]*"}));
  std::filesystem::create_directories(m_root.path() / "dev");
  const auto node = m_root.path() / "dev/davinci0";
  if (::mknod(node.c_str(), S_IFCHR | 0600, ::makedev(1, 3)) != 0) {
    GTEST_SKIP() << "mknod: " << std::strerror(errno) << " (needs CAP_MKNOD)";
  }
  const auto detected = detect();
  ASSERT_TRUE(detected.ok()) << detected.error();
  EXPECT_EQ(detected.value().file, npu);
  EXPECT_EQ(detected.value().why, "found " + node.string());
}

// Patterns are globs: davinci[0-9]* is a numbered device, not davinci_manager.
TEST_F(ContractAutoDetection, DevicePatternsMatchAsGlobs) {
  const auto npu = add_contract("npu.yaml", contract_text("npu", "ascend", {"/dev/davinci[0-9]*"}));
  add_node("dev/davinci_manager");
  add_node("dev/xdavinci0");
  EXPECT_FALSE(detect().ok());
  add_node("dev/davinci12");
  const auto detected = detect();
  ASSERT_TRUE(detected.ok()) << detected.error();
  EXPECT_EQ(detected.value().file, npu);
}

TEST_F(ContractAutoDetection, AToolCountsOnlyWhenItIsExecutable) {
  const auto xpu =
      add_contract("xpu.yaml", contract_text("xpu", "kunlunxin", {"/dev/xpu*"}, {"xpu-smi"}));
  const auto tool = add_tool("usr/bin/xpu-smi", 0644);
  EXPECT_FALSE(detect().ok());
  ::chmod(tool.c_str(), 0755);
  const auto detected = detect();
  ASSERT_TRUE(detected.ok()) << detected.error();
  EXPECT_EQ(detected.value().file, xpu);
  EXPECT_EQ(detected.value().why, "found xpu-smi");
}

TEST_F(ContractAutoDetection, ToolsAreLookedForOnPathAndInTheUsualDirsUnderTheRoot) {
  const ScopedPath path("/opt/vendor/bin");
  const auto npu =
      add_contract("npu.yaml", contract_text("npu", "ascend", {"/dev/davinci[0-9]*"}, {"npu-smi"}));
  add_tool("opt/vendor/bin/npu-smi");
  auto detected = detect();
  ASSERT_TRUE(detected.ok()) << detected.error();
  EXPECT_EQ(detected.value().file, npu);

  const auto gcu =
      add_contract("gcu.yaml", contract_text("gcu", "enflame", {"/dev/gcu*"}, {"efsmi", "efml"}));
  add_tool("usr/local/sbin/efsmi");  // not on PATH, a usual dir
  add_tool("bin/efml");
  detected = detect();
  ASSERT_TRUE(detected.ok()) << detected.error();
  EXPECT_EQ(detected.value().file, gcu);
  EXPECT_EQ(detected.value().why, "found efsmi and efml");
}

// The host running the agent is not the host judged when the root is another.
TEST_F(ContractAutoDetection, AToolOfTheAgentsOwnHostDoesNotCountUnderAnotherRoot) {
  ASSERT_EQ(::access("/bin/sh", X_OK), 0);
  add_contract("shell.yaml", contract_text("shell", "shell", {"/dev/shell*"}, {"sh"}));
  const auto detected = detect();
  EXPECT_FALSE(detected.ok()) << detected.value().file;
}

TEST_F(ContractAutoDetection, MoreSignalsWinOverThePlatformsMainContract) {
  add_contract("kunlunxin.yaml", contract_text("kunlunxin", "kunlunxin", {"/dev/xpu*"}));
  const auto vendor = add_contract(
      "kunlunxin-vendor.yaml",
      contract_text("kunlunxin-vendor", "kunlunxin", {"/dev/xpu*", "/dev/xpuctrl"}, {"xpu-smi"}));
  const auto node = add_node("dev/xpu0");
  add_tool("usr/bin/xpu-smi");
  const auto detected = detect();
  ASSERT_TRUE(detected.ok()) << detected.error();
  EXPECT_EQ(detected.value().file, vendor);
  EXPECT_EQ(detected.value().why, "found " + node.string() + " and xpu-smi");
}

TEST_F(ContractAutoDetection, BetweenEqualsThePlatformsMainContractWins) {
  add_contract("kunlunxin-vendor.yml",
               contract_text("kunlunxin-vendor", "kunlunxin", {"/dev/xpu*"}, {"xpu-smi"}));
  const auto main = add_contract(
      "kunlunxin.yaml", contract_text("kunlunxin", "kunlunxin", {"/dev/xpu*"}, {"xpu-smi"}));
  add_contract("kunlunxin-env.yaml",
               contract_text("kunlunxin-env", "kunlunxin", {"/dev/xpu*"}, {"xpu-smi"}));
  add_node("dev/xpu0");
  add_tool("usr/bin/xpu-smi");
  const auto detected = detect();
  ASSERT_TRUE(detected.ok()) << detected.error();
  EXPECT_EQ(detected.value().file, main);
}

// Two files both claiming to be the platform's main contract: no rule picks one.
TEST_F(ContractAutoDetection, TwoMainContractsOfEqualSignalsAreAmbiguous) {
  add_contract("kunlunxin.yaml", contract_text("kunlunxin", "kunlunxin", {"/dev/xpu*"}));
  add_contract("kunlunxin-copy.yaml", contract_text("kunlunxin", "kunlunxin", {"/dev/xpu*"}));
  add_node("dev/xpu0");
  const auto detected = detect();
  ASSERT_FALSE(detected.ok()) << detected.value().file;
  EXPECT_NE(detected.error().find("kunlunxin-copy.yaml, kunlunxin.yaml"), std::string::npos)
      << detected.error();
}

// A host showing as many signals of two platforms is ambiguous, whichever
// of them has its main contract among the tied: "between equals, the
// platform's main contract" holds within one platform only.
TEST_F(ContractAutoDetection, EqualSignalsOfTwoPlatformsAreAmbiguous) {
  add_contract("kunlunxin.yaml", contract_text("kunlunxin", "kunlunxin", {"/dev/xpu*"}));
  add_contract("ascend-vendor.yaml",
               contract_text("ascend-vendor", "ascend", {"/dev/davinci[0-9]*"}));
  add_node("dev/xpu0");
  add_node("dev/davinci0");
  const auto detected = detect();
  EXPECT_FALSE(detected.ok()) << "chose " << detected.value().file
                              << " for a host with both platforms' devices";
}

TEST_F(ContractAutoDetection, NoSignalFoundNamesEverythingLookedFor) {
  add_contract("xpu.yaml", contract_text("xpu", "kunlunxin", {"/dev/xpu*"}, {"xpu-smi"}));
  add_contract("npu.yml", contract_text("npu", "ascend", {"/dev/davinci[0-9]*"}, {"npu-smi"}));
  // Not contracts by their names, though they would match.
  m_contracts.write("old.yaml.bak", contract_text("old", "old", {"/dev/null*"}));
  m_contracts.write("README", contract_text("readme", "readme", {"/dev/null*"}));
  add_node("dev/null");
  const auto detected = detect();
  ASSERT_FALSE(detected.ok()) << detected.value().file;
  for (const char* looked_for : {"/dev/xpu*", "xpu-smi", "/dev/davinci[0-9]*", "npu-smi"}) {
    EXPECT_NE(detected.error().find(looked_for), std::string::npos) << looked_for << "\n"
                                                                    << detected.error();
  }
  EXPECT_EQ(detected.error().find("/dev/null*"), std::string::npos) << detected.error();
}

TEST_F(ContractAutoDetection, ContractsWithoutADetectSectionAreNeverChosen) {
  add_contract("plain.yaml",
               "schema_version: 1\nname: plain\nchecks:\n  - kind: python\n    version: '3.10'\n");
  add_node("dev/xpu0");
  const auto detected = detect();
  ASSERT_FALSE(detected.ok()) << detected.value().file;
  EXPECT_NE(detected.error().find(m_contracts.path().string()), std::string::npos)
      << detected.error();
}

// A contract that does not load cannot be the one chosen, however many
// signals it names; the valid ones are still candidates.
TEST_F(ContractAutoDetection, BrokenContractsAreSkippedAndTheValidOnesStillChosen) {
  add_contract("broken-syntax.yaml", "name: [unclosed\ndetect: {device_nodes: ['/dev/xpu*']}\n");
  add_contract("relative-glob.yaml",
               contract_text("relative-glob", "kunlunxin", {"dev/xpu*", "/dev/xpuctrl"}));
  add_contract("unknown-kind.yaml",
               "schema_version: 1\nname: unknown-kind\nplatform: kunlunxin\n"
               "detect: {device_nodes: ['/dev/xpu*', '/dev/xpuctrl'], tools: [xpu-smi]}\n"
               "checks:\n  - kind: no-such-kind\n");
  std::filesystem::create_directories(m_contracts.path() / "a-directory.yaml");
  for (const char* broken : {"broken-syntax.yaml", "relative-glob.yaml", "unknown-kind.yaml"}) {
    ASSERT_FALSE(contracts::load_contract_file(m_contracts.path() / broken).contract) << broken;
  }
  const auto good = add_contract("good.yaml", contract_text("good", "kunlunxin", {"/dev/xpu*"}));
  add_node("dev/xpu0");
  add_node("dev/xpuctrl");
  add_tool("usr/bin/xpu-smi");
  const auto detected = detect();
  ASSERT_TRUE(detected.ok()) << detected.error();
  EXPECT_EQ(detected.value().file, good);
}

// Contracts that do not load are named in the error, with their first
// error: a typo in the platform's contract must not read as "found no
// accelerator" or "no contract has a detect section".
TEST_F(ContractAutoDetection, AMatchingContractThatDoesNotLoadIsNamedInTheError) {
  add_contract("kunlunxin.yaml",
               "schema_version: 1\nname: kunlunxin\nplatform: kunlunxin\n"
               "detect: {device_nodes: ['/dev/xpu*']}\n"
               "checks:\n  - kind: torhc\n");
  ASSERT_FALSE(contracts::load_contract_file(m_contracts.path() / "kunlunxin.yaml").contract);
  add_node("dev/xpu0");
  const auto detected = detect();
  ASSERT_FALSE(detected.ok()) << detected.value().file;
  EXPECT_NE(detected.error().find("kunlunxin.yaml"), std::string::npos) << detected.error();
}

TEST_F(ContractAutoDetection, AContractsDirThatCannotBeReadIsAnErrorNamingIt) {
  const auto missing = m_contracts.path() / "no-such-dir";
  auto detected = detect_contract(missing, m_root.path());
  ASSERT_FALSE(detected.ok()) << detected.value().file;
  EXPECT_NE(detected.error().find(missing.string()), std::string::npos) << detected.error();

  const auto file = add_contract("a-file", "");
  detected = detect_contract(file, m_root.path());
  ASSERT_FALSE(detected.ok()) << detected.value().file;
  EXPECT_NE(detected.error().find(file.string()), std::string::npos) << detected.error();
}

// Glob characters in the root's own path are not patterns: a root named
// host[1] is that directory, and its devices are found.
TEST_F(ContractAutoDetection, GlobCharactersInTheRootAreTakenLiterally) {
  const auto xpu = add_contract("xpu.yaml", contract_text("xpu", "kunlunxin", {"/dev/xpu*"}));
  const auto root = m_root.path() / "host[1]";
  std::filesystem::create_directories(root / "dev");
  m_root.write("host[1]/dev/xpu0", "");
  const auto detected = detect_contract(m_contracts.path(), root);
  ASSERT_TRUE(detected.ok()) << detected.error();
  EXPECT_EQ(detected.value().file, xpu);
}

// A tool's links are resolved inside the root: a host mounted at /host
// (detect_root: /host) whose /usr/bin/xpu-smi links to /opt/xpu/bin/xpu-smi
// is judged by its own /opt, not the agent's.
TEST_F(ContractAutoDetection, AToolLinkedAbsolutelyIsResolvedInsideTheRoot) {
  const auto xpu =
      add_contract("xpu.yaml", contract_text("xpu", "kunlunxin", {"/dev/xpu*"}, {"xpu-smi"}));
  const std::filesystem::path target = "/opt/envcontract-test-vendor/bin/xpu-smi";
  ASSERT_FALSE(std::filesystem::exists(target));  // only under the root
  add_tool(target.relative_path().string());
  std::filesystem::create_directories(m_root.path() / "usr/bin");
  std::filesystem::create_symlink(target, m_root.path() / "usr/bin/xpu-smi");
  const auto detected = detect();
  ASSERT_TRUE(detected.ok()) << detected.error();
  EXPECT_EQ(detected.value().file, xpu);
  EXPECT_EQ(detected.value().why, "found xpu-smi");
}

}  // namespace
}  // namespace envcontract
