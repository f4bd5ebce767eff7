// Whose credentials an env's code runs with, and whether the choice was
// made for a root-owned env of this host: the judge's advice for an env
// its user cannot read depends on it (docs/security.md).
#include "process/run_as.hpp"

#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/temp_dir.hpp"

namespace envcontract::process {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

TEST(RunAs, OnlyARootOwnedEnvOfTheHostIsSaidToBeOne) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "skipped: needs root, to own an env as root and run it as another user";
  }
  const passwd* nobody = ::getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  TempDir dir;
  const fs::path root_owned = dir.path() / "opt-conda";
  fs::create_directories(root_owned);
  const RunAsPolicy policy("nobody");

  const RunAs host_env = run_as_for_prefix(root_owned, policy);
  EXPECT_TRUE(host_env.for_root_owned_env) << host_env.reason;
  EXPECT_EQ(host_env.uid, nobody->pw_uid);

  // The same root-owned tree as an image's: root is the image author's
  // choice, not this host's, though the code runs as the same user.
  const RunAs image_env = run_as_for_image_env(root_owned, policy);
  EXPECT_FALSE(image_env.for_root_owned_env) << image_env.reason;
  EXPECT_EQ(image_env.uid, nobody->pw_uid);
  EXPECT_EQ(image_env.reason.rfind("an env of an image's tree", 0), 0U) << image_env.reason;

  const fs::path users = dir.path() / "home-env";
  fs::create_directories(users);
  ASSERT_EQ(::chown(users.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  const RunAs owned = run_as_for_prefix(users, policy);
  EXPECT_FALSE(owned.for_root_owned_env) << owned.reason;
  EXPECT_EQ(owned.uid, nobody->pw_uid);
}

}  // namespace
}  // namespace envcontract::process
