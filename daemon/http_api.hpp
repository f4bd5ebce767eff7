#pragma once

#include <memory>
#include <string>

#include "common/result.hpp"
#include "daemon/agent.hpp"

namespace envcontract::daemon {

// The agent's HTTP side (docs/api.md): JSON API, Prometheus metrics and the
// dashboard, answered from the agent's snapshot. The only translation unit
// that includes httplib.h.
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

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace envcontract::daemon
