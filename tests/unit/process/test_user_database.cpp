// process/user_database.cpp: the whole user list, read under one lock.
#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "process/user_database.hpp"

namespace envcontract::process {
namespace {

TEST(UserDatabase, ListsRootAndWhoeverRunsTheTest) {
  const auto users = all_users();
  ASSERT_TRUE(users.has_value());
  bool root = false;
  bool self = false;
  for (const auto& user : *users) {
    root = root || (user.uid == 0 && user.name == "root" && user.gid == 0);
    self = self || user.uid == ::geteuid();
  }
  EXPECT_TRUE(root);
  EXPECT_TRUE(self);
}

// glibc keeps one cursor for every walk of the process: walks side by side
// take turns and each sees the whole list.
TEST(UserDatabase, WalksSideBySideEachSeeTheWholeList) {
  const auto expected = all_users();
  ASSERT_TRUE(expected.has_value());
  std::vector<std::size_t> seen(8, 0);
  std::vector<std::thread> walkers;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    walkers.emplace_back([&seen, i] {
      for (int round = 0; round < 20; ++round) {
        const auto users = all_users();
        seen[i] = users ? users->size() : 0;
        if (seen[i] == 0) {
          return;
        }
      }
    });
  }
  for (auto& walker : walkers) {
    walker.join();
  }
  for (const std::size_t count : seen) {
    EXPECT_EQ(count, expected->size());
  }
}

TEST(UserDatabase, ARecentListIsSharedUntilItIsOld) {
  const auto fresh = recent_users(std::chrono::seconds(0));
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(recent_users(std::chrono::hours(1)), fresh) << "the same list, not read again";
  EXPECT_NE(recent_users(std::chrono::seconds(0)), fresh) << "read again when too old";
}

}  // namespace
}  // namespace envcontract::process
