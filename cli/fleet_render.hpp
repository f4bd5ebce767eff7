#pragma once

#include <string>
#include <vector>

#include "fleet/host_reports.hpp"
#include "report/report_table.hpp"

namespace envcontract::cli {

using fleet::HostReport;
using fleet::Json;

// Many hosts: one line each (state, compliant envs, the causes it drifts
// for, or why it could not be asked), then the fleet's summary line.
std::string fleet_table(const std::vector<HostReport>& hosts, const report::TableStyle& style);

// "37 of 120 hosts drift; 2 unreachable; top causes: cuda_build 31, image_mismatch 12"
std::string fleet_summary(const std::vector<HostReport>& hosts);

// How much of each report the JUnit shows.
enum class JunitDetail {
  every_check,  // a testcase per check, passing ones too: hosts named on the command line
  // What Prometheus and an inventory both know, so that a fleet's JUnit is
  // the same from either: per env, a testcase per failing check, or one
  // passing `complies`; a target only with its failing checks.
  failing_checks,
};

// The hosts' reports as JUnit XML (report/junit.hpp), hosts named as given.
std::string fleet_junit(const std::vector<HostReport>& hosts, JunitDetail detail);

// {"hosts": [{"host", "state", "error", "report"}], "summary": {...}}
Json fleet_json(const std::vector<HostReport>& hosts);

// A history answer's transitions as a table, oldest first.
std::string history_table(const Json& transitions, const report::TableStyle& style);

// What differs between two hosts' reports: contract, image, verdicts, envs
// only on one side, and checks whose status or cause differ in envs both have.
Json diff_reports(const Json& a, const Json& b);
std::string diff_table(const Json& diff, const std::string& a, const std::string& b);
bool diff_is_empty(const Json& diff);

}  // namespace envcontract::cli
