#include "daemon/connection_admission.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>

namespace envcontract::daemon {

namespace {

// Health checks open a connection or two at a time: eight leave room for a
// few checkers at once without taking much from everyone else.
constexpr std::size_t k_health_reserve = 8;

}  // namespace

ConnectionBounds ConnectionBounds::of(std::size_t total, std::size_t per_client) {
  ConnectionBounds bounds;
  bounds.total = std::max<std::size_t>(1, total);
  bounds.per_client = per_client > 0 ? per_client : std::max<std::size_t>(1, bounds.total / 4);
  bounds.health_reserve = std::min(k_health_reserve, bounds.total / 4);
  return bounds;
}

ConnectionAdmission::ConnectionAdmission(ConnectionBounds bounds) : m_bounds(bounds) {}

Admission ConnectionAdmission::admit(const std::string& client) {
  if (m_open >= m_bounds.total) {
    return Admission::refused_full;
  }
  const auto held = m_by_client.find(client);
  const std::size_t holding = held == m_by_client.end() ? 0 : held->second;
  if (holding >= m_bounds.per_client) {
    return Admission::refused_client;
  }
  Admission admission = Admission::serve;
  if (m_open >= m_bounds.total - m_bounds.health_reserve) {
    // A client that holds a connection already can ask on it: the reserve
    // is for those that hold none, or the many addresses holding the rest
    // would take it as well.
    if (holding > 0) {
      return Admission::refused_full;
    }
    admission = Admission::health_only;
  }
  ++m_open;
  ++m_by_client[client];
  return admission;
}

void ConnectionAdmission::release(const std::string& client) {
  const auto held = m_by_client.find(client);
  if (held == m_by_client.end()) {
    return;  // never admitted: a bug, but not one worth a wrong count
  }
  --m_open;
  if (--held->second == 0) {
    m_by_client.erase(held);
  }
}

std::string peer_address(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return "";
  }
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
  } else if (address.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
  }
  return text;
}

}  // namespace envcontract::daemon
