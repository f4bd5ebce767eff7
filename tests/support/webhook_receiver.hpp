#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace envcontract::testing {

// A real HTTP receiver on 127.0.0.1 for webhook tests: answers POSTs with
// the statuses it is given in turn (the last one repeated), after `delay`,
// and keeps every request it got.
class WebhookReceiver {
 public:
  struct Request {
    std::string path;
    std::map<std::string, std::string> headers;
    std::string body;
  };

  explicit WebhookReceiver(std::vector<int> statuses = {200},
                           std::chrono::milliseconds delay = std::chrono::milliseconds(0));
  ~WebhookReceiver();
  WebhookReceiver(const WebhookReceiver&) = delete;
  WebhookReceiver& operator=(const WebhookReceiver&) = delete;

  // From now on answers with `bytes` of generated body, streamed as the
  // client reads it (never held in memory), instead of "{}".
  void answer_with(std::size_t bytes);
  // Bytes of answers the client has taken so far.
  std::size_t bytes_answered() const;

  std::string url(const std::string& path = "/hook") const;
  std::vector<Request> requests() const;
  // Waits until `count` requests have come, or `timeout` passes.
  bool wait_for(std::size_t count, std::chrono::milliseconds timeout) const;

 private:
  struct Server;
  std::unique_ptr<Server> m_server;
  std::thread m_thread;
  int m_port = 0;
};

}  // namespace envcontract::testing
