// The fleet view over 1,000 hosts: a synthetic day of a fleet's series
// (what 1,000 agents export: up, verdicts, info, envs, failing checks),
// written as OpenMetrics, turned into TSDB blocks by promtool and served by
// a real Prometheus. The view answers every count and filter, keeps what is
// known of hosts that went down before it started, draws a chart that fits
// the day and follows the filters, and a page that reads at that size
// (screenshot: test-artifacts/fleet-1000.png).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <regex>
#include <sstream>
#include <thread>

#include "common/json_text.hpp"
#include "tests/e2e/agent_fixture.hpp"
#include "tests/e2e/documented_alertmanager.hpp"
#include "tests/support/background_process.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/prometheus_api.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/webhook_receiver.hpp"

namespace envcontract {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* k_prometheus = "/usr/bin/prometheus";
constexpr const char* k_promtool = "/usr/bin/promtool";
constexpr const char* k_alertmanager = "/usr/bin/prometheus-alertmanager";
constexpr int k_hosts = 1000;
constexpr long k_minute = 60;
constexpr long k_hour = 60 * k_minute;

// One synthetic host of the fleet, and what it was at any time of the day.
struct SyntheticHost {
  int index;
  long now;

  std::string instance() const {
    char name[32];
    std::snprintf(name, sizeof name, "node-%04d:9714", index);
    return name;
  }
  std::string platform() const {
    const int slot = index % 10;
    return slot < 4 ? "kunlunxin" : slot < 7 ? "ascend" : slot < 9 ? "mthreads" : "iluvatar";
  }
  // Its agent stopped answering an hour ago.
  bool down() const { return index % 37 == 5; }
  bool answered_at(long t) const { return !down() || t <= now - k_hour; }
  // A device op that spins: since two hours ago.
  bool hangs_at(long t) const { return index % 50 == 7 && t > now - 2 * k_hour; }
  // A CUDA torch in a CPU-torch contract, all day.
  bool cuda_build() const { return index % 10 == 3; }
  // An image left behind by the last push, six hours ago.
  bool old_image_at(long t) const { return index % 25 == 11 && t > now - 6 * k_hour; }
  // A bad push on the ascend hosts, rolled back after two hours.
  bool bad_push_at(long t) const {
    return platform() == "ascend" && t > now - 10 * k_hour && t < now - 8 * k_hour;
  }
  bool drifts_at(long t) const {
    return hangs_at(t) || cuda_build() || old_image_at(t) || bad_push_at(t);
  }
};

// The series of the whole fleet as OpenMetrics, a sample every 4 minutes
// (queries look back 5): over the last 12 hours for `up` and the verdict
// the host had (what the chart asks), and over the last 80 minutes and the
// next 12 for everything an agent exports. Agents export a 0 for the other
// verdicts too; the recent samples do, so that a host's last verdict is its
// last one; the older ones leave them out, to keep the file small.
std::string synthetic_fleet(long now) {
  std::vector<long> day;
  for (long t = now - 12 * k_hour; t < now - 80 * k_minute; t += 4 * k_minute) {
    day.push_back(t);
  }
  std::vector<long> recent;
  for (long t = day.back() + 4 * k_minute; t <= now + 12 * k_minute; t += 4 * k_minute) {
    recent.push_back(t);
  }
  std::vector<long> all = day;
  all.insert(all.end(), recent.begin(), recent.end());
  std::vector<SyntheticHost> hosts;
  for (int i = 0; i < k_hosts; ++i) {
    hosts.push_back({i, now});
  }
  std::ostringstream out;
  const auto labels = [](const SyntheticHost& host, const std::string& more) {
    return "{instance=\"" + host.instance() + "\",job=\"envcontract\"" + more + "}";
  };
  out << "# TYPE up gauge\n";
  for (const auto& host : hosts) {
    for (const long t : all) {
      out << "up" << labels(host, "") << " " << (host.answered_at(t) ? 1 : 0) << " " << t << "\n";
    }
  }
  out << "# TYPE envcontract_host_verdict gauge\n";
  for (const auto& host : hosts) {
    for (const char* verdict : {"compliant", "drift", "error"}) {
      for (const long t : all) {
        const bool is = std::string(verdict) == (host.drifts_at(t) ? "drift" : "compliant");
        if (host.answered_at(t) && (is || t >= recent.front())) {
          out << "envcontract_host_verdict"
              << labels(host, ",verdict=\"" + std::string(verdict) + "\"") << " " << (is ? 1 : 0)
              << " " << t << "\n";
        }
      }
    }
  }
  const auto recent_series = [&](const char* family, const auto& write) {
    out << "# TYPE " << family << " gauge\n";
    for (const auto& host : hosts) {
      for (const long t : recent) {
        if (host.answered_at(t)) {
          write(host, t);
        }
      }
    }
  };
  recent_series("envcontract_info", [&](const SyntheticHost& host, long t) {
    out << "envcontract_info"
        << labels(host, ",contract=\"" + host.platform() + "\",contract_sha256=\"0\",image=\"" +
                            "harbor.example/flagos-runtime/flagos-runtime-" + host.platform() +
                            (host.old_image_at(t) ? ":2.1.2" : ":2.2.0") + "\",platform=\"" +
                            host.platform() + "\",version=\"0.1.0\"")
        << " 1 " << t << "\n";
  });
  recent_series("envcontract_last_scan_timestamp_seconds", [&](const SyntheticHost& host, long t) {
    out << "envcontract_last_scan_timestamp_seconds" << labels(host, "") << " " << t - 60 << " "
        << t << "\n";
  });
  recent_series("envcontract_env_compliant", [&](const SyntheticHost& host, long t) {
    for (const char* env : {"torch-fl", "vllm", "hf-test", "base"}) {
      const bool failing =
          std::string(env) == "torch-fl" && (host.hangs_at(t) || host.cuda_build());
      out << "envcontract_env_compliant" << labels(host, ",env=\"" + std::string(env) + "\"") << " "
          << (failing ? 0 : 1) << " " << t << "\n";
    }
  });
  recent_series("envcontract_check_failing", [&](const SyntheticHost& host, long t) {
    const auto failing = [&](const std::string& where, const char* check, const char* cause) {
      out << "envcontract_check_failing"
          << labels(host, ",cause=\"" + std::string(cause) + "\",check=\"" + check + "\"," + where +
                              ",severity=\"required\",status=\"fail\"")
          << " 1 " << t << "\n";
    };
    if (host.hangs_at(t)) {
      failing("env=\"torch-fl\"", "first-device-op", "hang");
    }
    if (host.cuda_build()) {
      failing("env=\"torch-fl\"", "torch-cpu-build", "cuda_build");
    }
    if (host.old_image_at(t)) {
      failing("target=\"ci\"", "image", "image_mismatch");
    }
  });
  out << "# EOF\n";
  return out.str();
}

long unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int total(const Json& point) {
  return point["compliant"].get<int>() + point["drift"].get<int>() + point["error"].get<int>() +
         point["down"].get<int>();
}

std::string loopback_url() {
  return "http://127.0.0.1:" + std::to_string(free_loopback_port());
}

// A real Prometheus on dir/prometheus.yml and dir/tsdb, and the fleet view
// over it, keeping `history` for its chart.
struct PrometheusWithView {
  PrometheusWithView(const fs::path& dir, const std::string& history)
      : prometheus_url(loopback_url()),
        view_url(loopback_url()),
        prometheus({k_prometheus, "--config.file=" + (dir / "prometheus.yml").string(),
                    "--storage.tsdb.path=" + (dir / "tsdb").string(),
                    "--web.listen-address=" + prometheus_url.substr(7)},
                   dir / "prometheus.log"),
        view({ENVCONTRACTD_PATH, "fleet", "--prometheus", prometheus_url, "--listen",
              view_url.substr(7), "--history", history, "--timeout", "20s"},
             dir / "view.log") {}

  std::string prometheus_url;
  std::string view_url;
  BackgroundProcess prometheus;
  BackgroundProcess view;
};

TEST(FleetAtScale, AThousandHostsFromPrometheusReadAsASummary) {
  for (const char* program : {k_prometheus, k_promtool}) {
    if (!fs::exists(program)) {
      GTEST_SKIP() << program << " is not installed (prometheus; scripts/test installs it)";
    }
  }
  TempDir dir;
  const long now = unix_now();
  write_text(dir.path() / "fleet.om", synthetic_fleet(now));
  const auto blocks =
      run_command({k_promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet",
                   (dir.path() / "fleet.om").string(), (dir.path() / "tsdb").string()});
  ASSERT_EQ(blocks.exit_code, 0) << blocks.out << blocks.err;
  fs::remove(dir.path() / "fleet.om");
  write_text(dir.path() / "prometheus.yml", "global:\n  scrape_interval: 1m\n");
  PrometheusWithView served(dir.path(), "7d");
  const std::string& view_url = served.view_url;
  const BackgroundProcess& prometheus = served.prometheus;
  const BackgroundProcess& view = served.view;

  // What the model says the fleet is now.
  int down = 0;
  int drifting = 0;
  int kunlunxin = 0;
  int hanging = 0;
  for (int i = 0; i < k_hosts; ++i) {
    const SyntheticHost host{i, now};
    down += host.down() ? 1 : 0;
    drifting += !host.down() && host.drifts_at(now) ? 1 : 0;
    kunlunxin += host.platform() == "kunlunxin" ? 1 : 0;
    // Hosts down since before the view started have no causes known to it.
    hanging += !host.down() && host.hangs_at(now) ? 1 : 0;
  }

  Json fleet;
  const auto ask = [&](const std::string& path) {
    const auto answer = http_get(view_url, path);
    fleet = Json::parse(answer.body, nullptr, false);
    return answer.status == 200 && fleet.is_object() && fleet.value("total_hosts", 0) == k_hosts;
  };
  ASSERT_TRUE(wait_until([&] { return ask("/api/v1/fleet"); }, std::chrono::seconds(60)))
      << common::json_text(fleet, 1) << "\nprometheus:\n"
      << prometheus.log() << "\nview:\n"
      << view.log();
  EXPECT_EQ(fleet["counts"]["unavailable"], down);
  EXPECT_EQ(fleet["counts"]["drift"], drifting);
  EXPECT_EQ(fleet["counts"]["compliant"], k_hosts - down - drifting);
  // The hang leads the fleet's causes, though fewer hosts have it.
  ASSERT_FALSE(fleet["causes"].empty());
  EXPECT_EQ(fleet["causes"][0]["cause"], "hang") << fleet["causes"];

  // The chart fits the day of data, not the week asked for, and its last
  // point is the fleet now.
  const auto& points = fleet["history"]["points"];
  ASSERT_GE(points.size(), 24U) << fleet["history"];
  EXPECT_LE(fleet["history"]["step_seconds"].get<int>(), 3600) << fleet["history"]["step_seconds"];
  EXPECT_EQ(total(points.back()), k_hosts) << points.back();
  EXPECT_EQ(points.back()["down"], down);
  // The bad push's two hours show as ascend hosts drifting.
  int most_drifting = 0;
  for (const auto& point : points) {
    most_drifting = std::max(most_drifting, point["drift"].get<int>());
  }
  EXPECT_GT(most_drifting, 300) << fleet["history"];

  // A host down since before the view started keeps what Prometheus' history holds.
  const SyntheticHost gone{5, now};
  ASSERT_TRUE(gone.down());
  ASSERT_TRUE(ask("/api/v1/fleet?verdict=unavailable"));
  Json row;
  for (const auto& each : fleet["hosts"]) {
    if (each["host"] == gone.instance()) {
      row = each;
    }
  }
  EXPECT_EQ(row["last_known"], true) << row;
  EXPECT_EQ(row["platform"], gone.platform()) << row;
  EXPECT_NE(row["last_known_from"].get<std::string>().find("Prometheus' history"),
            std::string::npos)
      << row;

  // Filters, whatever their case, and a chart of the hosts they show.
  // The chart of a filter is read beside the requests: it comes within a
  // refresh or two.
  ASSERT_TRUE(wait_until(
      [&] {
        return ask("/api/v1/fleet?platform=KUNLUNXIN") && !fleet["history"].contains("problem");
      },
      std::chrono::seconds(60)))
      << fleet["history"];
  EXPECT_EQ(fleet["counts"]["hosts"], kunlunxin) << "down hosts count under their platform";
  EXPECT_EQ(fleet["history"]["scope"], "the hosts that matched the filters at each step");
  const auto& kunlunxin_points = fleet["history"]["points"];
  ASSERT_FALSE(kunlunxin_points.empty());
  int kunlunxin_up = 0;
  for (int i = 0; i < k_hosts; ++i) {
    const SyntheticHost host{i, now};
    kunlunxin_up += host.platform() == "kunlunxin" && !host.down() ? 1 : 0;
  }
  EXPECT_EQ(total(kunlunxin_points.back()), kunlunxin_up) << kunlunxin_points.back();
  ASSERT_TRUE(ask("/api/v1/fleet?cause=hang"));
  EXPECT_EQ(fleet["counts"]["hosts"], hanging);
  // A value no host has (here bytes that are not text) matches nothing and
  // costs Prometheus no query.
  ASSERT_TRUE(ask("/api/v1/fleet?platform=%FF%FE")) << common::json_text(fleet, 1);
  EXPECT_EQ(fleet["counts"]["hosts"], 0);
  EXPECT_NE(fleet["history"].value("problem", "").find("no chart is asked for it"),
            std::string::npos)
      << fleet["history"];

  // How long the view takes to answer for 1,000 hosts, read once.
  std::vector<double> took;
  for (int i = 0; i < 20; ++i) {
    const auto started = Clock::now();
    ASSERT_TRUE(ask("/api/v1/fleet"));
    took.push_back(std::chrono::duration<double, std::milli>(Clock::now() - started).count());
  }
  std::sort(took.begin(), took.end());
  std::cout << "fleet view, " << k_hosts << " hosts: /api/v1/fleet p50 " << took[10] << " ms, max "
            << took.back() << " ms, " << http_get(view_url, "/api/v1/fleet").body.size()
            << " bytes\n";

  if (!fs::exists("/usr/bin/chromium")) {
    GTEST_SKIP() << "chromium is not installed (scripts/test installs it): the API was checked, "
                    "the page was not drawn";
  }
  // The page: the fleet's summary above the hosts, the hosts in groups
  // (collapsed at this size), the whole of it a few screens high.
  const auto script = dir.write("layout.js", R"js(
const wait = (ms) => new Promise((done) => setTimeout(done, ms));
for (let i = 0; i < 200 && !document.querySelector("tr.group-head"); i++) await wait(100);
const top = (selector) => document.querySelector(selector).getBoundingClientRect().top;
const heads = [...document.querySelectorAll("tr.group-head")].map((row) => row.textContent);
return { heads, rows: document.querySelectorAll("tr.host").length,
  causesTop: top("#cause-table"), hostsTop: top("#host-table"),
  firstCause: document.querySelector("#cause-table tbody tr").getAttribute("data-key"),
  height: document.documentElement.scrollHeight,
  count: document.getElementById("host-count").textContent };
)js");
  const auto driven =
      run_command({"/usr/bin/python3", ENVCONTRACT_SOURCE_DIR "/tests/support/browser.py",
                   (dir.path() / "profile").string(), view_url + "/", script.string(), "90"});
  ASSERT_EQ(driven.exit_code, 0) << driven.err;
  const auto page = Json::parse(driven.out, nullptr, false);
  ASSERT_TRUE(page.is_object()) << driven.out;
  EXPECT_LT(page["causesTop"].get<double>(), page["hostsTop"].get<double>())
      << "the fleet's causes come before the hosts";
  EXPECT_EQ(page["firstCause"], "hang");
  EXPECT_EQ(page["rows"], 0) << "groups start collapsed past 50 hosts";
  ASSERT_FALSE(page["heads"].empty());
  EXPECT_NE(page["heads"][0].get<std::string>().find("hang"), std::string::npos) << page["heads"];
  EXPECT_LT(page["height"].get<double>(), 2600.0) << "the whole page in two screens";
  keep_screenshot(view_url + "/", dir.path() / "shot", "fleet-1000");
}

// A contract of `platform` whose check the demo host's torch-fl-cpu env
// passes, or one it fails (a torch pin it does not meet).
std::string small_contract(const std::string& platform, bool drifting) {
  return "schema_version: 1\nname: " + platform + (drifting ? "-pinned" : "-ok") +
         "\nplatform: " + platform + "\nchecks:\n" +
         (drifting ? "  - {id: torch-pin, kind: distributions, pins: {torch: \"==9.9\"}}\n"
                   : "  - {id: no-leak, kind: distributions, absent: [leak]}\n");
}

// The alerts Alertmanager posted to `path`, one list of (alertname, status,
// instance) per notification.
std::vector<std::vector<std::string>> notifications(const WebhookReceiver& receiver,
                                                    const std::string& path) {
  std::vector<std::vector<std::string>> found;
  for (const auto& request : receiver.requests()) {
    const auto body = Json::parse(request.body, nullptr, false);
    if (request.path != path || !body.is_object() || !body.contains("alerts")) {
      continue;
    }
    std::vector<std::string> alerts;
    for (const auto& alert : body["alerts"]) {
      alerts.push_back(alert["labels"].value("alertname", "") + " " + alert.value("status", "") +
                       " " + alert["labels"].value("instance", ""));
    }
    found.push_back(std::move(alerts));
  }
  return found;
}

// Fifty real agents (small hosts: one env, two platforms, ten drifting)
// scraped by a real Prometheus with the shipped rules, alerting through a
// real Alertmanager with the documented route, and the fleet view over that
// Prometheus. Timings shortened for a test: scrapes and rule evaluations
// every 2 s, the drift alert's `for:` 15 s, Alertmanager's group_wait 10 s.
TEST(FleetAtScale, FiftyAgentsThroughPrometheusAndAlertmanager) {
  for (const char* program : {k_prometheus, k_alertmanager}) {
    if (!fs::exists(program)) {
      GTEST_SKIP() << program
                   << " is not installed (prometheus, prometheus-alertmanager; scripts/test "
                      "installs them)";
    }
  }
  constexpr int agents_count = 50;
  TempDir dir;
  const auto env = (demo_host() / "miniconda3/envs/torch-fl-cpu").string();
  std::vector<std::unique_ptr<AgentProcess>> agents;
  std::vector<fs::path> contracts;
  const auto platform_of = [](int i) { return i < agents_count / 2 ? "kunlunxin" : "ascend"; };
  const auto drifts = [](int i) { return i % 5 == 0; };
  for (int i = 0; i < agents_count; ++i) {
    const auto home = dir.path() / ("agent-" + std::to_string(i));
    fs::create_directories(home);
    contracts.push_back(home / "contract.yaml");
    write_text(contracts.back(), small_contract(platform_of(i), drifts(i)));
    agents.push_back(std::make_unique<AgentProcess>(
        home,
        std::vector<std::string>{"--contract", contracts.back().string(), "--prefix", env,
                                 "--database", (home / "agent.db").string(), "--interval", "1h"}));
  }
  const auto target = [&](int i) { return "127.0.0.1:" + std::to_string(agents[i]->port()); };

  WebhookReceiver receiver;
  std::string route = documented_alertmanager_config(receiver);
  ASSERT_NE(route, "");
  route = std::regex_replace(route, std::regex("group_wait: 1s"), "group_wait: 10s");
  write_text(dir.path() / "alertmanager.yml", route);
  const std::string alertmanager_url = loopback_url();
  BackgroundProcess alertmanager(
      {k_alertmanager, "--config.file=" + (dir.path() / "alertmanager.yml").string(),
       "--storage.path=" + (dir.path() / "alertmanager").string(),
       "--web.listen-address=" + alertmanager_url.substr(7), "--cluster.listen-address="},
      dir.path() / "alertmanager.log");

  std::string rules =
      read_text(fs::path(ENVCONTRACT_SOURCE_DIR) / "packaging/prometheus/envcontract-rules.yml");
  rules = std::regex_replace(rules, std::regex("for: 30m"), "for: 15s");
  write_text(dir.path() / "rules.yml", rules);
  std::string targets;
  for (int i = 0; i < agents_count; ++i) {
    targets += (i == 0 ? "'" : ", '") + target(i) + "'";
  }
  write_text(dir.path() / "prometheus.yml",
             "global:\n  scrape_interval: 2s\n  evaluation_interval: 2s\n"
             "rule_files:\n  - " +
                 (dir.path() / "rules.yml").string() +
                 "\nalerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ['" +
                 alertmanager_url.substr(7) +
                 "']\nscrape_configs:\n  - job_name: envcontract\n    static_configs:\n"
                 "      - targets: [" +
                 targets + "]\n");
  PrometheusWithView served(dir.path(), "1h");
  const std::string& view_url = served.view_url;
  const BackgroundProcess& prometheus = served.prometheus;
  const BackgroundProcess& view = served.view;

  Json fleet;
  // Every answer of the view is as fresh as it says, or says why not.
  int answers = 0;
  int unexplained_old = 0;
  const auto ask = [&](const std::string& path) {
    const auto answer = http_get(view_url, path);
    fleet = Json::parse(answer.body, nullptr, false);
    if (answer.status != 200 || !fleet.is_object()) {
      return false;
    }
    ++answers;
    if (fleet["age_seconds"].get<double>() >= fleet["refresh_seconds"].get<double>() &&
        !fleet.contains("stale")) {
      ++unexplained_old;
    }
    return true;
  };
  const auto row_of = [&](const std::string& host) {
    for (const auto& row : fleet["hosts"]) {
      if (row["host"] == host) {
        return row;
      }
    }
    return Json();
  };
  const auto started = Clock::now();
  const auto seconds_since = [](Clock::time_point since) {
    return std::chrono::duration<double>(Clock::now() - since).count();
  };
  ASSERT_TRUE(wait_until(
      [&] {
        return ask("/api/v1/fleet") && fleet["counts"]["drift"] == 10 &&
               fleet["counts"]["compliant"] == agents_count - 10;
      },
      std::chrono::seconds(90)))
      << common::json_text(fleet["counts"], 1) << prometheus.log() << view.log();
  const double judged_after = seconds_since(started);

  // Ten hosts drifting together: one notification listing the ten.
  const auto drifting_notices = [&] {
    std::vector<std::vector<std::string>> found;
    for (auto& each : notifications(receiver, "/mail")) {
      if (!each.empty() && each.front().starts_with("EnvcontractHostDrifting")) {
        found.push_back(each);
      }
    }
    return found;
  };
  ASSERT_TRUE(wait_until([&] { return !drifting_notices().empty(); }, std::chrono::seconds(90)))
      << alertmanager.log() << prometheus.log();
  const double alerted_after = seconds_since(started);
  const auto first_notice = drifting_notices().front();
  EXPECT_EQ(first_notice.size(), 10U) << "the ten drifting hosts in one notification";
  for (int i = 0; i < agents_count; i += 5) {
    EXPECT_NE(std::find(first_notice.begin(), first_notice.end(),
                        "EnvcontractHostDrifting firing " + target(i)),
              first_notice.end())
        << target(i);
  }

  // A drifting host is fixed (its contract changed): the view shows it
  // compliant within a scrape and a refresh of the agent's report.
  const int fixed = 5;  // kunlunxin, drifting
  write_text(contracts[fixed], small_contract(platform_of(fixed), false));
  const auto change = Clock::now();
  ASSERT_TRUE(wait_until(
      [&] {
        return get_json(*agents[fixed], "/api/v1/report").value("verdict", "") == "compliant";
      },
      std::chrono::seconds(60)));
  const double agent_after = seconds_since(change);
  const auto agent_compliant = Clock::now();
  ASSERT_TRUE(wait_until(
      [&] { return ask("/api/v1/fleet") && row_of(target(fixed))["state"] == "compliant"; },
      std::chrono::seconds(30)))
      << row_of(target(fixed));
  const double view_after = seconds_since(agent_compliant);
  EXPECT_LT(view_after, 2 + 5 + 2.0) << "a scrape, a refresh and a read";

  // Three kunlunxin agents stop answering, one of them drifting: they stay
  // under their platform and causes, as last known, and the drift alert is
  // not resolved by the outage.
  const std::vector<int> stopped = {10, 11, 12};
  for (const int i : stopped) {
    agents[i]->signal(SIGSTOP);
  }
  const auto outage = Clock::now();
  const bool down = wait_until(
      [&] {
        return ask("/api/v1/fleet?platform=KUNLUNXIN") && fleet["counts"]["unavailable"] == 3;
      },
      std::chrono::seconds(60));
  const double down_after = seconds_since(outage);
  const Json kunlunxin = fleet;
  const Json stopped_drifting = row_of(target(10));
  // Three evaluations of the rules with them down: a rule the outage
  // resolves would have resolved the stopped host's drift in Alertmanager.
  const bool evaluated_down =
      wait_for_rule_evaluations(served.prometheus_url, 3, std::chrono::seconds(30));
  const Json drift_held =
      held_alert(alertmanager_url, "EnvcontractHostDrifting", "instance", target(10));
  const auto resolved_during_outage = [&] {
    for (const auto& each : notifications(receiver, "/mail")) {
      for (const auto& alert : each) {
        if (alert == "EnvcontractHostDrifting resolved " + target(10)) {
          return true;
        }
      }
    }
    return false;
  }();
  for (const int i : stopped) {
    agents[i]->signal(SIGCONT);
  }
  ASSERT_TRUE(down) << common::json_text(fleet["counts"], 1);
  EXPECT_EQ(kunlunxin["counts"]["hosts"], agents_count / 2)
      << "down hosts count under their platform";
  EXPECT_EQ(stopped_drifting["state"], "unavailable");
  EXPECT_EQ(stopped_drifting["last_known"], true) << stopped_drifting;
  EXPECT_EQ(stopped_drifting["top_causes"][0]["cause"], "version_mismatch") << stopped_drifting;
  ASSERT_TRUE(evaluated_down) << prometheus.log();
  EXPECT_FALSE(drift_held.is_null()) << "the outage resolved a drift nobody fixed";
  EXPECT_FALSE(resolved_during_outage) << "the outage resolved a drift nobody fixed";
  // The fixed host's drift is resolved, in a notification of its own group.
  ASSERT_TRUE(wait_until(
      [&] {
        for (const auto& each : notifications(receiver, "/mail")) {
          for (const auto& alert : each) {
            if (alert == "EnvcontractHostDrifting resolved " + target(fixed)) {
              return true;
            }
          }
        }
        return false;
      },
      std::chrono::seconds(60)))
      << alertmanager.log();
  EXPECT_GT(answers, 3);
  EXPECT_EQ(unexplained_old, 0) << "answers older than the view's refresh without a word";
  std::cout << agents_count << " agents: all judged in the view " << judged_after
            << " s after start; drift notified " << alerted_after
            << " s after start (for: 15s, group_wait: 10s); a fix: agent compliant " << agent_after
            << " s after the change, the view " << view_after << " s after the agent; "
            << stopped.size() << " agents stopped: shown down after " << down_after << " s\n";
}

}  // namespace
}  // namespace envcontract
