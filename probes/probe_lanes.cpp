#include "probes/probe_lanes.hpp"

#include <algorithm>
#include <thread>

namespace envcontract::probes {

ProbeLanes::Hold& ProbeLanes::Hold::operator=(Hold&& other) noexcept {
  if (this != &other) {
    Hold released(std::move(*this));
    m_lanes = std::exchange(other.m_lanes, nullptr);
  }
  return *this;
}

ProbeLanes::Hold::~Hold() {
  if (m_lanes) {
    m_lanes->fetch_add(1, std::memory_order_acq_rel);
  }
}

ProbeLanes::ProbeLanes(unsigned count)
    : m_free(std::make_shared<std::atomic<int>>(static_cast<int>(
          count != 0 ? count : std::max(1U, std::thread::hardware_concurrency())))) {}

ProbeLanes::Hold ProbeLanes::hold_for_env() const {
  m_free->fetch_sub(1, std::memory_order_acq_rel);
  return Hold(m_free);
}

ProbeLanes::Hold ProbeLanes::spare() const {
  int free = m_free->load(std::memory_order_acquire);
  while (free > 0) {
    if (m_free->compare_exchange_weak(free, free - 1, std::memory_order_acq_rel)) {
      return Hold(m_free);
    }
  }
  return {};
}

}  // namespace envcontract::probes
