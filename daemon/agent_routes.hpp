#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "daemon/agent.hpp"
#include "daemon/http_api.hpp"
#include "daemon/metrics.hpp"

// The endpoints that ask the agent itself (its store, its queues, its
// token) rather than its snapshot alone (daemon/snapshot_routes.hpp):
// plain functions of the agent and a request, with no socket, so that each
// answer is tested as data (docs/api.md). The HTTP server admits the
// request (host, method, limits) and sends what these return.
namespace envcontract::daemon {

// GET /healthz: alive, its version and how long it has served.
PlainResponse healthz_answer(const std::string& version, std::chrono::seconds uptime);

// GET /api/v1/report: the last report's text, shared by every request; the
// envs judged so far while the first scan runs (verdict "pending").
PlainResponse report_answer(const AgentSnapshot& snapshot);

// GET /api/v1/history?env=&target=&check=&since=&limit=: the transitions
// kept in the store; 404 for a name neither the report nor the history
// knows, with the names they know.
PlainResponse history_answer(Agent& agent, const PlainRequest& request);

// GET /api/v1/provisions?limit=: the provisioning jobs kept in the store.
PlainResponse provisions_answer(Agent& agent, const PlainRequest& request);

// POST /api/v1/provision?name=NEW and POST /api/v1/promote?env=NEW&as=NAME:
// with the agent's token, queued as a job; 202 with where to follow it.
PlainResponse provision_answer(Agent& agent, const PlainRequest& request, bool promote);

// GET /api/v1/provisions/ID (`id`: the route's 1 to 15 digits).
PlainResponse provision_job_answer(const Agent& agent, const std::string& id);

// POST /api/v1/scan: a scan queued (or the queued one joined); 202 with its
// ticket. With the token when the agent has one, else with a header no HTML
// form can set (X-Requested-By).
PlainResponse scan_answer(Agent& agent, const PlainRequest& request);

// GET /api/v1/scans/ID (`id`: the route's 1 to 15 digits).
PlainResponse scan_ticket_answer(const Agent& agent, const std::string& id);

// GET / and the dashboard's files (the agent's, and the fleet view's: daemon/fleet_service.hpp);
// 404 for a file it does not have.
PlainResponse asset_answer(const std::string& path);

// GET /metrics: the report's series and the agent's own, each rendered once
// for every scrape until what it is made of changes. Any thread.
class MetricsAnswer {
 public:
  explicit MetricsAnswer(std::string version) : m_version(std::move(version)) {}
  PlainResponse answer(const Agent& agent);

 private:
  const std::string m_version;
  std::mutex m_mutex;  // guards what follows
  std::shared_ptr<const std::string> m_report_series;
  std::shared_ptr<const report::Report> m_report;  // what they were rendered from
  ContractHandle m_contract;
  std::shared_ptr<const std::string> m_agent_series;
  AgentFigures m_figures;
};

}  // namespace envcontract::daemon
