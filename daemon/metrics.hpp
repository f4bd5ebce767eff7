#pragma once

#include <array>
#include <string>

#include "daemon/agent.hpp"

namespace envcontract::daemon {

// The agent's state in the Prometheus text exposition format (version
// 0.0.4): host and env verdicts, failing checks by cause, scan and reload
// counters. Only failing checks get a series, so cardinality stays bounded
// by what is wrong.
// `webhooks`: the deliveries' counts, null when no webhook is configured.
std::string render_metrics(const Agent& agent, const std::string& version);

// The two halves of render_metrics: what depends only on the snapshot's
// report and contract (the same text until the next snapshot: the HTTP side
// keeps it), and the agent's counters and footprint (the footprint read at
// most once a second).
std::string render_report_metrics(const AgentSnapshot& snapshot, const std::string& version);

// The agent's own figures from /proc/self.
struct ProcessStats {
  double cpu_seconds = 0;
  double resident_bytes = 0;
  double virtual_bytes = 0;
  double threads = 0;
  double start_time = 0;  // Unix time
  double open_fds = 0;
  bool read = false;
  bool operator==(const ProcessStats&) const = default;
};

// Every value render_agent_metrics writes, read once. Equal figures render
// the same text, so the HTTP side renders it again only when one changed
// (a scan, a reload, a delivery, the footprint's once-a-second reading),
// not for every scrape.
struct AgentFigures {
  double scans = 0;
  double scan_failures = 0;
  bool scanning = false;
  double last_scan_seconds = 0;
  double last_scan_finished = 0;
  double envs_probed = 0;
  double envs_reused = 0;
  double reloads = 0;
  double reload_failures = 0;
  double store_failures = 0;
  bool reload_error = false;
  bool webhooks = false;  // the three below are written only when true
  double webhooks_delivered = 0;
  double webhooks_failed = 0;
  double webhooks_dropped = 0;
  std::array<double, 12> gate_decisions{};  // by gate_counter_index
  // The agent's schedule, for alert rules that judge a scan's age by it
  // (EnvcontractScansTooRare): a daily agent is not late after an hour.
  double scan_interval_seconds = 0;
  double scan_deadline_seconds = 0;
  ProcessStats process;
  bool operator==(const AgentFigures&) const = default;
};
// `snapshot`: the agent's, taken once by the caller for all its series.
AgentFigures agent_figures(const AgentSnapshot& snapshot, const Agent& agent);
std::string render_agent_metrics(const AgentFigures& figures);

}  // namespace envcontract::daemon
