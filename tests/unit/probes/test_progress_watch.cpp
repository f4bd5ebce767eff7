// probes/progress_watch.cpp: follows a probe's progress file (which env code
// can write to as well) from a thread of its own, keeping its last text.
#include "probes/progress_watch.hpp"

#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "process/scratch_directory.hpp"

namespace envcontract::probes {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr auto k_wait = std::chrono::seconds(20);

// Waits (yielding, up to k_wait) for `done`.
bool wait_for(const std::function<bool()>& done) {
  const auto end = Clock::now() + k_wait;
  while (!done()) {
    if (Clock::now() > end) {
      return false;
    }
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

void write_file(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

// The reads of one name in a directory, as the kernel reports them: each
// open of it that is closed without writing is one read by the watch.
class ReadsSeen {
 public:
  explicit ReadsSeen(const fs::path& dir, std::string name)
      : m_fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)), m_name(std::move(name)) {
    if (m_fd >= 0) {
      ::inotify_add_watch(m_fd, dir.c_str(), IN_CLOSE_NOWRITE);
    }
  }
  ~ReadsSeen() {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
  }
  ReadsSeen(const ReadsSeen&) = delete;
  ReadsSeen& operator=(const ReadsSeen&) = delete;

  bool ok() const { return m_fd >= 0; }

  // Forgets the reads reported so far.
  void drain() {
    alignas(inotify_event) char buffer[4096];
    while (::read(m_fd, buffer, sizeof buffer) > 0) {
    }
  }

  // Waits for `count` more reads; false when they did not come within k_wait.
  bool wait(int count) {
    const auto end = Clock::now() + k_wait;
    while (count > 0) {
      const auto left = std::chrono::duration_cast<milliseconds>(end - Clock::now()).count();
      if (left <= 0) {
        return false;
      }
      pollfd ready{m_fd, POLLIN, 0};
      if (::poll(&ready, 1, static_cast<int>(left)) <= 0) {
        continue;
      }
      alignas(inotify_event) char buffer[4096];
      const ssize_t got = ::read(m_fd, buffer, sizeof buffer);
      for (ssize_t at = 0; at < got;) {
        inotify_event event{};
        std::memcpy(&event, buffer + at, sizeof event);
        const char* name = buffer + at + sizeof(inotify_event);
        if (event.len > 0 && m_name == name) {
          --count;
        }
        at += static_cast<ssize_t>(sizeof(inotify_event) + event.len);
      }
    }
    return true;
  }

 private:
  int m_fd;
  std::string m_name;
};

class ProgressWatchText : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(m_directory.ok()) << m_directory.error(); }

  fs::path file() const { return m_directory.file("progress"); }

  process::ScratchDirectory m_directory{"envcontract-test", std::nullopt};
};

// The first read is made at once, not after an interval.
TEST_F(ProgressWatchText, TheFirstReadIsMadeAtOnceNotAfterAnInterval) {
  write_file(file(), "identity\n");
  ProgressWatch watch(m_directory.reader(), "progress", 4096, std::chrono::minutes(10));
  EXPECT_TRUE(wait_for([&] { return watch.text() == "identity\n"; })) << watch.text();
}

// Whatever env code writes there is kept byte for byte: the watch reads,
// the caller judges lines.
TEST_F(ProgressWatchText, GarbageIsKeptByteForByte) {
  static constexpr char k_bytes[] = "identity\n\0\xff\xfe\r\n\x1b[2Jimports\n\n\n";
  const std::string garbage(k_bytes, sizeof k_bytes - 1);
  write_file(file(), garbage);
  ProgressWatch watch(m_directory.reader(), "progress", 4096, milliseconds(2));
  EXPECT_TRUE(wait_for([&] { return watch.text() == garbage; }));
  EXPECT_EQ(watch.text().size(), sizeof k_bytes - 1);
}

// A line being written (no newline yet) is shown as it stands, and then
// whole once the child ends it.
TEST_F(ProgressWatchText, ALineWithoutItsNewlineIsShownAsItStands) {
  write_file(file(), "identity\nimpo");
  ProgressWatch watch(m_directory.reader(), "progress", 4096, milliseconds(2));
  EXPECT_TRUE(wait_for([&] { return watch.text() == "identity\nimpo"; })) << watch.text();
  write_file(file(), "identity\nimports\n");
  EXPECT_TRUE(wait_for([&] { return watch.text() == "identity\nimports\n"; })) << watch.text();
}

// One huge line (no newline in it): only its first max_bytes are read, the
// same bytes at every read, through more than one chunk of the reader's.
TEST_F(ProgressWatchText, AHugeLineIsCutAtMaxBytes) {
  std::string huge;
  for (int i = 0; huge.size() < 3 * 1024 * 1024; ++i) {
    huge += std::to_string(i) + ',';
  }
  write_file(file(), huge);
  ReadsSeen reads(file().parent_path(), "progress");
  ASSERT_TRUE(reads.ok());
  constexpr std::size_t k_max = 100000;
  ProgressWatch watch(m_directory.reader(), "progress", k_max, milliseconds(2));
  ASSERT_TRUE(reads.wait(3));
  EXPECT_EQ(watch.text(), huge.substr(0, k_max));
}

// A shorter text replaces a longer one: nothing of the earlier is left.
TEST_F(ProgressWatchText, ATruncatedFileShowsOnlyWhatItNowHolds) {
  write_file(file(), "identity\nimports\ntorch\n");
  ProgressWatch watch(m_directory.reader(), "progress", 4096, milliseconds(2));
  EXPECT_TRUE(wait_for([&] { return watch.text() == "identity\nimports\ntorch\n"; }));
  write_file(file(), "x");
  EXPECT_TRUE(wait_for([&] { return watch.text() == "x"; })) << watch.text();
  write_file(file(), "");
  EXPECT_TRUE(wait_for([&] { return watch.text().empty(); })) << watch.text();
}

// Env code that puts something else in the file's place (a FIFO, a
// directory, a file of another user's) neither stalls the watch nor clears
// what it had read: the text stays what it last was, and a file put back is
// followed again.
TEST_F(ProgressWatchText, WhatCannotBeReadLeavesTheLastTextAndStallsNothing) {
  write_file(file(), "identity\n");
  ReadsSeen reads(file().parent_path(), "progress");
  ASSERT_TRUE(reads.ok());
  ProgressWatch watch(m_directory.reader(), "progress", 4096, milliseconds(2));
  ASSERT_TRUE(wait_for([&] { return watch.text() == "identity\n"; }));

  fs::remove(file());
  ASSERT_EQ(::mkfifo(file().c_str(), 0600), 0) << std::strerror(errno);
  reads.drain();
  // Opened (without blocking) and refused, more than once: at most one of
  // these is a read of the file begun before it went.
  ASSERT_TRUE(reads.wait(3)) << "the watch stopped reading";
  EXPECT_EQ(watch.text(), "identity\n");

  fs::remove(file());
  fs::create_directory(file());
  reads.drain();
  ASSERT_TRUE(reads.wait(3)) << "the watch stopped reading";
  EXPECT_EQ(watch.text(), "identity\n");

  fs::remove(file());
  // Made another user's before it takes the file's name: the watch never
  // sees it as root's, nor half written.
  const fs::path next = file().string() + ".new";
  write_file(next, "identity\nimports\n");
  const bool chowned = ::chown(next.c_str(), ::geteuid() + 1, static_cast<gid_t>(-1)) == 0;
  fs::rename(next, file());
  if (chowned) {
    reads.drain();
    ASSERT_TRUE(reads.wait(3)) << "the watch stopped reading";
    EXPECT_EQ(watch.text(), "identity\n") << "read a file of another user's";
    ASSERT_EQ(::chown(file().c_str(), ::geteuid(), static_cast<gid_t>(-1)), 0);
  }
  EXPECT_TRUE(wait_for([&] { return watch.text() == "identity\nimports\n"; })) << watch.text();
}

// Without a reader (no private directory) there is nothing to follow: the
// text stays empty and ending waits for nothing.
TEST_F(ProgressWatchText, WithoutAReaderTheTextIsEmptyAndEndingIsImmediate) {
  const auto started = Clock::now();
  {
    ProgressWatch watch(nullptr, "progress", 4096, milliseconds(2));
    EXPECT_EQ(watch.text(), "");
  }
  // Nothing to wait for: far below any interval (a loaded CI machine's
  // scheduling is no measure of it).
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(5));
}

// A thread waiting out a long interval is woken when the watch ends, not
// waited for until its next read.
TEST_F(ProgressWatchText, EndingWakesAThreadBetweenReads) {
  write_file(file(), "identity\n");
  auto watch = std::make_unique<ProgressWatch>(m_directory.reader(), "progress", 4096,
                                               std::chrono::minutes(10));
  ASSERT_TRUE(wait_for([&] { return watch->text() == "identity\n"; }));
  const auto started = Clock::now();
  watch.reset();
  // Not the ten minutes until its next read (the margin is for a loaded
  // machine's scheduling, not a speed target).
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(5));
}

}  // namespace
}  // namespace envcontract::probes
