// libFuzzer target: what anyone who reaches the agent's port controls before
// a handler runs: method, path, Host header and the history query's time,
// one per line; and any bytes as text for the log.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/time_text.hpp"
#include "daemon/http_routes.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace envcontract::daemon;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string_view parts[4];
  std::size_t start = 0;
  for (auto& part : parts) {
    const auto end = text.find('\n', start);
    part = text.substr(std::min(start, text.size()),
                       end == std::string_view::npos ? std::string_view::npos : end - start);
    start = end == std::string_view::npos ? text.size() : end + 1;
  }
  const auto route = match_route(parts[0], parts[1]);
  if (route.outcome == RouteMatch::Outcome::found && route.endpoint == Endpoint::scan_ticket) {
    (void)std::stoll(route.argument);  // the handler's conversion must not throw
  }
  static const HostPolicy policy = make_host_policy("127.0.0.1", {"agent.example"});
  (void)host_allowed(parts[2], policy);
  (void)envcontract::common::parse_rfc3339(parts[3]);
  const std::string escaped = printable(text);
  for (const char c : escaped) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      __builtin_trap();  // a control byte would reach the log
    }
  }
  return 0;
}
