// process/cancellation.cpp: ends a scan's work early, and keeps the first
// reason it was given.
#include "process/cancellation.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace envcontract::process {
namespace {

TEST(Cancellation, NotCancelledAndWithoutReasonUntilAsked) {
  const Cancellation cancellation;
  EXPECT_FALSE(cancellation.cancelled());
  EXPECT_EQ(cancellation.reason(), "");
}

TEST(Cancellation, CancelledWithTheReasonGiven) {
  Cancellation cancellation;
  cancellation.cancel("the scan ran past its 600 s");
  EXPECT_TRUE(cancellation.cancelled());
  EXPECT_EQ(cancellation.reason(), "the scan ran past its 600 s");
}

TEST(Cancellation, TheFirstReasonWinsOverLaterOnes) {
  Cancellation cancellation;
  cancellation.cancel("the agent is stopping");
  cancellation.cancel("the scan ran past its 600 s");
  cancellation.cancel("");
  EXPECT_TRUE(cancellation.cancelled());
  EXPECT_EQ(cancellation.reason(), "the agent is stopping");
}

// An empty reason still cancels, and stays the reason: a later one does not
// take its place.
TEST(Cancellation, AnEmptyReasonStillCancelsAndStays) {
  Cancellation cancellation;
  cancellation.cancel("");
  EXPECT_TRUE(cancellation.cancelled());
  cancellation.cancel("too late");
  EXPECT_EQ(cancellation.reason(), "");
}

// Threads that cancel at once agree on one of their reasons, and a thread
// that sees the work cancelled reads that reason, never one not yet set.
TEST(Cancellation, CancellingFromManyThreadsKeepsOneReasonSeenByAll) {
  constexpr int k_threads = 8;
  Cancellation cancellation;
  std::atomic<int> ready{0};
  std::vector<std::string> seen(k_threads);
  std::vector<std::thread> threads;
  threads.reserve(k_threads);
  for (int i = 0; i < k_threads; ++i) {
    threads.emplace_back([&, i] {
      ++ready;
      while (ready.load() < k_threads) {
        std::this_thread::yield();
      }
      if (i % 2 == 0) {
        cancellation.cancel("reason " + std::to_string(i));
      } else {
        while (!cancellation.cancelled()) {
          std::this_thread::yield();
        }
      }
      seen[static_cast<std::size_t>(i)] = cancellation.reason();
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  ASSERT_TRUE(cancellation.cancelled());
  const std::string reason = cancellation.reason();
  EXPECT_TRUE(reason == "reason 0" || reason == "reason 2" || reason == "reason 4" ||
              reason == "reason 6")
      << reason;
  for (const auto& one : seen) {
    EXPECT_EQ(one, reason);
  }
}

}  // namespace
}  // namespace envcontract::process
