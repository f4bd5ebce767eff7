#include "tests/support/webhook_receiver.hpp"

#include <httplib.h>

#include <algorithm>
#include <stdexcept>

namespace envcontract::testing {

struct WebhookReceiver::Server {
  httplib::Server http;
  std::vector<int> statuses;
  std::chrono::milliseconds delay{0};
  mutable std::mutex mutex;
  std::vector<Request> requests;
  std::atomic<std::size_t> answer_bytes{0};  // 0: "{}"
  std::atomic<std::size_t> answered{0};
};

WebhookReceiver::WebhookReceiver(std::vector<int> statuses, std::chrono::milliseconds delay)
    : m_server(std::make_unique<Server>()) {
  m_server->statuses = std::move(statuses);
  m_server->delay = delay;
  auto* server = m_server.get();
  server->http.Post(".*", [server](const httplib::Request& request, httplib::Response& response) {
    std::size_t index = 0;
    {
      std::lock_guard lock(server->mutex);
      Request kept{request.path, {}, request.body};
      for (const auto& [name, value] : request.headers) {
        kept.headers[name] = value;
      }
      server->requests.push_back(std::move(kept));
      index = server->requests.size() - 1;
    }
    std::this_thread::sleep_for(server->delay);
    response.status = server->statuses.empty()
                          ? 200
                          : server->statuses[std::min(index, server->statuses.size() - 1)];
    const std::size_t size = server->answer_bytes.load();
    if (size == 0) {
      response.set_content("{}", "application/json");
      return;
    }
    response.set_content_provider(
        size, "application/octet-stream",
        [server](std::size_t, std::size_t length, httplib::DataSink& sink) {
          static const std::string chunk(64 * 1024, 'x');
          const std::size_t part = std::min(length, chunk.size());
          if (!sink.write(chunk.data(), part)) {
            return false;  // the client hung up
          }
          server->answered += part;
          return true;
        });
  });
  m_port = server->http.bind_to_any_port("127.0.0.1");
  if (m_port <= 0) {
    throw std::runtime_error("the webhook receiver cannot listen on 127.0.0.1");
  }
  m_thread = std::thread([server] { server->http.listen_after_bind(); });
  for (int waited = 0; !server->http.is_running(); ++waited) {
    if (waited > 5000) {
      throw std::runtime_error("the webhook receiver did not start listening");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

WebhookReceiver::~WebhookReceiver() {
  m_server->http.stop();
  m_thread.join();
}

void WebhookReceiver::answer_with(std::size_t bytes) {
  m_server->answer_bytes = bytes;
}

std::size_t WebhookReceiver::bytes_answered() const {
  return m_server->answered.load();
}

std::string WebhookReceiver::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(m_port) + path;
}

std::vector<WebhookReceiver::Request> WebhookReceiver::requests() const {
  std::lock_guard lock(m_server->mutex);
  return m_server->requests;
}

bool WebhookReceiver::wait_for(std::size_t count, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (requests().size() >= count) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return requests().size() >= count;
}

}  // namespace envcontract::testing
