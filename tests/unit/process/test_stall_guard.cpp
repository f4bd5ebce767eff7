// process/stall_guard.cpp: reads that may block for good run on threads of
// their own and are no longer waited for past a deadline. Real blocking: a
// FIFO that no one writes, whose open sleeps in the kernel as a read of a
// FUSE server that stopped answering does.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "process/read_dependencies.hpp"
#include "process/stall_guard.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::process {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A FIFO with no writer: opening it for reading blocks until release().
class Fifo {
 public:
  Fifo() : m_path((m_dir.path() / "fifo").string()) {
    if (::mkfifo(m_path.c_str(), 0600) != 0) {
      throw std::runtime_error("mkfifo " + m_path);
    }
  }
  // Whatever a failed test left blocked on it wakes before it goes.
  ~Fifo() {
    release();
    wait_for_blocked_readers(std::chrono::seconds(2));
    if (m_held >= 0) {
      ::close(m_held);
    }
  }
  Fifo(const Fifo&) = delete;
  Fifo& operator=(const Fifo&) = delete;

  const std::string& path() const { return m_path; }

  // Held open for reading and writing (never blocks): readers blocked in
  // open wake, and later ones do not block at all.
  void release() {
    if (m_held < 0) {
      m_held = ::open(m_path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    }
  }

 private:
  testing::TempDir m_dir;
  std::string m_path;
  int m_held = -1;
};

// What an abandoned reader saw once it woke. Shared with the work, which
// may outlive the test's frame.
struct Woke {
  std::mutex mutex;
  bool cancelled = false;
  std::string reason;
};

// Work that notes the FIFO, then blocks opening it.
std::function<void(const Cancellation&)> blocking_open(const std::string& fifo,
                                                       std::shared_ptr<Woke> woke = nullptr) {
  return [fifo, woke](const Cancellation& cancellation) {
    note_reading(fifo);
    const int fd = ::open(fifo.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
    }
    if (woke) {
      std::lock_guard lock(woke->mutex);
      woke->cancelled = cancellation.cancelled();
      woke->reason = cancellation.reason();
    }
  };
}

// Each test starts and ends with no abandoned reader, so that counts and
// waits are its own.
class StallGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    if (blocked_readers() != 0) {
      GTEST_SKIP() << "skipped: readers left by earlier tests are still blocked";
    }
  }
};

// A zero deadline: no thread, the caller's own cancellation, and what the
// work notes is a dependency of the caller's read.
TEST_F(StallGuard, AZeroDeadlineRunsTheWorkOnTheCallingThread) {
  Cancellation outside;
  outside.cancel("the agent is stopping");
  ReadDependencies dependencies;
  RecordingReads recording(dependencies);
  std::thread::id ran_on;
  const Cancellation* given = nullptr;
  const auto stall = run_bounded("zero", "zero", 0ms, &outside, [&](const Cancellation& c) {
    ran_on = std::this_thread::get_id();
    given = &c;
    note_reading("/zero/deadline/read");
  });
  EXPECT_FALSE(stall.has_value());
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(given, &outside);
  EXPECT_TRUE(dependencies.paths.contains("/zero/deadline/read"));

  bool never_cancelled = false;
  run_bounded("zero", "zero", 0ms, nullptr,
              [&](const Cancellation& c) { never_cancelled = !c.cancelled(); });
  EXPECT_TRUE(never_cancelled) << "without an outside cancellation, one that never ends";
}

// Work that finishes in time ran elsewhere (its reads are not the
// caller's), is no stall, and its exception reaches the caller.
TEST_F(StallGuard, WorkDoneInTimeIsNoStallAndItsExceptionReachesTheCaller) {
  ReadDependencies dependencies;
  RecordingReads recording(dependencies);
  auto ran_on = std::make_shared<std::thread::id>();
  const auto stall = run_bounded("in-time", "in time", 2s, nullptr, [ran_on](const Cancellation&) {
    *ran_on = std::this_thread::get_id();
    note_reading("/worker/read");
  });
  EXPECT_FALSE(stall.has_value());
  EXPECT_NE(*ran_on, std::this_thread::get_id());
  EXPECT_TRUE(dependencies.paths.empty()) << "the worker's own thread, not the caller's";

  EXPECT_THROW(run_bounded("in-time", "in time", 2s, nullptr,
                           [](const Cancellation&) { throw std::invalid_argument("bad env"); }),
               std::invalid_argument);
  EXPECT_EQ(blocked_readers(), 0U);
}

// Past its deadline a reader asleep in the kernel is left behind, counted,
// and described: what it read last, the call it sleeps in. Once it wakes,
// its cancellation says why it was no longer waited for.
TEST_F(StallGuard, ABlockedReaderIsLeftBehindAtItsDeadlineAndNamed) {
  Fifo fifo;
  auto woke = std::make_shared<Woke>();
  const auto start = Clock::now();
  // A deadline long enough for the reader to be asleep in openat by then,
  // however loaded the machine.
  const auto stall = run_bounded("blocked", "the facts of env x", 1500ms, nullptr,
                                 blocking_open(fifo.path(), woke));
  const auto waited = Clock::now() - start;
  ASSERT_TRUE(stall.has_value());
  EXPECT_GE(waited, 1500ms);
  EXPECT_LT(waited, 10s);
  EXPECT_EQ(stall->what, "the facts of env x");
  EXPECT_EQ(stall->deadline, 1500ms);
  EXPECT_EQ(stall->last_path, fifo.path());
  EXPECT_EQ(stall->system_call, "openat");
  EXPECT_NE(stall->kernel_wait, "") << "where in the kernel it sleeps";
  EXPECT_FALSE(stall->running) << "asleep, not working";
  EXPECT_FALSE(stall->from_earlier);
  EXPECT_FALSE(stall->too_many);
  EXPECT_EQ(stall->cut_short, "");
  EXPECT_FALSE(stall->since.empty());
  EXPECT_EQ(blocked_readers(), 1U);
  EXPECT_FALSE(wait_for_blocked_readers(20ms)) << "it is still blocked";

  fifo.release();
  ASSERT_TRUE(wait_for_blocked_readers(20s));
  EXPECT_EQ(blocked_readers(), 0U);
  std::lock_guard lock(woke->mutex);
  EXPECT_TRUE(woke->cancelled);
  EXPECT_EQ(woke->reason, stall->message());
}

// A stuck filesystem costs one thread, not one per scan: while a unit's
// reader is blocked the unit is not started again, and it is said since
// when; other units run. Once the reader returns, the unit runs again.
TEST_F(StallGuard, AUnitWhoseReaderIsBlockedIsNotStartedAgain) {
  Fifo fifo;
  const auto first = run_bounded("unit-a", "env a", 1500ms, nullptr, blocking_open(fifo.path()));
  ASSERT_TRUE(first.has_value());

  auto ran = std::make_shared<std::atomic<bool>>(false);
  const auto start = Clock::now();
  const auto again = run_bounded("unit-a", "env a, next scan", 20s, nullptr,
                                 [ran](const Cancellation&) { *ran = true; });
  EXPECT_LT(Clock::now() - start, 5s) << "not waited for either";
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(again->from_earlier);
  EXPECT_EQ(again->what, "env a, next scan");
  EXPECT_EQ(again->since, first->since);
  EXPECT_EQ(again->last_path, fifo.path());
  EXPECT_EQ(again->system_call, "openat");
  EXPECT_FALSE(*ran);
  EXPECT_EQ(blocked_readers(), 1U);

  auto other_ran = std::make_shared<std::atomic<bool>>(false);
  EXPECT_FALSE(run_bounded("unit-b", "env b", 1s, nullptr, [other_ran](const Cancellation&) {
                 *other_ran = true;
               }).has_value());
  EXPECT_TRUE(*other_ran);

  fifo.release();
  ASSERT_TRUE(wait_for_blocked_readers(20s));
  EXPECT_FALSE(run_bounded("unit-a", "env a", 1s, nullptr, [ran](const Cancellation&) {
                 *ran = true;
               }).has_value());
  EXPECT_TRUE(*ran) << "started again once its reader returned";
}

// A reader still running at its deadline (a huge env, a slow disk) is
// said to be working, not stuck in a call.
TEST_F(StallGuard, AReaderStillRunningIsSaidToBeSlowNotStuck) {
  auto stop = std::make_shared<std::atomic<bool>>(false);
  const auto stall =
      run_bounded("running", "a large env", 100ms, nullptr, [stop](const Cancellation&) {
        while (!stop->load()) {
        }
      });
  stop->store(true);
  ASSERT_TRUE(stall.has_value());
  EXPECT_TRUE(stall->running);
  EXPECT_EQ(stall->system_call, "");
  EXPECT_TRUE(wait_for_blocked_readers(20s));
}

// The scan is cancelled while its reader is asleep in the kernel: the
// reader is waited for only the grace, not the rest of its deadline, and
// the stall says why.
TEST_F(StallGuard, ACancelledScanWaitsForABlockedReaderOnlyItsGrace) {
  Fifo fifo;
  auto outside = std::make_shared<Cancellation>();
  const auto block = blocking_open(fifo.path());
  const auto start = Clock::now();
  // The work cancels the scan itself just before it blocks: no race with
  // a thread of the test's.
  const auto stall = run_bounded(
      "cut", "env c", 20s, outside.get(),
      [outside, block](const Cancellation& c) {
        outside->cancel("the agent is stopping");
        block(c);
      },
      100ms);
  const auto waited = Clock::now() - start;
  ASSERT_TRUE(stall.has_value());
  EXPECT_LT(waited, 2s) << "the 20 s deadline was waited out";
  EXPECT_EQ(stall->cut_short, "the agent is stopping");
  EXPECT_EQ(blocked_readers(), 1U) << "still left behind, and counted";
  fifo.release();
  EXPECT_TRUE(wait_for_blocked_readers(20s));
}

// Work that honours its cancellation stops when the scan is cancelled,
// told the scan's reason, and that is no stall.
TEST_F(StallGuard, WorkThatHonoursTheCancellationStopsAndIsNoStall) {
  Cancellation outside;
  outside.cancel("the scan overran");
  auto told = std::make_shared<std::string>();
  const auto start = Clock::now();
  const auto stall = run_bounded("honours", "env h", 20s, &outside, [told](const Cancellation& c) {
    while (!c.cancelled()) {
      std::this_thread::yield();
    }
    *told = c.reason();
  });
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_FALSE(stall.has_value());
  EXPECT_EQ(*told, "the scan overran");
}

// Each blocked reader keeps a thread: past the bound, no more units are
// started at all, whatever their key, until readers return.
TEST_F(StallGuard, PastTheBoundOfBlockedReadersNothingMoreIsStarted) {
  Fifo fifo;
  std::vector<std::thread> scans;
  for (std::size_t i = 0; i < facts::k_max_blocked_readers; ++i) {
    // Side by side: one after the other, each would wait its deadline.
    scans.emplace_back([&fifo, i] {
      run_bounded("bound-" + std::to_string(i), "env", 100ms, nullptr, blocking_open(fifo.path()));
    });
  }
  for (auto& scan : scans) {
    scan.join();
  }
  EXPECT_EQ(blocked_readers(), facts::k_max_blocked_readers);
  auto ran = std::make_shared<std::atomic<bool>>(false);
  const auto refused =
      run_bounded("bound-new", "env n", 1s, nullptr, [ran](const Cancellation&) { *ran = true; });
  ASSERT_TRUE(refused.has_value());
  EXPECT_TRUE(refused->too_many);
  EXPECT_FALSE(*ran);
  fifo.release();
  EXPECT_TRUE(wait_for_blocked_readers(20s));
}

}  // namespace
}  // namespace envcontract::process
