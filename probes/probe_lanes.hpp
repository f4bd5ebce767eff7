#pragma once

#include <atomic>
#include <memory>
#include <utility>

namespace envcontract::probes {

// The probe processes a scan may run at once: one lane per env it probes at
// a time (the cores, or the agent's `concurrency`). An env's probe holds a
// lane while it runs, and runs a chain of its stages beside another only on
// a lane no env holds: a lone env on a 2-core host imports its device
// count's module while its first chain imports torch, and a scan of many
// envs runs no more interpreters at once than it has envs in progress.
class ProbeLanes {
 public:
  // What a lane is held by: given back when it ends.
  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& other) noexcept : m_lanes(std::exchange(other.m_lanes, nullptr)) {}
    Hold& operator=(Hold&& other) noexcept;
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold();
    explicit operator bool() const { return m_lanes != nullptr; }

   private:
    friend class ProbeLanes;
    explicit Hold(std::shared_ptr<std::atomic<int>> lanes) : m_lanes(std::move(lanes)) {}
    std::shared_ptr<std::atomic<int>> m_lanes;
  };

  // `count` lanes; 0: the number of cores.
  explicit ProbeLanes(unsigned count);

  // An env's own lane: the scan starts no more envs at once than it has
  // lanes, so this one is always there.
  Hold hold_for_env() const;
  // A spare lane, or an empty hold when every lane is held.
  Hold spare() const;
  // How many lanes no one holds.
  int free() const { return m_free->load(std::memory_order_relaxed); }

 private:
  // Shared with each hold: a probe left behind by its scan gives its lane
  // back whenever it ends.
  std::shared_ptr<std::atomic<int>> m_free;
};

}  // namespace envcontract::probes
