// Promotion's link switch on a real directory: atomic, never over a real env,
// the previous target kept for rollback, and rollback going back and forth.
#include <gtest/gtest.h>

#include "provisioning/promotion.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::provisioning {
namespace {

namespace fs = std::filesystem;

TEST(Promotion, TheLinkIsSwitchedAndThePreviousTargetKept) {
  testing::TempDir dir;
  const auto a = dir.path() / "env-a";
  const auto b = dir.path() / "env-b";
  fs::create_directory(a);
  fs::create_directory(b);
  const auto link = dir.path() / "torch-fl";

  auto first = switch_link(link, a);
  ASSERT_TRUE(first) << first.error();
  EXPECT_FALSE(first->previous);
  EXPECT_EQ(link_target(link), a);
  EXPECT_FALSE(fs::exists(fs::symlink_status(previous_link_of(link))));

  auto second = switch_link(link, b);
  ASSERT_TRUE(second) << second.error();
  EXPECT_EQ(second->previous, a);
  EXPECT_EQ(link_target(link), b);
  EXPECT_EQ(link_target(previous_link_of(link)), a);
  // No temporary link is left behind.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path())) {
    ++entries;
  }
  EXPECT_EQ(entries, 4U);

  auto back = rollback_link(link);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(link_target(link), a);
  EXPECT_EQ(link_target(previous_link_of(link)), b);  // a second rollback undoes the first
  ASSERT_TRUE(rollback_link(link));
  EXPECT_EQ(link_target(link), b);
}

TEST(Promotion, ARealEnvIsNeverReplacedAndRollbackNeedsAPast) {
  testing::TempDir dir;
  const auto env = dir.path() / "torch-fl";
  fs::create_directory(env);
  fs::create_directory(dir.path() / "new");
  const auto refused = switch_link(env, dir.path() / "new");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("is a real env or file, not a link: it is never replaced"),
            std::string::npos)
      << refused.error();
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(env)));

  const auto nothing = rollback_link(dir.path() / "never-promoted");
  ASSERT_FALSE(nothing);
  EXPECT_NE(nothing.error().find("has no previous target to go back to"), std::string::npos);
}

}  // namespace
}  // namespace envcontract::provisioning
