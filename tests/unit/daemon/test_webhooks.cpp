// Webhook deliveries against a real receiver on loopback: signed, answers
// read no further than 64 KiB, retried with backoff on 5xx and dead
// receivers, final on 4xx, bounded so that a slow receiver never blocks the
// agent; and an agent that posts what changed between its scans.
#include "daemon/webhooks.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "daemon/agent.hpp"
#include "daemon/metrics.hpp"
#include "tests/support/empty_host.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/webhook_receiver.hpp"

namespace envcontract::daemon {
namespace {

using namespace std::chrono_literals;
using report::Json;
using testing::WebhookReceiver;

std::filesystem::path secret_file(const testing::TempDir& dir, const std::string& secret,
                                  mode_t mode = 0600) {
  const auto path = dir.write("webhook.secret", secret + "\n");
  ::chmod(path.c_str(), mode);
  return path;
}

WebhookTarget target_for(const std::string& url, const std::filesystem::path& secret) {
  WebhookTarget target;
  target.url = url;
  target.secret_file = secret;
  target.timeout = 500ms;
  target.retry_delay = 50ms;
  target.attempts = 3;
  return target;
}

std::unique_ptr<Webhooks> start(std::vector<WebhookTarget> targets, std::size_t bound = 64) {
  auto started = Webhooks::start(std::move(targets), "envcontractd/test", bound);
  EXPECT_TRUE(started.ok()) << (started.ok() ? "" : started.error());
  return started.ok() ? std::move(started.value()) : nullptr;
}

bool settled(const WebhookCounters& counters, std::int64_t total) {
  for (int i = 0; i < 500; ++i) {
    if (counters.delivered + counters.failed + counters.dropped >= total) {
      return true;
    }
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// The body as sent, its signature checked by Python's hmac module (not by
// our own code), and the headers a receiver routes on.
TEST(Webhooks, DeliversTheBodySignedWithTheSecret) {
  testing::TempDir dir;
  WebhookReceiver receiver;
  auto webhooks = start({target_for(receiver.url("/envcontract"), secret_file(dir, "s3cret"))});
  ASSERT_TRUE(webhooks);
  webhooks->post({{"host", "node7"}, {"events", Json::array({{{"kind", "host"}}})}});
  ASSERT_TRUE(receiver.wait_for(1, 5s));
  ASSERT_TRUE(settled(webhooks->counters(), 1));
  const auto request = receiver.requests().at(0);
  EXPECT_EQ(request.path, "/envcontract");
  EXPECT_EQ(Json::parse(request.body)["host"], "node7");
  EXPECT_EQ(request.headers.at("Content-Type"), "application/json");
  EXPECT_EQ(request.headers.at("X-Envcontract-Event"), "transitions");
  EXPECT_EQ(request.headers.at("User-Agent"), "envcontractd/test");
  const auto body = dir.write("body.json", request.body);
  const auto expected =
      testing::run_command({"/usr/bin/python3", "-c",
                            "import hmac, hashlib, sys; "
                            "print('sha256=' + hmac.new(b's3cret', open(sys.argv[1], 'rb').read(), "
                            "hashlib.sha256).hexdigest(), end='')",
                            body.string()});
  ASSERT_EQ(expected.exit_code, 0) << expected.err;
  EXPECT_EQ(request.headers.at("X-Envcontract-Signature"), expected.out);
  EXPECT_EQ(webhooks->counters().delivered, 1);
}

// Peak resident memory of this process, in KiB, since the last
// reset_peak_memory().
long peak_memory_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmHWM:")) {
      return std::stol(line.substr(6));
    }
  }
  return -1;
}

// Linux (4.0 on) starts the peak afresh when "5" is written here.
bool reset_peak_memory() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

// A receiver that answers 200 MB (streamed, never held by the test): the
// delivery counts by its status, the agent reads 64 KiB of the answer and
// hangs up, and its memory does not grow by the answer (reading it whole
// once took the agent from 41 MB to 850 MB).
TEST(Webhooks, AHugeAnswerIsCutNotHeld) {
  testing::TempDir dir;
  WebhookReceiver verbose;
  verbose.answer_with(std::size_t{200} << 20);
  auto webhooks = start({target_for(verbose.url(), secret_file(dir, "k"))});
  ASSERT_TRUE(webhooks);
  const bool peak_reset = reset_peak_memory();
  const long before = peak_memory_kib();
  webhooks->post({{"n", 1}});
  ASSERT_TRUE(settled(webhooks->counters(), 1));
  const long grown = peak_memory_kib() - before;
  EXPECT_EQ(webhooks->counters().delivered, 1);
  EXPECT_LT(verbose.bytes_answered(), std::size_t{32} << 20) << "the agent read on";
  if (!peak_reset) {
    GTEST_SKIP() << "/proc/self/clear_refs cannot reset the peak: memory not measured";
  }
  EXPECT_LT(grown, 50 * 1024) << "KiB of peak memory for one delivery";
}

TEST(Webhooks, RetriesServerErrorsAndStopsAtARefusal) {
  testing::TempDir dir;
  WebhookReceiver flaky({500, 503, 200});
  WebhookReceiver refusing({400});
  auto webhooks = start({target_for(flaky.url(), secret_file(dir, "k")),
                         target_for(refusing.url(), secret_file(dir, "k"))});
  ASSERT_TRUE(webhooks);
  webhooks->post({{"events", Json::array()}});
  ASSERT_TRUE(settled(webhooks->counters(), 2));
  EXPECT_EQ(flaky.requests().size(), 3U);  // 500, 503, then delivered
  EXPECT_EQ(refusing.requests().size(), 1U);
  EXPECT_EQ(webhooks->counters().delivered, 1);
  EXPECT_EQ(webhooks->counters().failed, 1);
}

// A receiver that is down or too slow costs the poster nothing: post()
// returns at once, attempts end at their time-out, a full queue drops its
// oldest payload, and every payload is accounted for.
TEST(Webhooks, ADeadOrSlowReceiverNeverBlocksThePoster) {
  testing::TempDir dir;
  WebhookReceiver slow({200}, 3s);
  auto dead = target_for("http://127.0.0.1:1/hook", secret_file(dir, "k"));
  auto sluggish = target_for(slow.url(), secret_file(dir, "k"));
  sluggish.attempts = 1;
  sluggish.timeout = 200ms;
  auto webhooks = start({dead, sluggish}, 2);
  ASSERT_TRUE(webhooks);
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 6; ++i) {
    webhooks->post({{"n", i}});
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, 500ms);
  // Each target: one in flight, two queued, the rest dropped; the others fail.
  ASSERT_TRUE(settled(webhooks->counters(), 12));
  EXPECT_EQ(webhooks->counters().delivered, 0);
  EXPECT_GE(webhooks->counters().dropped, 4);
  EXPECT_EQ(webhooks->counters().failed + webhooks->counters().dropped, 12);
}

// Stopping the agent cuts a delivery in flight: a receiver that takes its
// time to answer does not hold up the agent's stop.
TEST(Webhooks, StoppingCutsADeliveryInFlight) {
  testing::TempDir dir;
  WebhookReceiver slow({200}, 3s);
  auto patient = target_for(slow.url(), secret_file(dir, "k"));
  patient.timeout = 30s;
  auto webhooks = start({patient});
  ASSERT_TRUE(webhooks);
  webhooks->post({{"n", 1}});
  ASSERT_TRUE(slow.wait_for(1, 5s));
  const auto stopping = std::chrono::steady_clock::now();
  webhooks.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, 2s);
}

TEST(Webhooks, BadTargetsAreRefusedWithWhatToDo) {
  testing::TempDir dir;
  const auto https = Webhooks::start(
      {target_for("https://alerts.example/x", secret_file(dir, "k"))}, "envcontractd/test");
  ASSERT_FALSE(https.ok());
  EXPECT_NE(https.error().find("https is not supported"), std::string::npos) << https.error();
  const auto open_secret = Webhooks::start(
      {target_for("http://127.0.0.1:9/x", secret_file(dir, "k", 0644))}, "envcontractd/test");
  ASSERT_FALSE(open_secret.ok());
  EXPECT_NE(open_secret.error().find("is readable by others (mode 0644); run: chmod 600"),
            std::string::npos)
      << open_secret.error();
  // A link is followed, and the file it reaches is judged: it must belong to
  // the agent's user and be private to it.
  const auto link = dir.path() / "secret-link";
  std::filesystem::create_symlink(secret_file(dir, "k"), link);
  EXPECT_TRUE(Webhooks::start({target_for("http://127.0.0.1:9/x", link)}, "t").ok());
  if (::geteuid() == 0) {
    const auto others = secret_file(dir, "k");
    ASSERT_EQ(::chown(others.c_str(), 65534, 65534), 0);
    const auto owned = Webhooks::start({target_for("http://127.0.0.1:9/x", link)}, "t");
    ASSERT_FALSE(owned.ok());
    EXPECT_NE(owned.error().find("belongs to uid 65534, not to the agent's user"),
              std::string::npos)
        << owned.error();
  }
  EXPECT_FALSE(split_webhook_url("http:///path").ok());
  EXPECT_FALSE(split_webhook_url("ftp://host/x").ok());
  EXPECT_EQ(split_webhook_url("http://a:9/b/c").value().base, "http://a:9");
  EXPECT_EQ(split_webhook_url("http://a:9/b/c").value().path, "/b/c");
  EXPECT_EQ(split_webhook_url("http://a").value().path, "/");
}

// The agent: its first scan tells the receiver the host's state; a scan that
// changes nothing tells it nothing; the metrics count the delivery.
TEST(Webhooks, TheAgentPostsWhatChangedBetweenItsScans) {
  testing::TempDir dir;
  WebhookReceiver receiver;
  auto config = testing::empty_host_agent_config(dir, 1h);
  config.webhooks = {target_for(receiver.url(), secret_file(dir, "k"))};
  Agent agent(config);
  ASSERT_EQ(agent.start(), "");
  ASSERT_TRUE(receiver.wait_for(1, 20s));
  const auto first = Json::parse(receiver.requests().at(0).body);
  EXPECT_EQ(first["events"], Json::array({{{"kind", "host"}, {"from", nullptr}, {"to", "drift"}}}))
      << first;
  EXPECT_EQ(first["contract"], "t");
  EXPECT_TRUE(first["scan_id"].is_number_integer()) << first;

  const auto ticket = agent.request_scan("test");
  for (int i = 0; i < 500 && agent.ticket(ticket)->state != "done"; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(agent.ticket(ticket)->state, "done");
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(receiver.requests().size(), 1U);
  const auto metrics =
      render_metrics(*agent.snapshot(), agent.counters(), "test", agent.webhook_counters());
  EXPECT_NE(metrics.find("envcontract_webhook_deliveries_total{outcome=\"delivered\"} 1\n"),
            std::string::npos)
      << metrics;
  agent.stop();
}

}  // namespace
}  // namespace envcontract::daemon
