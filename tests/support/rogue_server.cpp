#include "tests/support/rogue_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>

namespace envcontract::testing {
namespace {

bool send_all(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      return false;
    }
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads the request head (until a blank line), or gives up after a while.
void read_request(int fd) {
  std::string head;
  char buffer[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 65536) {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, 2000) <= 0) {
      return;
    }
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) {
      return;
    }
    head.append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace

RogueServer::RogueServer(Behaviour behaviour) : m_behaviour(behaviour) {
  m_listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (m_listener < 0 ||
      ::bind(m_listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(m_listener, 16) != 0 ||
      ::getsockname(m_listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw std::runtime_error("rogue server: cannot listen on 127.0.0.1");
  }
  m_port = ntohs(address.sin_port);
  m_thread = std::thread([this] { serve(); });
}

RogueServer::~RogueServer() {
  m_stopping = true;
  ::shutdown(m_listener, SHUT_RDWR);
  m_thread.join();
  for (auto& client : m_clients) {
    client.join();
  }
  ::close(m_listener);
}

void RogueServer::serve() {
  while (!m_stopping) {
    pollfd pfd{m_listener, POLLIN, 0};
    if (::poll(&pfd, 1, 100) <= 0) {
      continue;
    }
    const int client = ::accept4(m_listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      continue;
    }
    m_clients.emplace_back([this, client] {
      answer(client);
      ::close(client);
    });
  }
}

void RogueServer::answer(int client) {
  read_request(client);
  const auto until_stopped = [&](std::chrono::milliseconds step, auto&& each) {
    while (!m_stopping) {
      if (!each()) {
        return;
      }
      std::this_thread::sleep_for(step);
    }
  };
  switch (m_behaviour) {
    case Behaviour::invalid_json:
      send_all(client,
               "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n"
               "Connection: close\r\n\r\n{\"verdict\": dri");
      break;
    case Behaviour::not_a_report:
      send_all(client,
               "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 17\r\n"
               "Connection: close\r\n\r\n{\"status\": \"ok\"}\n");
      break;
    case Behaviour::html_not_found:
      send_all(client,
               "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 22\r\n"
               "Connection: close\r\n\r\n<h1>404 Not Found</h1>");
      break;
    case Behaviour::silent:
      until_stopped(std::chrono::milliseconds(50), [] { return true; });
      break;
    case Behaviour::drip: {
      const std::string status = "HTTP/1.1 200 OK\r\nX-Slow: ";
      std::size_t at = 0;
      until_stopped(std::chrono::milliseconds(1000),
                    [&] { return send_all(client, std::string(1, status[at++ % status.size()])); });
      break;
    }
    case Behaviour::deep: {
      // Parsed, such a value is fine; copied, compared or serialised, each
      // level is a stack frame, and 100,000 of them overflow the stack.
      const std::size_t levels = 100'000;
      const std::string body = R"({"schema_version": 1, "verdict": "drift", "envs": )" +
                               std::string(levels, '[') + std::string(levels, ']') + "}";
      send_all(client, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                           std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
      break;
    }
    case Behaviour::huge: {
      if (!send_all(client,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    "Content-Length: 2147483648\r\nConnection: close\r\n\r\n[")) {
        break;
      }
      const std::string chunk(1 << 16, ' ');
      while (!m_stopping && send_all(client, chunk)) {
        m_sent += chunk.size();
        if (m_sent.load() >= (std::size_t{2} << 30)) {
          break;
        }
      }
      break;
    }
  }
}

}  // namespace envcontract::testing
