// process/proc_stat.cpp: /proc/PID/stat read as stat(5) numbers it, with a
// command name a process chose itself (spaces, parentheses).
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/proc_stat.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::process {
namespace {

TEST(ProcStat, FieldsAreCountedAfterTheNamesLastParenthesis) {
  testing::TempDir dir;
  // A process may name itself "a) S 1 (b": only the last ')' ends the name.
  const auto file = dir.write("stat", "4242 (a) S 1 (b) R 17 4242 4242 0 -1\n");
  const auto stat = read_proc_stat(file);
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->name, "a) S 1 (b");
  EXPECT_EQ(stat->field(3), "R");
  EXPECT_EQ(stat->field(4), "17");
  EXPECT_EQ(stat->field(8), "-1");
  EXPECT_EQ(stat->field(9), "") << "past the end";
  EXPECT_EQ(stat->field(2), "") << "fields are numbered from the state, 3";
}

TEST(ProcStat, WhatIsNotAStatLineIsNothing) {
  testing::TempDir dir;
  EXPECT_FALSE(read_proc_stat(dir.write("no-name", "4242 S 1\n")).has_value());
  EXPECT_FALSE(read_proc_stat(dir.write("backwards", "4242 )x( S 1\n")).has_value());
  EXPECT_FALSE(read_proc_stat(dir.path() / "absent").has_value());
}

TEST(ProcStat, ARealProcessHasAStartTime) {
  const auto self = read_proc_stat("/proc/self/stat");
  ASSERT_TRUE(self.has_value());
  EXPECT_EQ(self->field(3), "R") << "reading its own stat, it runs";
  EXPECT_GT(process_start_time(::getpid()), 0U);
  EXPECT_EQ(process_start_time(0), 0U);
}

// A child the process forked (same user) stands in for it; anything else
// (not its child, no child) leaves the process itself.
TEST(ProcStat, AForkedChildOrTheProcessItself) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const pid_t self = ::getpid();
  EXPECT_EQ(forked_child_or_self(self, child), child);
  EXPECT_EQ(forked_child_or_self(self, 0), self);
  EXPECT_EQ(forked_child_or_self(self, self), self);
  EXPECT_EQ(forked_child_or_self(self, 1), self) << "init is not its child";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(forked_child_or_self(self, child), self) << "gone";
}

}  // namespace
}  // namespace envcontract::process
