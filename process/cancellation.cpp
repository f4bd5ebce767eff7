#include "process/cancellation.hpp"

namespace envcontract::process {

void Cancellation::cancel(const std::string& reason) {
  std::lock_guard lock(m_mutex);
  if (!m_cancelled.load(std::memory_order_relaxed)) {
    m_reason = reason;
    m_cancelled.store(true, std::memory_order_release);
  }
}

std::string Cancellation::reason() const {
  std::lock_guard lock(m_mutex);
  return m_reason;
}

}  // namespace envcontract::process
