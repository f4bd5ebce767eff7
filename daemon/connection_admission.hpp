#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>

namespace envcontract::daemon {

// How many connections the HTTP side holds at once, and who may hold them.
struct ConnectionBounds {
  std::size_t total = 256;      // http_max_connections
  std::size_t per_client = 64;  // http_max_connections_per_client: from one peer address
  // The last connections of `total`, kept for health checks: a connection
  // taken there may ask only for /healthz or /metrics.
  std::size_t health_reserve = 8;

  // The bounds of `total` connections (at least 1), `per_client` of them
  // from one address (0: a quarter of `total`), and a reserve of 8 for
  // health checks (a quarter of `total` when that is fewer).
  static ConnectionBounds of(std::size_t total, std::size_t per_client);
};

// What becomes of a connection just accepted.
enum class Admission {
  serve,           // any request, kept alive as usual
  health_only,     // one request, for /healthz or /metrics: the rest are taken
  refused_full,    // answered 503: the connections are all taken
  refused_client,  // answered 503: its address holds as many as one may
};

// The connections open, in all and per peer address, and the admission of
// each new one. One client (an address) may hold `per_client` at most, so
// that it cannot take every connection from the others, and the last
// `health_reserve` go only to clients that hold no other: a health check
// still gets through when many addresses together hold the rest. Not
// thread-safe: its owner locks.
class ConnectionAdmission {
 public:
  explicit ConnectionAdmission(ConnectionBounds bounds);

  // The admission of a connection from `client` (its address); a served
  // one (serve, health_only) is counted until release(client).
  Admission admit(const std::string& client);
  void release(const std::string& client);

  std::size_t open() const { return m_open; }
  const ConnectionBounds& bounds() const { return m_bounds; }

 private:
  ConnectionBounds m_bounds;
  std::size_t m_open = 0;
  std::unordered_map<std::string, std::size_t> m_by_client;  // clients holding one or more
};

// The peer address of a connected socket ("127.0.0.2", "::1"), or "" when
// the kernel does not say (a Unix socket): such connections count as one client.
std::string peer_address(int fd);

}  // namespace envcontract::daemon
