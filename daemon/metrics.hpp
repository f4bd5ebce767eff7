#pragma once

#include <string>

#include "daemon/agent.hpp"

namespace envcontract::daemon {

// The agent's state in the Prometheus text exposition format (version
// 0.0.4): host and env verdicts, failing checks by cause, scan and reload
// counters. Only failing checks get a series, so cardinality stays bounded
// by what is wrong.
// `webhooks`: the deliveries' counts, null when no webhook is configured.
std::string render_metrics(const AgentSnapshot& snapshot, const AgentCounters& counters,
                           const std::string& version, const WebhookCounters* webhooks = nullptr);

// The two halves of render_metrics: what depends only on the snapshot's
// report and contract (the same text until the next snapshot: the HTTP side
// keeps it), and the agent's counters and footprint (the footprint read at
// most once a second).
std::string render_report_metrics(const AgentSnapshot& snapshot, const std::string& version);
std::string render_agent_metrics(const AgentSnapshot& snapshot, const AgentCounters& counters,
                                 const WebhookCounters* webhooks);

}  // namespace envcontract::daemon
