#pragma once

#include <atomic>
#include <thread>
#include <vector>

namespace envcontract::testing {

// An HTTP server on 127.0.0.1 that misbehaves on purpose, to test that
// clients give a clear error in time instead of hanging or crashing.
class RogueServer {
 public:
  enum class Behaviour {
    invalid_json,    // 200 with a body that is not JSON
    not_a_report,    // 200 with JSON that is not a report
    html_not_found,  // 404 with an HTML page
    silent,          // accepts, reads, never answers
    drip,            // sends the status line one byte a second
    huge,            // 200 claiming 2 GiB, and sending as fast as it can
    deep,            // 200 with a report whose envs nest 100,000 arrays deep
  };

  explicit RogueServer(Behaviour behaviour);
  ~RogueServer();
  RogueServer(const RogueServer&) = delete;
  RogueServer& operator=(const RogueServer&) = delete;

  int port() const { return m_port; }
  // Bytes the huge server managed to send before the client hung up.
  std::size_t bytes_sent() const { return m_sent.load(); }

 private:
  void serve();
  void answer(int client);

  Behaviour m_behaviour;
  int m_listener = -1;
  int m_port = 0;
  std::atomic<bool> m_stopping{false};
  std::atomic<std::size_t> m_sent{0};
  std::vector<std::thread> m_clients;
  std::thread m_thread;
};

}  // namespace envcontract::testing
