#pragma once

#include "daemon/http_api.hpp"

namespace envcontract::daemon {

class Agent;

// The CI gate's endpoints (docs/api.md, docs/ci.md), on a request already
// admitted (its Host and, for POST, its X-Requested-By header checked).
// Parameters are in the query: the agent never reads request bodies.

// POST /api/v1/gate?env=PREFIX&contract=SHA256&ci=&job_id=&job_url=&bypass=
// 200 with the decision, the env's report and what was probed; 409 when
// the job's contract is not the agent's, 404 when the env is not one the
// agent found, 503 when it has no contract or too many gates wait.
PlainResponse gate_answer(Agent& agent, const PlainRequest& request);

// POST /api/v1/gate/record?outcome=go|drift|unknown&env=&contract_name=&
// contract_sha256=&ci=&job_id=&job_url=&bypass=&why=
// A decision the job's gate made itself, recorded as judged by the job; 201.
PlainResponse gate_record_answer(Agent& agent, const PlainRequest& request);

// GET /api/v1/gate/decisions?limit=N: the last N decisions (default 100,
// at most 1000), newest first.
PlainResponse gate_decisions_answer(Agent& agent, const PlainRequest& request);

}  // namespace envcontract::daemon
