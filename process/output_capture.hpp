#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace envcontract::process {

// Keeps the head and the tail of a stream within a byte budget: a probe that
// writes gigabytes costs the budget, and what is kept still shows how it
// started and how it ended.
class OutputCapture {
 public:
  explicit OutputCapture(std::size_t max_bytes) : m_half(max_bytes / 2) {}

  void append(std::string_view data);

  std::size_t total_bytes() const { return m_total; }
  // head + a marker naming the dropped byte count + tail.
  std::string text() const;

 private:
  std::size_t m_half;
  std::size_t m_total = 0;
  std::string m_head;
  std::string m_tail;  // a ring of m_half bytes once full
  std::size_t m_tail_start = 0;
};

}  // namespace envcontract::process
