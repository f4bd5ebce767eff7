// Starting a child in its cgroup from its first instruction (clone3), and
// by a plain fork where the kernel refuses, against real processes.
#include "process/spawn.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>

#include "process/containment.hpp"

namespace envcontract::process {
namespace {

// Tells the test, through a pipe, what the child was told: 'c' started in
// its cgroup, 'f' not (async-signal-safe: a write).
class Telling final : public ChildPreparation {
 public:
  explicit Telling(int fd) : m_fd(fd) {}
  void prepare(bool in_cgroup) const override {
    [[maybe_unused]] auto ignored = ::write(m_fd, in_cgroup ? "c" : "f", 1);
  }

 private:
  int m_fd;
};

class Nothing final : public ChildPreparation {
 public:
  void prepare(bool) const override {}
};

class EndingWith final : public ChildPreparation {
 public:
  explicit EndingWith(int status) : m_status(status) {}
  void prepare(bool) const override { ::_exit(m_status); }

 private:
  int m_status;
};

struct Pipe {
  Pipe() { EXPECT_EQ(::pipe2(ends, O_CLOEXEC), 0); }
  ~Pipe() {
    close_write();
    ::close(ends[0]);
  }
  void close_write() {
    if (ends[1] >= 0) {
      ::close(ends[1]);
      ends[1] = -1;
    }
  }
  std::string read_all() {
    close_write();
    std::string text;
    char buffer[4096];
    ssize_t got = 0;
    while ((got = ::read(ends[0], buffer, sizeof buffer)) > 0) {
      text.append(buffer, static_cast<std::size_t>(got));
    }
    return text;
  }
  int ends[2] = {-1, -1};
};

int exit_status_of(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(SpawnProcess, StartsTheChildInTheCgroupItIsGiven) {
  const auto cgroup = ProbeCgroup::create({});
  if (!cgroup || cgroup->start_dir() < 0) {
    GTEST_SKIP() << "no cgroup v2 this process may make here: " << containment_description();
  }
  Pipe out;
  Pipe told;
  const auto spawned = spawn_process({"/bin/cat", "/proc/self/cgroup"}, {"PATH=/usr/bin:/bin"},
                                     ChildStdio{STDIN_FILENO, out.ends[1], STDERR_FILENO},
                                     cgroup->start_dir(), Telling(told.ends[1]));
  ASSERT_GT(spawned.pid, 0) << spawned.error;
  EXPECT_TRUE(spawned.in_cgroup);
  const std::string text = out.read_all();
  EXPECT_EQ(exit_status_of(spawned.pid), 0);
  EXPECT_EQ(told.read_all(), "c");
  // The v2 line ("0::PATH") names the probe's cgroup, made for this process.
  const auto v2 = text.find("0::");
  ASSERT_NE(v2, std::string::npos) << text;
  const std::string line = text.substr(v2, text.find('\n', v2) - v2);
  EXPECT_NE(line.find("/probe-" + std::to_string(::getpid()) + "-"), std::string::npos) << line;
}

TEST(SpawnProcess, ForksWhereTheKernelRefusesTheCgroup) {
  // Not a cgroup's directory: clone3 refuses it, and the child must join
  // by itself (the preparation is told so).
  const int not_a_cgroup = ::open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(not_a_cgroup, 0);
  Pipe told;
  const auto spawned =
      spawn_process({"/bin/true"}, {}, ChildStdio{STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO},
                    not_a_cgroup, Telling(told.ends[1]));
  ::close(not_a_cgroup);
  ASSERT_GT(spawned.pid, 0) << spawned.error;
  EXPECT_FALSE(spawned.in_cgroup);
  EXPECT_EQ(exit_status_of(spawned.pid), 0);
  EXPECT_EQ(told.read_all(), "f");
}

TEST(SpawnProcess, SaysWhyAProgramCannotRun) {
  const auto spawned =
      spawn_process({"/nonexistent/python", "-c", "pass"}, {},
                    ChildStdio{STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}, -1, EndingWith(99));
  // The preparation ran first and ended the child: its status, not a failure to start.
  ASSERT_GT(spawned.pid, 0) << spawned.error;
  EXPECT_EQ(exit_status_of(spawned.pid), 99);
  EXPECT_FALSE(start_failure(spawned.start_report));

  Pipe told;
  const auto missing = spawn_process({"/nonexistent/python"}, {},
                                     ChildStdio{STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}, -1,
                                     Telling(told.ends[1]));
  // The child exists; only it can tell that its program never ran.
  ASSERT_GT(missing.pid, 0) << missing.error;
  EXPECT_EQ(exit_status_of(missing.pid), 127);
  const auto failure = start_failure(missing.start_report);
  ASSERT_TRUE(failure);
  EXPECT_EQ(describe(*failure, "/nonexistent/python"),
            "/nonexistent/python: No such file or directory");
  EXPECT_EQ(told.read_all(), "f");

  // A program that ran reports nothing, even though it exited with the same status.
  const auto ran =
      spawn_process({"/bin/sh", "-c", "exit 127"}, {},
                    ChildStdio{STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}, -1, Nothing());
  ASSERT_GT(ran.pid, 0) << ran.error;
  EXPECT_EQ(exit_status_of(ran.pid), 127);
  EXPECT_FALSE(start_failure(ran.start_report));
}

// The spawner returns at once, not when the program starts: a child that
// blocks before execve (here its preparation sleeps, as a chdir into a
// filesystem that never answers would block) does not hold up the caller,
// who bounds it.
TEST(SpawnProcess, ReturnsBeforeTheProgramRuns) {
  class Sleeping final : public ChildPreparation {
   public:
    void prepare(bool) const override { ::sleep(3); }
  };
  const auto started = std::chrono::steady_clock::now();
  const auto spawned = spawn_process(
      {"/bin/true"}, {}, ChildStdio{STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}, -1, Sleeping());
  ASSERT_GT(spawned.pid, 0) << spawned.error;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  EXPECT_FALSE(start_failure(spawned.start_report));  // nothing yet, and no wait for it
  EXPECT_TRUE(still_starting(spawned.start_report));
  ::kill(spawned.pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(spawned.pid, &status, 0), spawned.pid);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_FALSE(start_failure(spawned.start_report));
  EXPECT_FALSE(still_starting(spawned.start_report));  // ended
}

TEST(SpawnProcess, PassesArgumentsAndEnvironmentAsGiven) {
  Pipe out;
  const auto spawned = spawn_process(
      {"/bin/sh", "-c", "printf '%s|%s|%s|%s' \"$1\" \"$GREETING\" \"$#\" \"${EMPTY-unset}\"", "sh",
       "two words", ""},
      {"GREETING=hello world", "EMPTY="}, ChildStdio{STDIN_FILENO, out.ends[1], STDERR_FILENO}, -1,
      Nothing());
  ASSERT_GT(spawned.pid, 0) << spawned.error;
  EXPECT_EQ(out.read_all(), "two words|hello world|2|");
  EXPECT_EQ(exit_status_of(spawned.pid), 0);
}

}  // namespace
}  // namespace envcontract::process
