#include "daemon/scan_progress.hpp"

#include <ostream>

namespace envcontract::daemon {

ProgressPrinter::ProgressPrinter(std::ostream& err) : m_err(err) {
  m_ticker = std::thread([this] { tick(); });
}

ProgressPrinter::~ProgressPrinter() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  m_wake.notify_all();
  m_ticker.join();
}

ScanObserver ProgressPrinter::observer() {
  ScanObserver observer;
  observer.started = [this](std::size_t count) {
    std::lock_guard lock(m_mutex);
    m_err << "scanning " << count << (count == 1 ? " env" : " envs") << "\n";
  };
  observer.env_started = [this](const std::string& env, bool) {
    std::lock_guard lock(m_mutex);
    m_running[env] = Clock::now();
  };
  observer.env_finished = [this](const std::string& env, const std::string& verdict,
                                 std::chrono::milliseconds elapsed, std::size_t done,
                                 std::size_t total) {
    std::lock_guard lock(m_mutex);
    m_running.erase(env);
    m_err << "[" << done << "/" << total << "] " << env << ": " << verdict << " ("
          << static_cast<double>(elapsed.count()) / 1000.0 << " s)\n";
  };
  return observer;
}

void ProgressPrinter::tick() {
  std::unique_lock lock(m_mutex);
  while (!m_wake.wait_for(lock, std::chrono::seconds(5), [this] { return m_stopping; })) {
    if (m_running.empty()) {
      continue;
    }
    m_err << "  still running:";
    for (const auto& [env, since] : m_running) {
      m_err << " " << env << " ("
            << std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - since).count()
            << " s)";
    }
    m_err << "\n";
  }
}

report::Report scan_with_progress(Scanner& scanner, const LoadedContract& contract,
                                  const ScanSettings& settings, bool progress, std::ostream& err) {
  if (!progress) {
    return scanner.scan(contract, settings);
  }
  ProgressPrinter printer(err);
  return scanner.scan(contract, settings, printer.observer());
}

}  // namespace envcontract::daemon
