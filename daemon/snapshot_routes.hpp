#pragma once

#include <string>

#include "daemon/agent.hpp"
#include "daemon/http_api.hpp"

// The endpoints answered from the agent's snapshot alone (docs/api.md):
// plain functions of a request and a snapshot, with no socket and no agent,
// so that each answer is tested as data. The HTTP server admits the
// request (host, method, limits) and sends what these return.
namespace envcontract::daemon {

// GET /api/v1/envs/NAME: the env's entry of the last report, with the
// report's host, scan time and scan id; 404 naming the envs there are.
PlainResponse env_answer(const AgentSnapshot& snapshot, const std::string& name);

// GET /api/v1/compliance: the host's verdict, 200 when it complies, else 503
// (a load balancer's health check reads the status alone).
PlainResponse compliance_answer(const AgentSnapshot& snapshot);

// GET /api/v1/contract: the contract in force, where it came from and the
// last reload's error.
PlainResponse contract_answer(const AgentSnapshot& snapshot);

// What the dashboard offers beside a plan: a provision button where this
// agent provisions, and whether it asks for the token.
struct ProvisioningOffer {
  bool enabled = false;
  bool token_required = false;
};

// GET /api/v1/plan[?env=NAME]: the plan made with the last report, or one
// env's; an env that complies has an empty plan, one not in the report 404.
PlainResponse plan_answer(const AgentSnapshot& snapshot, const PlainRequest& request,
                          const ProvisioningOffer& offer);

// The 503 of an endpoint that needs a report while the first scan runs.
PlainResponse no_report_yet(const AgentSnapshot& snapshot);

}  // namespace envcontract::daemon
