#include "probes/probe_lanes.hpp"

#include <algorithm>
#include <thread>

namespace envcontract::probes {

ProbeLanes::Hold& ProbeLanes::Hold::operator=(Hold&& other) noexcept {
  if (this != &other) {
    const Hold released(std::move(*this));
    m_free = std::exchange(other.m_free, nullptr);
  }
  return *this;
}

ProbeLanes::Hold::~Hold() {
  if (m_free) {
    m_free->fetch_add(1, std::memory_order_acq_rel);
  }
}

ProbeLanes::ProbeLanes(unsigned count, std::size_t envs) : m_state(std::make_shared<State>()) {
  m_state->count =
      static_cast<int>(count != 0 ? count : std::max(1U, std::thread::hardware_concurrency()));
  m_state->envs_left = envs;
  const auto held = static_cast<int>(std::min<std::size_t>(envs, m_state->count));
  m_state->free = std::make_shared<std::atomic<int>>(m_state->count - held);
}

void ProbeLanes::env_done() const {
  std::size_t left = m_state->envs_left.load(std::memory_order_acquire);
  do {
    if (left == 0) {
      return;  // more turns ended than envs: nothing held is left to give back
    }
  } while (!m_state->envs_left.compare_exchange_weak(left, left - 1, std::memory_order_acq_rel));
  // The lane goes to the next env waiting for a turn, if any is.
  if (left - 1 < static_cast<std::size_t>(m_state->count)) {
    m_state->free->fetch_add(1, std::memory_order_acq_rel);
  }
}

ProbeLanes::Hold ProbeLanes::spare() const {
  auto& free = *m_state->free;
  int now = free.load(std::memory_order_acquire);
  while (now > 0) {
    if (free.compare_exchange_weak(now, now - 1, std::memory_order_acq_rel)) {
      return Hold(m_state->free);
    }
  }
  return {};
}

}  // namespace envcontract::probes
