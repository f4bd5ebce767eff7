#include "tests/support/notify_socket.hpp"

#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace envcontract::testing {

NotifySocket::NotifySocket(const std::filesystem::path& path) : m_path(path) {
  m_fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (m_fd < 0 || path.string().size() >= sizeof address.sun_path) {
    throw std::runtime_error("cannot make a notify socket at " + path.string());
  }
  std::strcpy(address.sun_path, path.c_str());
  if (::bind(m_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    throw std::runtime_error("cannot bind " + path.string() + ": " + std::strerror(errno));
  }
  ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
}

NotifySocket::~NotifySocket() {
  ::unsetenv("NOTIFY_SOCKET");
  ::close(m_fd);
  std::error_code ignored;
  std::filesystem::remove(m_path, ignored);
}

std::vector<std::string> NotifySocket::receive(
    std::chrono::milliseconds timeout,
    const std::function<bool(const std::vector<std::string>&)>& enough) {
  std::vector<std::string> messages;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (enough && enough(messages)) {
      return messages;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    pollfd descriptor{m_fd, POLLIN, 0};
    if (left <= 0 || ::poll(&descriptor, 1, static_cast<int>(left)) <= 0) {
      return messages;
    }
    char buffer[4096];
    const auto got = ::recv(m_fd, buffer, sizeof buffer, 0);
    if (got > 0) {
      // sd_notify may put several assignments in one datagram, one per line.
      std::string text(buffer, static_cast<std::size_t>(got));
      std::size_t start = 0;
      while (start < text.size()) {
        const auto end = text.find('\n', start);
        messages.push_back(text.substr(start, end - start));
        start = end == std::string::npos ? text.size() : end + 1;
      }
    }
  }
}

std::size_t count_messages(const std::vector<std::string>& messages, const std::string& text) {
  return static_cast<std::size_t>(std::count(messages.begin(), messages.end(), text));
}

bool has_message_starting(const std::vector<std::string>& messages, const std::string& prefix) {
  return std::any_of(messages.begin(), messages.end(),
                     [&](const auto& message) { return message.starts_with(prefix); });
}

}  // namespace envcontract::testing
