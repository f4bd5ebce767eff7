#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <utility>

namespace envcontract::probes {

// The probe processes a scan may run at once: a lane per core (or per the
// agent's `concurrency`), one for each env the scan is probing or has yet to
// probe. A lane is spare once fewer envs are left than lanes (a lone env, the
// last envs of a scan): an env's probe then runs its bare comparison, and a
// chain of its stages, beside its first one there, so that a scan of many
// envs runs no more interpreters at once than it did.
class ProbeLanes {
 public:
  // A spare lane taken: given back when the hold ends.
  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& other) noexcept : m_free(std::exchange(other.m_free, nullptr)) {}
    Hold& operator=(Hold&& other) noexcept;
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold();
    explicit operator bool() const { return m_free != nullptr; }

   private:
    friend class ProbeLanes;
    explicit Hold(std::shared_ptr<std::atomic<int>> free) : m_free(std::move(free)) {}
    std::shared_ptr<std::atomic<int>> m_free;
  };

  // An env's turn in the scan: env_done() as it ends, however it ends.
  class EnvTurn {
   public:
    explicit EnvTurn(const ProbeLanes& lanes) : m_lanes(lanes) {}
    EnvTurn(const EnvTurn&) = delete;
    EnvTurn& operator=(const EnvTurn&) = delete;
    ~EnvTurn() { m_lanes.env_done(); }

   private:
    const ProbeLanes& m_lanes;
  };

  // `count` lanes (0: the number of cores) for a scan of `envs` envs.
  ProbeLanes(unsigned count, std::size_t envs);

  // One env fewer left: its turn in the scan ended, probed or not. Once
  // fewer envs are left than lanes, the lane it held is spare.
  void env_done() const;
  // A spare lane, or an empty hold when none is.
  Hold spare() const;
  // How many lanes are spare now.
  int free() const { return m_state->free->load(std::memory_order_relaxed); }

 private:
  struct State {
    int count = 1;
    std::atomic<std::size_t> envs_left{0};
    // Shared with each hold: a chain left behind with its probe by the scan
    // gives its spare lane back whenever it ends (the env's own lane goes
    // back as its turn in the scan ends).
    std::shared_ptr<std::atomic<int>> free;
  };
  std::shared_ptr<State> m_state;
};

}  // namespace envcontract::probes
