#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace envcontract::testing {

// A datagram socket standing where systemd's notify socket stands: set as
// NOTIFY_SOCKET for this process (and the agents it starts) while it lives,
// it receives what sd_notify() sends.
class NotifySocket {
 public:
  explicit NotifySocket(const std::filesystem::path& path);
  ~NotifySocket();
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  // The messages received within `timeout` (one per datagram), waiting no
  // longer once `enough` returns true for what has come so far.
  std::vector<std::string> receive(
      std::chrono::milliseconds timeout,
      const std::function<bool(const std::vector<std::string>&)>& enough = nullptr);

 private:
  std::filesystem::path m_path;
  int m_fd = -1;
};

// How many of `messages` are exactly `text`, and whether one starts with `prefix`.
std::size_t count_messages(const std::vector<std::string>& messages, const std::string& text);
bool has_message_starting(const std::vector<std::string>& messages, const std::string& prefix);

}  // namespace envcontract::testing
