#pragma once

#include <chrono>
#include <condition_variable>
#include <iosfwd>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "daemon/scanner.hpp"

namespace envcontract::daemon {

// A one-shot scan's progress on stderr (scan --progress, plan --progress):
// each env as it finishes and, every few seconds, which envs are still
// running and for how long: the slow one is the interesting one.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::ostream& err);
  ~ProgressPrinter();
  ProgressPrinter(const ProgressPrinter&) = delete;
  ProgressPrinter& operator=(const ProgressPrinter&) = delete;

  ScanObserver observer();

 private:
  using Clock = std::chrono::steady_clock;
  void tick();

  std::ostream& m_err;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stopping = false;
  std::map<std::string, Clock::time_point> m_running;
  std::thread m_ticker;
};

// Scans with `scanner`, printing progress on `err` when `progress`.
report::Report scan_with_progress(Scanner& scanner, const LoadedContract& contract,
                                  const ScanSettings& settings, bool progress, std::ostream& err);

}  // namespace envcontract::daemon
