#include "daemon/scan_command.hpp"

#include <condition_variable>
#include <filesystem>
#include <map>
#include <ostream>
#include <thread>

#include "common/json_text.hpp"
#include "common/shown_path.hpp"
#include "daemon/contract_detection.hpp"
#include "report/junit.hpp"
#include "report/report_table.hpp"

namespace envcontract::daemon {
namespace {

using Clock = std::chrono::steady_clock;

// Prints each env as it finishes and, every few seconds, which envs are
// still running and for how long: the slow one is the interesting one.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::ostream& err) : m_err(err) {
    m_ticker = std::thread([this] { tick(); });
  }
  ~ProgressPrinter() {
    {
      std::lock_guard lock(m_mutex);
      m_stopping = true;
    }
    m_wake.notify_all();
    m_ticker.join();
  }
  ProgressPrinter(const ProgressPrinter&) = delete;
  ProgressPrinter& operator=(const ProgressPrinter&) = delete;

  ScanObserver observer() {
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

 private:
  void tick() {
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

  std::ostream& m_err;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stopping = false;
  std::map<std::string, Clock::time_point> m_running;
  std::thread m_ticker;
};

// A --root or --prefix that is not a directory this agent can open: a
// mistyped path is a configuration error, not a host without envs. "" when all are.
std::string missing_directory(const probes::DiscoveryOptions& discovery) {
  for (const auto& [flag, paths] :
       {std::pair{"--root", &discovery.roots}, std::pair{"--prefix", &discovery.prefixes}}) {
    for (const auto& path : *paths) {
      std::error_code error;
      if (!std::filesystem::is_directory(path, error)) {
        return std::string(flag) + " " + common::shown_path(path) +
               ": no such directory (or it cannot be read)";
      }
    }
  }
  return "";
}

}  // namespace

int run_scan(const ScanCommandOptions& options, std::ostream& out, std::ostream& err) {
  std::filesystem::path contract_file = options.contract;
  if (options.contract == "auto") {
    const auto detected = detect_contract(options.contracts_dir, options.detect_root);
    if (!detected) {
      err << "envcontractd scan: " << detected.error() << "\n";
      return 2;
    }
    contract_file = detected->file;
    err << "contract: auto chose " << contract_file.string() << " (" << detected->why << ")\n";
  }
  auto loaded = load_contract(contract_file, options.run_tests, options.checkout);
  if (!loaded) {
    err << loaded.error();
    return 2;
  }
  const auto& discovery = options.settings.facts.discovery;
  if (const std::string problem = missing_directory(discovery); !problem.empty()) {
    err << "envcontractd scan: " << problem << "\n";
    return 2;
  }
  const auto& contract = *loaded.value();
  Scanner scanner;
  report::Json report;
  if (options.progress) {
    ProgressPrinter printer(err);
    report = scanner.scan(contract, options.settings, printer.observer());
  } else {
    report = scanner.scan(contract, options.settings);
  }
  if (options.format == ReportFormat::json) {
    out << common::json_text(report, 2) << "\n";
  } else if (options.format == ReportFormat::junit) {
    out << report::junit_xml({{report.value("host", std::string("localhost")), &report, ""}});
  } else {
    out << report::render_table(report, {options.verbose, options.colour});
  }
  if (const auto envs = report.find("envs"); envs != report.end() && envs->empty()) {
    std::string searched;
    for (const auto* paths : {&discovery.roots, &discovery.prefixes}) {
      for (const auto& path : *paths) {
        searched += (searched.empty() ? "" : ", ") + common::shown_path(path);
      }
    }
    err << "envcontractd scan: no Python environment was found under "
        << (searched.empty() ? std::string("the default roots") : searched)
        << "; name the roots or prefixes that hold the envs (--root, --prefix)\n";
    return 2;
  }
  return report::exit_status(report);
}

}  // namespace envcontract::daemon
