#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// What the HTTP side decides from a request's method, path and headers
// before any handler runs, written without sockets and without regular
// expressions (paths come from anyone who can reach the port), so that it
// can be tested and fuzzed on its own.
namespace envcontract::daemon {

enum class Endpoint {
  healthz,
  report,
  env,  // argument: the env's name (may hold '/')
  history,
  contract,
  compliance,
  plan,
  provisions,
  provision,      // POST
  promote,        // POST
  provision_job,  // argument: the job id, digits
  scan,           // POST
  scan_ticket,    // argument: the ticket id, digits
  gate,           // POST
  gate_record,    // POST
  gate_decisions,
  metrics,
  asset,  // argument: the asset path, "/" or a file of the dashboard
};

struct RouteMatch {
  enum class Outcome { found, not_found, wrong_method };
  Outcome outcome = Outcome::not_found;
  Endpoint endpoint = Endpoint::healthz;
  std::string argument;
  std::string allowed;  // for wrong_method: the method the path takes
};

// `path` is decoded (RequestHead::path); HEAD is answered as GET.
RouteMatch match_route(std::string_view method, std::string_view path);

// Every endpoint, "METHOD /path", for 404 answers.
const std::vector<std::string>& endpoint_list();

// Which Host headers the agent answers. A browser on a page of another site
// may reach a loopback agent through a DNS name that the attacker points at
// 127.0.0.1 (DNS rebinding); it always sends that name as Host, so only
// names the agent knows are served. IP literals cannot be rebound and are
// always allowed.
struct HostPolicy {
  std::vector<std::string> names;  // lower case, without port
};

// The listen host, loopback names, this machine's hostname and `configured`.
HostPolicy make_host_policy(const std::string& listen_host,
                            const std::vector<std::string>& configured);

// True when `host_header` ("name", "name:port", "[::1]:port", or "" when
// absent) may be served.
bool host_allowed(std::string_view host_header, const HostPolicy& policy);

// `text` with control characters and bytes that are not printable ASCII
// escaped (\n, \x1b, ...), and cut to `max_bytes`: for logs that a request
// must not be able to forge or flood.
std::string printable(std::string_view text, std::size_t max_bytes = 512);

}  // namespace envcontract::daemon
