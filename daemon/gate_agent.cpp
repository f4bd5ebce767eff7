#include "daemon/gate_agent.hpp"

#include <chrono>
#include <fstream>
#include <sstream>
#include <vector>

namespace envcontract::daemon {

namespace {

// Every socket listening on `port` in one of /proc/net/tcp{,6}: its owner's uid.
std::vector<unsigned long> listener_uids(const char* table, int port) {
  std::vector<unsigned long> uids;
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot;
    std::string local;
    std::string remote;
    std::string state;
    std::string queues;
    std::string timer;
    std::string retransmits;
    unsigned long uid = 0;
    if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid)) {
      continue;
    }
    const auto colon = local.rfind(':');
    if (state != "0A" || colon == std::string::npos) {
      continue;  // 0A: LISTEN
    }
    if (std::stoi(local.substr(colon + 1), nullptr, 16) == port) {
      uids.push_back(uid);
    }
  }
  return uids;
}

}  // namespace

std::string listener_problem(int port) {
  std::vector<unsigned long> uids = listener_uids("/proc/net/tcp", port);
  const auto six = listener_uids("/proc/net/tcp6", port);
  uids.insert(uids.end(), six.begin(), six.end());
  if (uids.empty()) {
    return "nothing listens on port " + std::to_string(port) + " (is the agent running?)";
  }
  for (const auto uid : uids) {
    if (uid != 0) {
      return "port " + std::to_string(port) + " is held by uid " + std::to_string(uid) +
             ", not root: the agent runs as root, so what answers there is not asked";
    }
  }
  return "";
}

bool is_loopback(const fleet::HostAddress& agent) {
  return agent.host == "127.0.0.1" || agent.host == "::1" || agent.host == "localhost";
}

fleet::GateVerdict ask_local_agent(const fleet::HostAddress& agent, const fleet::GateQuery& query) {
  fleet::GateVerdict refused;
  if (refused.why = listener_problem(agent.port); !refused.why.empty()) {
    return refused;
  }
  fleet::ClientOptions options;
  // The env's code may have to run again (its files changed): as long as a
  // scan of it may take, within reason for a job that waits.
  options.timeout = std::chrono::minutes(10);
  options.max_response_bytes = 16 << 20;
  auto verdict = fleet::ask_gate(agent, query, options);
  if (refused.why = listener_problem(agent.port); !refused.why.empty()) {
    return refused;
  }
  return verdict;
}

std::string record_with_local_agent(const fleet::HostAddress& agent, const fleet::GateQuery& query,
                                    std::string_view outcome, const std::string& why) {
  if (auto problem = listener_problem(agent.port); !problem.empty()) {
    return problem;
  }
  return fleet::record_gate_decision(agent, query, outcome, why);
}

}  // namespace envcontract::daemon
