#include "tests/support/loopback_http.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <tuple>
#include <utility>

namespace envcontract::testing {

std::pair<int, int> bound_loopback_socket() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) {
      ::close(fd);
    }
    throw std::runtime_error("cannot bind a socket on 127.0.0.1");
  }
  return {fd, ntohs(address.sin_port)};
}

LoopbackListener::LoopbackListener(std::function<void(int client)> serve)
    : m_serve(std::move(serve)) {
  std::tie(m_listener, m_port) = bound_loopback_socket();
  if (::listen(m_listener, 64) != 0) {
    ::close(m_listener);
    throw std::runtime_error("cannot listen on 127.0.0.1");
  }
  m_thread = std::thread([this] { accept_loop(); });
}

LoopbackListener::~LoopbackListener() {
  m_stopping = true;
  m_thread.join();
  ::close(m_listener);
}

std::string LoopbackListener::address() const {
  return "127.0.0.1:" + std::to_string(m_port);
}

void LoopbackListener::accept_loop() {
  while (!m_stopping) {
    // Woken every 50 ms to see whether the test is done with it.
    pollfd listening{m_listener, POLLIN, 0};
    if (::poll(&listening, 1, 50) <= 0) {
      continue;
    }
    const int client = ::accept4(m_listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client >= 0) {
      m_serve(client);
      ::close(client);
    }
  }
}

ThreadedLoopbackListener::ThreadedLoopbackListener(std::function<void(int client)> serve,
                                                   std::function<void()> on_stop)
    : m_serve(std::move(serve)), m_on_stop(std::move(on_stop)) {
  // A dup of each connection: the listener closes its own once this returns.
  m_listener.emplace([this](int accepted) {
    const int client = ::dup(accepted);
    if (client >= 0) {
      m_clients.emplace_back([this, client] {
        m_serve(client);
        ::close(client);
      });
    }
  });
}

ThreadedLoopbackListener::~ThreadedLoopbackListener() {
  m_listener.reset();  // no connection accepted after this
  m_on_stop();
  for (auto& client : m_clients) {
    client.join();
  }
}

AnsweringServer::AnsweringServer(int status, std::string body)
    : m_status(status), m_body(std::move(body)) {}

void AnsweringServer::answer(int status, std::string body) {
  std::lock_guard lock(m_mutex);
  m_status = status;
  m_body = std::move(body);
}

std::vector<std::string> AnsweringServer::heads() const {
  std::lock_guard lock(m_mutex);
  return m_heads;
}

std::vector<std::string> AnsweringServer::request_lines() const {
  std::vector<std::string> lines;
  for (const auto& head : heads()) {
    lines.push_back(head.substr(0, head.find("\r\n")));
  }
  return lines;
}

void AnsweringServer::respond(int client) {
  const auto head = read_request_head(client);
  if (!head) {
    return;
  }
  std::string response;
  {
    std::lock_guard lock(m_mutex);
    m_heads.push_back(head->substr(0, head->find("\r\n\r\n")));
    response = http_answer(m_status, m_body);
  }
  send_all(client, response);
}

std::optional<std::string> read_request_head(int client) {
  std::string head;
  char buffer[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 65536) {
    pollfd readable{client, POLLIN, 0};
    if (::poll(&readable, 1, 2000) <= 0) {
      return std::nullopt;
    }
    const ssize_t got = ::recv(client, buffer, sizeof buffer, 0);
    if (got <= 0) {
      return std::nullopt;
    }
    head.append(buffer, static_cast<std::size_t>(got));
  }
  return head;
}

bool send_all(int client, std::string_view bytes) {
  for (std::size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(client, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      return false;
    }
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

std::string http_answer(int status, const std::string& body, const std::string& extra_headers) {
  return "HTTP/1.1 " + std::to_string(status) + " Answer\r\nContent-Type: application/json\r\n" +
         extra_headers + "Content-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

std::string address_nobody_listens_on() {
  const auto [fd, port] = bound_loopback_socket();
  ::close(fd);
  return "127.0.0.1:" + std::to_string(port);
}

}  // namespace envcontract::testing
