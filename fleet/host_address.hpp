#pragma once

#include <optional>
#include <string>

namespace envcontract::fleet {

inline constexpr int default_agent_port = 9714;

// A host as operators write it: "node-17", "node-17:9800", "10.0.0.5",
// "[fe80::1]:9714" or "http://node-17:9714/".
struct HostAddress {
  std::string text;  // as given, for messages
  std::string host;
  int port = default_agent_port;
  std::string base_url() const;  // "http://node-17:9714"
};

// nullopt when `text` is not a host, host:port or http URL (https is not
// served by the agent; put a proxy in front and give its http address).
std::optional<HostAddress> parse_host_address(const std::string& text);

}  // namespace envcontract::fleet
