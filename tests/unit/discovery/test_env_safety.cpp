// discovery/env_safety.cpp: an env whose code or imports others could write
// runs nothing. Real files with real owners and modes in a temporary tree.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "discovery/env_safety.hpp"
#include "process/user_database.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_users.hpp"

namespace envcontract::discovery {
namespace {

namespace fs = std::filesystem;

// Whoever runs the test: the env's own user.
facts::RunAs current_user() {
  facts::RunAs run_as;
  run_as.uid = ::geteuid();
  run_as.gid = ::getegid();
  const passwd* entry = ::getpwuid(run_as.uid);
  run_as.user = entry ? entry->pw_name : std::to_string(run_as.uid);
  return run_as;
}

class EnvSafety : public ::testing::Test {
 protected:
  void SetUp() override {
    m_prefix = m_dir.path() / "envs" / "e";
    m_site = m_prefix / "lib/python3.11/site-packages";
    fs::create_directories(m_site);
    for (const auto& dir :
         {m_dir.path() / "envs", m_prefix, m_prefix / "lib", m_prefix / "lib/python3.11", m_site}) {
      fs::permissions(dir, fs::perms(0755));
    }
  }

  std::vector<UnsafePath> unsafe(const facts::RunAs& run_as, bool owners_are_facts = false) {
    SafetyInputs inputs;
    inputs.prefix = m_prefix;
    inputs.site_dirs = {m_site};
    inputs.owners_are_facts = owners_are_facts;
    inputs.scan_root = owners_are_facts ? m_dir.path() : fs::path("/");
    return find_unsafe_paths(inputs, run_as);
  }

  testing::TempDir m_dir;
  fs::path m_prefix;
  fs::path m_site;
};

// The temporary tree lies under a sticky, world-writable /tmp: fine as a
// directory on the way (others cannot replace what they do not own).
TEST_F(EnvSafety, APrivateTreeUnderStickyTmpIsSafe) {
  EXPECT_TRUE(unsafe(current_user()).empty());
}

TEST_F(EnvSafety, WhatEveryoneCanWriteIsListedWithItsMode) {
  fs::permissions(m_site, fs::perms(0777));
  const auto found = unsafe(current_user());
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0].path, m_site);
  EXPECT_EQ(found[0].why, "writable by everyone");
  EXPECT_EQ(found[0].mode, 0777U);
}

// A sticky bit spares a directory on the way, never the prefix itself: code
// is loaded from it, and anyone may add a file there.
TEST_F(EnvSafety, AStickyDirectoryIsFineAsAParentOnly) {
  fs::permissions(m_dir.path() / "envs", fs::perms(01777));
  EXPECT_TRUE(unsafe(current_user()).empty());
  fs::permissions(m_prefix, fs::perms(01777));
  const auto found = unsafe(current_user());
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0].path, m_prefix);
  EXPECT_EQ(found[0].mode, 01777U);
}

// site.py runs a .pth file's import lines: one others can write is code
// others wrote, and a linked one is judged where it leads.
TEST_F(EnvSafety, PthFilesAreJudgedAndFollowed) {
  const auto pth = m_dir.write("envs/e/lib/python3.11/site-packages/a.pth", "import os\n");
  fs::permissions(pth, fs::perms(0666));
  const fs::path shared = m_dir.path() / "shared";
  fs::create_directories(shared);
  fs::permissions(shared, fs::perms(0777));
  m_dir.write("shared/b.pth", "import sys\n");
  fs::permissions(shared / "b.pth", fs::perms(0644));
  fs::create_symlink(shared / "b.pth", m_site / "b.pth");
  const auto found = unsafe(current_user());
  ASSERT_EQ(found.size(), 2U);
  EXPECT_EQ(found[0].path, pth);
  EXPECT_EQ(found[0].why, "writable by everyone");
  EXPECT_EQ(found[1].path, shared) << "the directory of what the link leads to";
}

// A path on the import path that does not exist yet is made by whoever may
// write the nearest directory that does: that one is held to the rule in
// full, sticky or not. A relative path (the current directory) is not
// judged here, and each path is listed once.
TEST_F(EnvSafety, AMissingImportPathIsJudgedByWhoCouldMakeIt) {
  const fs::path sticky = m_dir.path() / "sticky";
  fs::create_directories(sticky);
  fs::permissions(sticky, fs::perms(01777));
  const auto found = find_unsafe_import_paths(
      {sticky / "not-yet" / "deeper", sticky / "another", "relative/dir"}, {}, current_user());
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0].path, sticky);
  EXPECT_EQ(found[0].why, "writable by everyone");
  EXPECT_TRUE(find_unsafe_import_paths({m_site}, {m_site}, current_user()).empty());
}

// A file owned by someone else: that someone's code would run with the env
// user's rights. In an image tree run as a uid of its own, owners are only
// what the image's author chose; modes still count.
TEST_F(EnvSafety, AnotherOwnerIsListedUnlessOwnersAreOnlyFacts) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "giving a file to another owner needs root";
  }
  // A uid nobody has here, so that it is shown as a number.
  uid_t stranger = 54321;
  while (::getpwuid(stranger) != nullptr) {
    ++stranger;
  }
  ASSERT_EQ(::chown(m_site.c_str(), stranger, stranger), 0);
  const auto found = unsafe(current_user());
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0].path, m_site);
  EXPECT_EQ(found[0].owner, std::to_string(stranger));
  EXPECT_EQ(found[0].why,
            "owned by " + std::to_string(stranger) + ", who is neither root nor root");

  facts::RunAs own_uid = current_user();
  own_uid.own_uid = true;
  EXPECT_TRUE(unsafe(own_uid, true).empty());
  fs::permissions(m_site, fs::perms(0777));
  const auto by_mode = unsafe(own_uid, true);
  ASSERT_EQ(by_mode.size(), 1U);
  EXPECT_EQ(by_mode[0].why, "writable by everyone");
}

// A group is the user's own only when nobody else is in it, and a user
// whose primary group it is counts although /etc/group does not list them.
TEST_F(EnvSafety, AGroupSharedAsAPrimaryGroupIsNotTheUsersOwn) {
  const auto alice = testing::ensure_user("ectest-alice");
  const auto dana = testing::ensure_user("ectest-dana");
  // Erin's primary group is dana's: /etc/group lists no member of it.
  const auto erin = testing::ensure_user("ectest-erin", "ectest-dana");
  if (!alice || !dana || !erin) {
    GTEST_SKIP() << "making users needs root";
  }
  ASSERT_EQ(erin->gid, dana->gid);
  // The agent reads the user list at most once a minute: read it now, with
  // the users just made.
  ASSERT_TRUE(process::recent_users(std::chrono::seconds(0)));
  const auto as = [](const testing::User& user) {
    facts::RunAs run_as;
    run_as.uid = user.uid;
    run_as.gid = user.gid;
    run_as.user = user.name;
    return run_as;
  };
  fs::permissions(m_site, fs::perms(0775));
  testing::chown_tree(m_dir.path() / "envs", alice->uid, alice->gid);
  EXPECT_TRUE(unsafe(as(*alice)).empty()) << "alice's private group";

  testing::chown_tree(m_dir.path() / "envs", dana->uid, dana->gid);
  const auto found = unsafe(as(*dana));
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0].path, m_site);
  EXPECT_EQ(found[0].why, "writable by the group ectest-dana");
}

}  // namespace
}  // namespace envcontract::discovery
