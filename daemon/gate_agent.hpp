#pragma once

#include "fleet/gate_client.hpp"

// The job's side of asking the agent of the machine it runs on
// (docs/ci.md): whether the agent on the port may be trusted, then the
// question itself (fleet/gate_client.hpp).
namespace envcontract::daemon {

// Why the agent's port on this machine cannot be trusted with a job's
// verdict, or "" when something listens there and every socket listening
// there is root's. Any local user can listen on a free port: an agent that
// is not running must not be stood in for by a process that answers "go"
// for every env. While root listens on the port, no other user can (a
// second listener on it needs SO_REUSEPORT and the same uid): what answers
// the connection made next is root's, but for an agent that stops in
// between and a listener that takes its port in that instant.
std::string listener_problem(int port);

// "127.0.0.1", "::1", "localhost": the gate asks only the agent of the
// machine the job runs on (fleetctl gate asks another host's).
bool is_loopback(const fleet::HostAddress& agent);

// fleet::ask_gate, asked only of a root listener, checked again after the
// answer (a listener that took the port while the request ran is not
// believed either).
fleet::GateVerdict ask_local_agent(const fleet::HostAddress& agent, const fleet::GateQuery& query);

// fleet::record_gate_decision, likewise only to a root listener.
std::string record_with_local_agent(const fleet::HostAddress& agent, const fleet::GateQuery& query,
                                    std::string_view outcome, const std::string& why);

}  // namespace envcontract::daemon
