#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "fleet/agent_client.hpp"
#include "report/report.hpp"

namespace envcontract::fleet {

using Json = report::Json;

// One host's answer: its report, or why there is none (or what was wrong
// with the report it has: a verdict of Prometheus' series the view does
// not know).
struct HostReport {
  HostAddress address;
  std::optional<report::Report> report;  // read once, at its edge (report_from_json)
  std::string error;
  bool up = false;           // it answered (asked directly), or Prometheus' last scrape of it did
  std::string last_seen;     // RFC 3339: when it last answered with a report, "" never or unknown
  std::string last_verdict;  // its verdict then, kept for a host that has no report now
  // A host without a report now (down): what was last known of it, a
  // report_summary (contract, platform, image, verdict, scan time, failing
  // checks and causes), so that it stays under every filter it matched.
  // Never judged again: its state stays "unavailable".
  std::optional<report::Report> last_known;
  // Where last_known came from: "the view's last read", "Prometheus'
  // history (...)"; says what of it is missing.
  std::string last_known_from;

  // "compliant", "drift", "error" (the agent's verdict) or "unavailable" (no report: unreachable,
  // no scan yet, not an agent).
  std::string state() const;
};

// An agent's or Prometheus' answer parsed within bounds (its size as
// `options` allow, common::k_outside_json_depth levels), or why not:
// "the answer nests deeper than 64 levels".
common::Result<Json> parse_answer(const std::string& body, const ClientOptions& options);

// GETs `path` and parses a JSON answer, or says in one line what went wrong
// (transport, status, not JSON, too deep).
common::Result<Json> get_json(const HostAddress& host, const std::string& path,
                              const ClientOptions& options, int* status = nullptr);

// Fetches every host's report, `concurrency` at a time, in input order.
// When `stop` becomes true, hosts not yet asked are not asked (their error
// says so): a shutdown waits for one request at most. `summaries`: keep
// each report's report_summary only, made as it arrives, so that a poll
// of many hosts never holds all their whole reports.
std::vector<HostReport> fetch_reports(const std::vector<HostAddress>& hosts,
                                      const ClientOptions& options, unsigned concurrency,
                                      const std::atomic<bool>* stop = nullptr,
                                      bool summaries = false);

// What the fleet view keeps of a host's report: verdict, scan time,
// contract, image, and each target and env with its verdict, summary and
// failing checks (id, status, severity, cause); the evidence is left to the
// agent, asked for it on demand.
report::Report report_summary(const report::Report& report);

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

}  // namespace envcontract::fleet
