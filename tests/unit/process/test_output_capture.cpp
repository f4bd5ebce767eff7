#include "process/output_capture.hpp"

#include <gtest/gtest.h>

namespace envcontract::process {
namespace {

TEST(OutputCapture, KeepsEverythingWithinTheBudget) {
  OutputCapture capture(100);
  capture.append("hello ");
  capture.append("world");
  EXPECT_EQ(capture.text(), "hello world");
  EXPECT_EQ(capture.total_bytes(), 11U);
}

TEST(OutputCapture, KeepsHeadAndTailBeyondIt) {
  OutputCapture capture(10);
  for (int i = 0; i < 100; ++i) {
    capture.append(std::string(1, static_cast<char>('a' + i % 26)));
  }
  EXPECT_EQ(capture.total_bytes(), 100U);
  // First 5 bytes, a marker, the last 5 bytes (positions 95..99 -> r s t u v).
  EXPECT_EQ(capture.text(), "abcde\n[... 90 bytes omitted ...]\nrstuv");
}

TEST(OutputCapture, LargeWritesWrapTheTail) {
  OutputCapture capture(8);
  capture.append("0123");
  capture.append("456789abcdef");
  capture.append("gh");
  EXPECT_EQ(capture.text(), "0123\n[... 10 bytes omitted ...]\nefgh");
  EXPECT_EQ(capture.total_bytes(), 18U);
}

}  // namespace
}  // namespace envcontract::process
