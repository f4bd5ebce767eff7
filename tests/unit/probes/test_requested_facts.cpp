// Facts gathered because a contract asked for them: path patterns matched
// with what the env controls taken literally, tools found as the env's user
// would find them, never as root.
#include "probes/requested_facts.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.hpp"

namespace envcontract::probes {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

TEST(RequestedFacts, WhatTheEnvControlsIsMatchedLiterally) {
  TempDir dir;
  // A prefix whose name is a glob pattern, and a variable that would match
  // everything under / if it were expanded as one.
  const auto prefix = dir.path() / "env[1]";
  fs::create_directories(prefix / "lib");
  std::ofstream(prefix / "lib/marker") << "";
  fs::create_directories(dir.path() / "env1/lib");
  std::ofstream(dir.path() / "env1/lib/marker") << "";
  facts::PathAnchors anchors;
  anchors.prefix = prefix.string();
  anchors.sites = {(prefix / "lib").string()};
  anchors.variables = {{"ROOT", "/*"}};
  const auto matched =
      match_path_patterns({"{prefix}/lib/mark*", "${ROOT}/etc/passwd", "{site}/marker"}, anchors,
                          {}, process::SystemRoot("/"));
  ASSERT_EQ(matched.size(), 3U);
  EXPECT_EQ(matched[0].matches, std::vector<std::string>{(prefix / "lib/marker").string()});
  EXPECT_TRUE(matched[1].matches.empty()) << "${ROOT} = '/*' must not glob the host";
  EXPECT_EQ(matched[2].matches, std::vector<std::string>{(prefix / "lib/marker").string()});
}

TEST(RequestedFacts, UnknownSiteDirsAndShadowedCopies) {
  TempDir dir;
  fs::create_directories(dir.path() / "base/torch/lib");
  std::ofstream(dir.path() / "base/torch/lib/libtorch_cuda.so") << "";
  facts::PathAnchors anchors;
  anchors.prefix = dir.path().string();
  // No site dirs known: {site} is not "nothing found", it is not looked in.
  const auto unknown = match_path_patterns({"{site}/torch/lib/libtorch_cuda.so"}, anchors, {},
                                           process::SystemRoot("/"));
  EXPECT_FALSE(unknown[0].error.empty());
  // A copy that an earlier entry shadows is never imported: not a match.
  anchors.sites = {(dir.path() / "base").string()};
  const auto hidden =
      match_path_patterns({"{site}/torch/lib/libtorch_cuda.so"}, anchors,
                          {(dir.path() / "base/torch").string()}, process::SystemRoot("/"));
  EXPECT_TRUE(hidden[0].error.empty());
  EXPECT_TRUE(hidden[0].matches.empty());
}

TEST(RequestedFacts, ToolsAreFoundAsTheEnvsUser) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root: tools are looked up as nobody";
  }
  TempDir dir;
  fs::permissions(dir.path(),
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                      fs::perms::others_read | fs::perms::others_exec,
                  fs::perm_options::replace);
  const auto run_as = process::run_as_user("nobody");
  ASSERT_TRUE(run_as.problem.empty()) << run_as.problem;
  for (const char* sub : {"private", "public", "dirs/smi-tool"}) {
    fs::create_directories(dir.path() / sub);
  }
  for (const char* sub : {"private/smi-tool", "public/smi-tool", "public/root-only"}) {
    std::ofstream(dir.path() / sub) << "#!/bin/sh\n";
  }
  fs::permissions(dir.path() / "private", fs::perms::owner_all, fs::perm_options::replace);
  fs::permissions(dir.path() / "public/smi-tool",
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                      fs::perms::others_read | fs::perms::others_exec,
                  fs::perm_options::replace);
  fs::permissions(dir.path() / "public/root-only", fs::perms::owner_all, fs::perm_options::replace);
  const std::string path = "relative:" + (dir.path() / "dirs").string() + ":" +
                           (dir.path() / "private").string() + ":" +
                           (dir.path() / "public").string();
  process::ReadingAs reading(run_as);
  ASSERT_TRUE(reading.ok());
  const auto tools = find_tools({"smi-tool", "root-only"}, path, run_as, process::SystemRoot("/"));
  // Not the directory of that name, not the one in root's private dir: the
  // first that nobody may run.
  EXPECT_EQ(tools[0].path, (dir.path() / "public/smi-tool").string());
  EXPECT_EQ(tools[1].path, "") << "0700 root's file is not nobody's tool";
}

// A container's root filesystem scanned with --root: what a contract names
// by absolute path, the PATH and the device nodes are the rootfs' own, and
// nothing in it (an absolute link, "..") leads back to the agent's host.
TEST(RequestedFacts, InsideARootfsPathsToolsAndDevicesAreTheRootfsOwn) {
  TempDir dir;
  const auto rootfs = dir.path() / "rootfs";
  for (const char* sub : {"etc", "usr/local/xpu/lib", "usr/bin", "dev", "opt/env/bin"}) {
    fs::create_directories(rootfs / sub);
  }
  std::ofstream(rootfs / "etc/os-release") << "ID=debian\n";
  std::ofstream(rootfs / "usr/local/xpu/lib/libbkcl.so") << "";
  std::ofstream(rootfs / "usr/bin/xpu-smi") << "#!/bin/sh\n";
  fs::permissions(rootfs / "usr/bin/xpu-smi", fs::perms::owner_all | fs::perms::others_exec,
                  fs::perm_options::replace);
  std::ofstream(rootfs / "dev/xpu0") << "";
  // The rootfs' own absolute link: /etc inside the container, not the host's.
  fs::create_directory_symlink("/etc", rootfs / "usr/local/vendor");
  ASSERT_FALSE(fs::exists("/usr/local/xpu/lib/libbkcl.so")) << "the host must not have it";
  ASSERT_TRUE(fs::exists("/etc/passwd"));
  ASSERT_TRUE(fs::exists("/bin/sh"));

  EXPECT_TRUE(process::is_system_root(rootfs));
  EXPECT_TRUE(process::is_system_root("/"));
  EXPECT_FALSE(process::is_system_root(rootfs / "opt")) << "a directory of envs is no system";
  const process::SystemRoot root(rootfs);
  ASSERT_EQ(root.error(), "");

  facts::PathAnchors anchors;
  anchors.prefix = (rootfs / "opt/env").string();
  anchors.sites = {(rootfs / "opt/env/lib").string()};
  // Activation writes host paths of the env, and the vendor's own paths.
  anchors.variables = {{"XPU_ROOT", "/usr/local/xpu"},
                       {"ENV_LIB", (rootfs / "usr/local/xpu/lib").string()}};
  const auto matched = match_path_patterns(
      {"/usr/local/xpu/lib/libbkcl*.so", "${XPU_ROOT}/lib/libbkcl.so", "${ENV_LIB}/libbkcl.so",
       "/usr/local/vendor/os-release", "/usr/local/vendor/passwd", "/../../../etc/passwd"},
      anchors, {}, root);
  ASSERT_EQ(matched.size(), 6U);
  const std::string bkcl = (rootfs / "usr/local/xpu/lib/libbkcl.so").string();
  EXPECT_EQ(matched[0].matches, std::vector<std::string>{bkcl});
  EXPECT_EQ(matched[1].matches, std::vector<std::string>{bkcl});
  EXPECT_EQ(matched[2].matches, std::vector<std::string>{bkcl});
  EXPECT_EQ(matched[3].matches,
            std::vector<std::string>{(rootfs / "usr/local/vendor/os-release").string()});
  EXPECT_TRUE(matched[4].matches.empty()) << "the link must not reach the host's /etc/passwd";
  EXPECT_TRUE(matched[5].matches.empty()) << "'..' must stay inside the rootfs";

  facts::RunAs run_as;
  run_as.uid = ::geteuid();
  run_as.gid = ::getegid();
  const auto tools = find_tools({"xpu-smi", "sh"},
                                (rootfs / "opt/env/bin").string() + ":/usr/bin:/bin", run_as, root);
  EXPECT_EQ(tools[0].path, (rootfs / "usr/bin/xpu-smi").string());
  EXPECT_EQ(tools[1].path, "") << "the host's /bin/sh is not the rootfs'";

  const auto devices = glob_device_nodes({"/dev/xpu*", "/dev/null"}, root);
  EXPECT_EQ(devices[0].matches, std::vector<std::string>{(rootfs / "dev/xpu0").string()});
  EXPECT_TRUE(devices[1].matches.empty()) << "the host's /dev/null is not the rootfs'";
}

}  // namespace
}  // namespace envcontract::probes
