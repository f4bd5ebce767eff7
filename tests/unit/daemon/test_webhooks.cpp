// Webhook deliveries against a real receiver on loopback: signed with the
// time (and checked by the receiver docs/fleet.md gives), answers read no
// further than 64 KiB, retried with backoff on 5xx and dead receivers, final
// on 4xx, bounded so that a slow receiver never blocks the agent; and an
// agent that posts what changed between its scans.
#include "daemon/webhooks.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "common/sha256.hpp"
#include "daemon/agent.hpp"
#include "daemon/metrics.hpp"
#include "tests/support/background_process.hpp"
#include "tests/support/empty_host.hpp"
#include "tests/support/http_client.hpp"
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

// The body as sent, its signature over the timestamp and the body checked
// by Python's hmac module (not by our own code), and the headers a receiver
// routes on.
TEST(Webhooks, DeliversTheBodySignedWithTheSecretAndTheTime) {
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
  const std::string stamp = request.headers.at("X-Envcontract-Timestamp");
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  EXPECT_LE(std::abs(now - std::stoll(stamp)), 5) << stamp;
  const auto body = dir.write("body.json", request.body);
  const auto expected = testing::run_command(
      {"/usr/bin/python3", "-c",
       "import hmac, hashlib, sys; "
       "signed = sys.argv[2].encode() + b'.' + open(sys.argv[1], 'rb').read(); "
       "print('sha256=' + hmac.new(b's3cret', signed, hashlib.sha256).hexdigest(), end='')",
       body.string(), stamp});
  ASSERT_EQ(expected.exit_code, 0) << expected.err;
  EXPECT_EQ(request.headers.at("X-Envcontract-Signature"), expected.out);
  EXPECT_EQ(webhooks->counters().delivered, 1);
}

// The receiver docs/fleet.md gives, as it is written there.
std::string documented_receiver() {
  std::ifstream doc(ENVCONTRACT_SOURCE_DIR "/docs/fleet.md");
  std::string line;
  while (std::getline(doc, line) &&
         line != "<!-- tests/unit/daemon/test_webhooks.cpp runs this receiver -->") {
  }
  std::getline(doc, line);  // ```python
  std::string script;
  while (std::getline(doc, line) && line != "```") {
    script += line + "\n";
  }
  return script;
}

// The documented receiver, run: it accepts what the agent delivers, and
// refuses the same delivery sent again, one signed ten minutes ago and one
// whose body was changed after signing.
TEST(Webhooks, TheDocumentedReceiverRefusesReplays) {
  testing::TempDir dir;
  const auto script = dir.write("receiver.py", documented_receiver());
  ASSERT_NE(documented_receiver().find("def genuine"), std::string::npos)
      << "docs/fleet.md lost its receiver";
  const auto secret = secret_file(dir, "s3cret");
  const std::string base = "http://127.0.0.1:" + std::to_string(testing::free_loopback_port());
  testing::BackgroundProcess documented(
      {"/usr/bin/python3", script.string(), secret.string(), base.substr(base.rfind(':') + 1)},
      dir.path() / "receiver.log");
  for (int i = 0; i < 500 && testing::http_get(base, "/").status == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_NE(testing::http_get(base, "/").status, 0) << documented.log();

  auto webhooks = start({target_for(base + "/envcontract", secret)});
  ASSERT_TRUE(webhooks);
  webhooks->post({{"host", "node7"}, {"scan_id", 1}, {"events", Json::array()}});
  ASSERT_TRUE(settled(webhooks->counters(), 1));
  EXPECT_EQ(webhooks->counters().delivered, 1) << documented.log();

  // A delivery recorded on its way, then sent as it was.
  WebhookReceiver tap;
  auto tapped = start({target_for(tap.url(), secret)});
  ASSERT_TRUE(tapped);
  tapped->post({{"host", "node7"}, {"scan_id", 2}, {"events", Json::array()}});
  ASSERT_TRUE(tap.wait_for(1, 5s));
  const auto recorded = tap.requests().at(0);
  const auto send = [&](const std::string& body, const std::string& stamp,
                        const std::string& signature) {
    return testing::http_post(
               base, "/envcontract", body,
               {{"X-Envcontract-Timestamp", stamp}, {"X-Envcontract-Signature", signature}})
        .status;
  };
  const std::string stamp = recorded.headers.at("X-Envcontract-Timestamp");
  const std::string signature = recorded.headers.at("X-Envcontract-Signature");
  EXPECT_EQ(send(recorded.body, stamp, signature), 204) << documented.log();
  EXPECT_EQ(send(recorded.body, stamp, signature), 401) << "a replay was accepted";

  const auto signed_at = [&](std::int64_t seconds_ago, const std::string& body) {
    const auto at = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count() -
                    seconds_ago;
    const std::string text = std::to_string(at);
    return std::make_pair(text, "sha256=" + common::hmac_sha256_hex("s3cret", text + "." + body));
  };
  const auto old = signed_at(600, recorded.body);
  EXPECT_EQ(send(recorded.body, old.first, old.second), 401) << "an old delivery was accepted";
  const auto fresh = signed_at(0, recorded.body);
  const std::string changed = R"({"host": "node7", "scan_id": 3, "events": []})";
  EXPECT_EQ(send(changed, fresh.first, fresh.second), 401) << "a changed body was accepted";
  const auto genuine = signed_at(0, changed);
  EXPECT_EQ(send(changed, genuine.first, genuine.second), 204) << documented.log();
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
  // A compose service's name, which resolvers accept: as before the HTTP
  // client changed.
  const auto underscore =
      Webhooks::start({target_for("http://alert_relay/x", secret_file(dir, "u"))}, "t");
  EXPECT_TRUE(underscore.ok()) << underscore.error();
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
  EXPECT_TRUE(split_webhook_url("http://alert_relay:9000/hook").ok());
  EXPECT_FALSE(split_webhook_url("http://-relay/hook").ok());
  EXPECT_FALSE(split_webhook_url("http://relay:0/hook").ok());
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
  ASSERT_NE(agent.webhook_counters(), nullptr);
  EXPECT_EQ(agent.webhook_counters()->delivered.load(), 1);
  const auto metrics = render_metrics(agent, "test");
  EXPECT_NE(metrics.find("envcontract_webhook_deliveries_total{outcome=\"delivered\"} 1\n"),
            std::string::npos)
      << metrics;
  agent.stop();
}

}  // namespace
}  // namespace envcontract::daemon
