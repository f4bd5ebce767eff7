#include "daemon/scan_command.hpp"

#include <filesystem>
#include <ostream>

#include "common/json_text.hpp"
#include "common/printable.hpp"
#include "common/shown_path.hpp"
#include "daemon/contract_detection.hpp"
#include "daemon/scan_progress.hpp"
#include "report/junit.hpp"
#include "report/report_json.hpp"
#include "report/report_table.hpp"

namespace envcontract::daemon {

int run_scan(const ScanCommandOptions& options, std::ostream& out, std::ostream& err) {
  std::filesystem::path contract_file = options.contract;
  if (options.contract == "auto") {
    const auto detected = detect_contract(options.contracts_dir, options.detect_root);
    if (!detected) {
      err << "envcontractd scan: " << common::printable(detected.error()) << "\n";
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
  const auto& contract = *loaded.value();
  Scanner scanner;
  const auto report =
      scan_with_progress(scanner, contract, options.settings, options.progress, err);
  if (options.format == ReportFormat::json) {
    out << common::json_text(report::to_json(report), 2) << "\n";
  } else if (options.format == ReportFormat::junit) {
    out << report::junit_xml({{report.host.empty() ? "localhost" : report.host, &report, ""}});
  } else {
    out << report::render_table(report, {options.verbose, options.colour});
  }
  if (report.envs.empty()) {
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
