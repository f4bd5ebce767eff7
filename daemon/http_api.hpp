#pragma once

#include <memory>
#include <string>

#include "common/result.hpp"
#include "daemon/agent.hpp"

namespace envcontract::daemon {

// The agent's HTTP side (docs/api.md): JSON API, Prometheus metrics and the
// dashboard, answered from the agent's snapshot. Its translation unit and
// the webhooks' are the only ones that include httplib.h.
class HttpServer {
 public:
  HttpServer(Agent& agent, std::string version);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket (port 0: any free port). Returns the port, or
  // why it could not bind.
  common::Result<int> bind(const ListenAddress& address);
  // Serves until stop(); call after bind().
  void serve();
  void stop();
  // Why the HTTP side cannot be trusted to be alive, or "" when it is: it
  // stopped accepting, or connections wait while no thread takes any for
  // several http_timeouts. Judged inside the process, never by a request
  // that would queue behind a client's connections.
  std::string liveness_problem() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace envcontract::daemon
