#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/agent_client.hpp"
#include "common/result.hpp"
#include "report/report.hpp"

namespace envcontract::cli {

using Json = report::Json;

// One host's answer: its report, or why there is none.
struct HostReport {
  HostAddress address;
  std::optional<Json> report;
  std::string error;

  // "compliant", "drift", "error" (the agent's verdict) or "unavailable" (no report: unreachable,
  // no scan yet, not an agent).
  std::string state() const;
};

// GETs `path` and parses a JSON answer, or says in one line what went wrong
// (transport, status, not JSON).
common::Result<Json> get_json(const HostAddress& host, const std::string& path,
                              const ClientOptions& options, int* status = nullptr);

// Fetches every host's report, `concurrency` at a time, in input order.
std::vector<HostReport> fetch_reports(const std::vector<HostAddress>& hosts,
                                      const ClientOptions& options, unsigned concurrency);

// Reads an inventory: one host per line; blank lines and # comments are skipped.
// Returns the hosts, or every bad line, one per line as "/abs/FILE:LINE: ...".
common::Result<std::vector<HostAddress>> read_inventory(const std::string& path);

// `hosts` without repeats of the same agent (same host name and port, however
// written), in first-seen order; each repeat is described in `repeated`.
std::vector<HostAddress> distinct_hosts(const std::vector<HostAddress>& hosts,
                                        std::vector<std::string>& repeated);

// 0 when every host complies, 2 when any host could not be asked or judged,
// else 1 (drift somewhere).
int fleet_exit_status(const std::vector<HostReport>& hosts);

}  // namespace envcontract::cli
