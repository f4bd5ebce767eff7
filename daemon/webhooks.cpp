#include "daemon/webhooks.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "common/json_text.hpp"
#include "common/sha256.hpp"
#include "daemon/secret_file.hpp"
#include "fleet/host_address.hpp"
#include "fleet/http_exchange.hpp"

namespace envcontract::daemon {

namespace {

// Where "http://host[:port]" connects: port 80 unless one is given (the
// agents' default port, which fleet::parse_host_address assumes, is not a
// receiver's). A receiver's name may hold '_' (a compose service's, which
// resolvers accept though DNS names may not), unlike an agent's.
std::optional<fleet::HostAddress> address_of(const std::string& base) {
  const std::string authority = base.substr(std::string_view("http://").size());
  const auto colon = authority.rfind(':');
  const auto bracket = authority.rfind(']');
  const bool has_port =
      colon != std::string::npos && (bracket == std::string::npos || colon > bracket);
  std::string checked = authority;
  std::replace(checked.begin(), checked.end(), '_', 'u');
  auto address = fleet::parse_host_address(has_port ? checked : checked + ":80");
  if (address) {
    // The same characters but for '_': the name as written.
    address->host = authority.substr(authority.starts_with('[') ? 1 : 0, address->host.size());
    address->text = base;
  }
  return address;
}

}  // namespace

common::Result<SplitUrl> split_webhook_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.starts_with("https://")) {
    return common::Error{"webhook URL " + url +
                         ": https is not supported (the agent is built without TLS); use "
                         "http:// to a receiver on a trusted network, or a local relay"};
  }
  if (!url.starts_with(scheme)) {
    return common::Error{"webhook URL " + url + " must start with http://"};
  }
  const auto slash = url.find('/', scheme.size());
  SplitUrl split{url.substr(0, slash), slash == std::string::npos ? "/" : url.substr(slash)};
  if (split.base.size() == scheme.size() ||
      split.base.find_first_of(" @\r\n\t") != std::string::npos ||
      split.path.find_first_of(" \r\n\t") != std::string::npos || !address_of(split.base)) {
    return common::Error{"webhook URL " + url + " is not http://HOST[:PORT]/PATH"};
  }
  return split;
}

namespace {

// More than any receiver needs to say: the agent reads only the status.
constexpr std::size_t k_max_answer_bytes = 64 * 1024;

struct AttemptOutcome {
  int status = 0;     // 0: no HTTP answer
  std::string error;  // why there is none
};

}  // namespace

struct Webhooks::Receiver {
  WebhookTarget target;
  SplitUrl url;
  fleet::HostAddress address;  // of url.base
  std::string secret;
  std::string user_agent;
  std::size_t bound = 0;
  WebhookCounters* counters = nullptr;

  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::string> queue;
  bool stopping = false;
  // Cuts the attempt in flight when the agent stops, and any after it.
  fleet::ExchangeCancellation cancellation;
  std::thread thread;

  void enqueue(const std::string& body) {
    {
      std::lock_guard lock(mutex);
      if (queue.size() >= bound) {
        queue.pop_front();
        ++counters->dropped;
        spdlog::warn("webhook {}: {} deliveries waiting; the oldest is dropped", target.url, bound);
      }
      queue.push_back(body);
    }
    wake.notify_one();
  }

  void run() {
    std::unique_lock lock(mutex);
    while (true) {
      wake.wait(lock, [&] { return stopping || !queue.empty(); });
      if (stopping) {
        if (!queue.empty()) {
          spdlog::warn("webhook {}: {} deliveries not made: the agent stops", target.url,
                       queue.size());
        }
        return;
      }
      const std::string body = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      deliver(body);
      lock.lock();
    }
  }

  // Waits `delay` unless the agent stops; false when it stops.
  bool pause(std::chrono::milliseconds delay) {
    std::unique_lock lock(mutex);
    return !wake.wait_for(lock, delay, [&] { return stopping; });
  }

  // One attempt, bounded as a whole by the target's time-out (a receiver
  // that drips its answer is cut there): the answer's status, or why there
  // is none; nothing when the agent stops first. Only the first
  // k_max_answer_bytes of the answer are read: the agent needs its status
  // alone, and a receiver that answers gigabytes must not cost the agent
  // their memory (an 800 MB answer once took it from 41 MB to 850 MB).
  std::optional<AttemptOutcome> attempt_delivery(const std::string& body) {
    fleet::ExchangeBounds bounds;
    bounds.deadline = target.timeout;
    bounds.max_body_bytes = k_max_answer_bytes;
    const auto answer = fleet::http_exchange(signed_request(body), bounds, &cancellation);
    if (answer.failure == fleet::ExchangeFailure::cancelled) {
      return std::nullopt;
    }
    if (answer.body_cut()) {
      // Its head was read: the status counts.
      spdlog::warn("webhook {}: the receiver's answer is longer than {} KiB; read no further",
                   target.url, k_max_answer_bytes >> 10);
    }
    if (answer.status > 0) {
      return AttemptOutcome{answer.status, ""};
    }
    return AttemptOutcome{0, answer.error};
  }

  // Signed at each attempt, so that a retry late in the backoff still falls
  // inside the receiver's replay window.
  fleet::ExchangeRequest signed_request(const std::string& body) const {
    const std::string timestamp =
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count());
    fleet::ExchangeRequest request;
    request.host = address.host;
    request.port = address.port;
    request.method = "POST";
    request.target = url.path;
    request.headers = {{"X-Envcontract-Timestamp", timestamp},
                       {"X-Envcontract-Signature",
                        "sha256=" + common::hmac_sha256_hex(secret, timestamp + "." + body)},
                       {"X-Envcontract-Event", "transitions"},
                       {"User-Agent", user_agent},
                       {"Content-Type", "application/json"}};
    request.body = body;
    return request;
  }

  void deliver(const std::string& body) {
    auto delay = target.retry_delay;
    std::string last;
    for (int attempt = 1; attempt <= target.attempts; ++attempt) {
      const auto outcome = attempt_delivery(body);
      if (!outcome) {
        return;
      }
      if (outcome->status >= 200 && outcome->status < 300) {
        ++counters->delivered;
        return;
      }
      const bool retry = outcome->status == 0 || outcome->status == 429 || outcome->status >= 500;
      last = outcome->status != 0 ? "answered " + std::to_string(outcome->status)
                                  : "failed: " + outcome->error;
      if (!retry) {
        break;
      }
      if (attempt < target.attempts) {
        spdlog::info("webhook {}: attempt {} {}; trying again in {} ms", target.url, attempt, last,
                     delay.count());
        if (!pause(delay)) {
          return;
        }
        delay *= 2;
      }
    }
    ++counters->failed;
    spdlog::error("webhook {}: delivery given up ({}); the receiver missed one transition",
                  target.url, last);
  }
};

common::Result<std::unique_ptr<Webhooks>> Webhooks::start(std::vector<WebhookTarget> targets,
                                                          std::string user_agent,
                                                          std::size_t queue_bound) {
  std::unique_ptr<Webhooks> webhooks(new Webhooks());
  std::string problems;
  for (auto& target : targets) {
    auto url = split_webhook_url(target.url);
    auto secret = read_secret_file(target.secret_file, "webhook secret file");
    if (!url || !secret) {
      problems += (problems.empty() ? "" : "\n") + (!url ? url.error() : secret.error());
      continue;
    }
    auto receiver = std::make_unique<Receiver>();
    receiver->target = std::move(target);
    receiver->url = url.value();
    receiver->address = address_of(url.value().base).value();  // split_webhook_url checked it
    receiver->secret = std::move(secret.value());
    receiver->user_agent = user_agent;
    receiver->bound = std::max<std::size_t>(1, queue_bound);
    receiver->counters = &webhooks->m_counters;
    webhooks->m_receivers.push_back(std::move(receiver));
  }
  if (!problems.empty()) {
    return common::Error{problems};
  }
  for (auto& receiver : webhooks->m_receivers) {
    receiver->thread = std::thread([raw = receiver.get()] { raw->run(); });
  }
  return webhooks;
}

Webhooks::~Webhooks() {
  for (auto& receiver : m_receivers) {
    {
      std::lock_guard lock(receiver->mutex);
      receiver->stopping = true;
    }
    // A receiver that dribbles its answer must not hold up the agent's stop.
    receiver->cancellation.cancel();
    receiver->wake.notify_all();
  }
  for (auto& receiver : m_receivers) {
    if (receiver->thread.joinable()) {
      receiver->thread.join();
    }
  }
}

void Webhooks::post(const report::Json& payload) {
  const std::string body = common::json_text(payload);
  for (auto& receiver : m_receivers) {
    receiver->enqueue(body);
  }
}

}  // namespace envcontract::daemon
