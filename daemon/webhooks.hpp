#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "report/report.hpp"

namespace envcontract::daemon {

// One receiver of the agent's transition events (agent.yaml `webhooks:`,
// docs/fleet.md).
struct WebhookTarget {
  std::string url;                              // http://host[:port]/path
  std::filesystem::path secret_file;            // the HMAC key, mode 0600
  std::chrono::milliseconds timeout{5000};      // one attempt, connect to answer
  std::chrono::milliseconds retry_delay{1000};  // before the 2nd attempt, doubled after each
  int attempts = 5;
};

struct WebhookCounters {
  std::atomic<std::int64_t> delivered{0};  // answered 2xx
  std::atomic<std::int64_t> failed{0};     // given up on after every attempt, or refused (4xx)
  std::atomic<std::int64_t> dropped{0};    // pushed out of a full queue
};

// Delivers payloads to every target, each from a bounded queue of its own on
// a thread of its own, so that neither a scan nor another receiver ever
// waits for a slow or dead one. A delivery is an HTTP POST of the JSON body
// with X-Envcontract-Timestamp: <Unix seconds of the attempt> and
// X-Envcontract-Signature: sha256=<HMAC-SHA256 of "<timestamp>.<body>" under
// the target's secret>, so that a receiver can refuse a replayed delivery
// (docs/fleet.md); a connection failure, a time-out, 429 or 5xx is retried
// with a doubling delay, any other answer is final. Of an answer only the
// status matters: past 64 KiB it is not read. When a queue is full the
// oldest payload goes (counted as dropped).
class Webhooks {
 public:
  // Reads every target's secret and checks its URL; the problems, one per line.
  static common::Result<std::unique_ptr<Webhooks>> start(std::vector<WebhookTarget> targets,
                                                         std::string user_agent,
                                                         std::size_t queue_bound = 64);
  ~Webhooks();
  Webhooks(const Webhooks&) = delete;
  Webhooks& operator=(const Webhooks&) = delete;

  // Queues `payload` for every target; never blocks.
  void post(const report::Json& payload);
  const WebhookCounters& counters() const { return m_counters; }

 private:
  struct Receiver;
  Webhooks() = default;

  WebhookCounters m_counters;
  std::vector<std::unique_ptr<Receiver>> m_receivers;
};

// "http://host:port" and "/path" of an http:// URL, or why it is not one.
struct SplitUrl {
  std::string base;
  std::string path;
};
common::Result<SplitUrl> split_webhook_url(const std::string& url);

}  // namespace envcontract::daemon
