#pragma once

#include <filesystem>
#include <iosfwd>

#include "daemon/scanner.hpp"

namespace envcontract::daemon {

enum class ReportFormat { json, table, junit };

struct ScanCommandOptions {
  std::filesystem::path contract;  // or "auto": detected as the agent does (docs/agent.md)
  std::filesystem::path contracts_dir;
  std::filesystem::path detect_root = "/";
  std::vector<std::string> run_tests;  // a CI config's entries to run (--run-test)
  std::filesystem::path checkout;      // where "{checkout}/..." platform configs are
  ScanSettings settings;
  ReportFormat format = ReportFormat::table;
  bool verbose = false;
  bool progress = false;  // env by env on `err`, with what is still running
  bool colour = false;
};

// `envcontractd scan`: scans this host once, without a daemon or database,
// and prints the report. Returns 0 compliant, 1 drift, 2 error (including an
// invalid contract).
int run_scan(const ScanCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace envcontract::daemon
