#include "fleet/host_address.hpp"

#include <regex>

namespace envcontract::fleet {

std::string HostAddress::base_url() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  return "http://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::optional<HostAddress> parse_host_address(const std::string& text) {
  static const std::regex pattern(
      R"re((?:http://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)(?::([0-9]{1,5}))?/?)re");
  std::smatch match;
  if (!std::regex_match(text, match, pattern)) {
    return std::nullopt;
  }
  HostAddress address;
  address.text = text;
  address.host = match[1];
  if (address.host.front() == '[') {
    address.host = address.host.substr(1, address.host.size() - 2);
  }
  if (match[3].matched) {
    address.port = std::stoi(match[3]);
    if (address.port < 1 || address.port > 65535) {
      return std::nullopt;
    }
  }
  return address;
}

}  // namespace envcontract::fleet
