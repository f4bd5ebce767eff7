#pragma once

#include <atomic>
#include <mutex>
#include <string>

namespace envcontract::process {

// Ends a scan's work early: its watchdog when the scan overruns, the agent
// when it stops. Processes running under it are killed (process_runner),
// stages not yet started are not started, and whatever was cut short says
// why with reason().
class Cancellation {
 public:
  // The first reason wins: later ones would only hide what happened first.
  void cancel(const std::string& reason);
  bool cancelled() const { return m_cancelled.load(std::memory_order_acquire); }
  std::string reason() const;

 private:
  std::atomic<bool> m_cancelled{false};
  mutable std::mutex m_mutex;
  std::string m_reason;
};

}  // namespace envcontract::process
