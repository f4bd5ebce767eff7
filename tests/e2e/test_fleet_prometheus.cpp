// The fleet as a real Prometheus sees it: three agents over the demo host,
// one complying, one drifting, one that is then stopped, scraped by a real
// Prometheus on loopback; `fleetctl check --prometheus` lists them with
// their verdicts and causes, and the stopped one as down with its last verdict.
#include <gtest/gtest.h>

#include <csignal>
#include <regex>
#include <thread>

#include "common/json_text.hpp"
#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/background_process.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/run_command.hpp"

namespace envcontract {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers
namespace fs = std::filesystem;

constexpr const char* k_prometheus = "/usr/bin/prometheus";

const char* const k_complying = R"(schema_version: 1
name: fleet-ok
checks:
  - {id: no-leak, kind: distributions, absent: [leak]}
)";

const char* const k_drifting = R"(schema_version: 1
name: fleet-drift
platform: kunlunxin
targets:
  - name: ci
    image: harbor.example/flagos-runtime/flagos-runtime-kunlunxin-xre5.37.1:2.2.0
checks:
  - id: torch-pin
    kind: distributions
    pins: {torch: "==9.9"}
)";

struct Fleet {
  Json hosts;  // fleetctl's "hosts", by host
  int exit_code = -1;
  std::string err;
};

Fleet fleet_from(const std::string& prometheus) {
  const auto run = run_command({FLEETCTL_PATH, "check", "--prometheus", prometheus, "--job",
                                "envcontract", "-o", "json", "--timeout", "5s"});
  Fleet fleet;
  fleet.exit_code = run.exit_code;
  fleet.err = run.err;
  const auto json = Json::parse(run.out, nullptr, false);
  fleet.hosts = Json::object();
  if (json.is_object() && json.contains("hosts")) {
    for (const auto& host : json["hosts"]) {
      fleet.hosts[host["host"].get<std::string>()] = host;
    }
  }
  return fleet;
}

// Each testcase of a JUnit document as "CLASSNAME NAME OUTCOME" (pass,
// failure, error, skipped), sorted.
std::vector<std::string> junit_outcomes(const std::string& xml) {
  static const std::regex testcase(
      R"re(<testcase classname="([^"]*)" name="([^"]*)"[^>]*?(/>|>\s*<(failure|error|skipped)))re");
  std::vector<std::string> cases;
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), testcase);
       it != std::sregex_iterator(); ++it) {
    const auto& match = *it;
    cases.push_back(match[1].str() + " " + match[2].str() + " " +
                    (match[3] == "/>" ? std::string("pass") : match[4].str()));
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

TEST(FleetPrometheus, ThreeAgentsAsPrometheusScrapesThem) {
  if (!fs::exists(k_prometheus)) {
    GTEST_SKIP() << "skipped: " << k_prometheus << " is not installed (scripts/test installs it)";
  }
  TempDir dir;
  const auto complying = dir.write("ok.yaml", k_complying);
  const auto drifting = dir.write("drift.yaml", k_drifting);
  const auto env = (demo_host() / "miniconda3/envs/torch-fl-cpu").string();
  const auto agent = [&](const std::string& name, const fs::path& contract) {
    fs::create_directories(dir.path() / name);
    return std::make_unique<AgentProcess>(
        dir.path() / name,
        std::vector<std::string>{"--contract", contract.string(), "--prefix", env, "--database",
                                 (dir.path() / name / "agent.db").string(), "--interval", "1h",
                                 "--image-tag-file", (demo_host() / "etc/flagos-image").string()});
  };
  auto ok = agent("ok", complying);
  auto drift = agent("drift", drifting);
  auto leaving = agent("leaving", complying);
  for (const auto* each : {ok.get(), drift.get(), leaving.get()}) {
    wait_for_report(*each);
  }
  const auto target = [](const AgentProcess& each) {
    return "127.0.0.1:" + std::to_string(each.port());
  };
  write_text(dir.path() / "prometheus.yml",
             "global:\n  scrape_interval: 1s\n"
             "scrape_configs:\n  - job_name: envcontract\n    static_configs:\n"
             "      - targets: ['" +
                 target(*ok) + "', '" + target(*drift) + "', '" + target(*leaving) + "']\n");
  const int port = free_loopback_port();
  auto prometheus_process = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{k_prometheus,
                               "--config.file=" + (dir.path() / "prometheus.yml").string(),
                               "--storage.tsdb.path=" + (dir.path() / "prometheus").string(),
                               "--web.listen-address=127.0.0.1:" + std::to_string(port)},
      dir.path() / "prometheus.log");
  const BackgroundProcess& prometheus = *prometheus_process;
  const std::string url = "http://127.0.0.1:" + std::to_string(port);

  Fleet fleet;
  const auto all_judged = [&] {
    fleet = fleet_from(url);
    int judged = 0;
    for (const auto& [host, entry] : fleet.hosts.items()) {
      judged += entry["state"] != "unavailable" ? 1 : 0;
    }
    return judged == 3;
  };
  ASSERT_TRUE(wait_until(all_judged, std::chrono::seconds(60)))
      << fleet.err << common::json_text(fleet.hosts, 1) << prometheus.log();
  EXPECT_EQ(fleet.exit_code, 1) << "one host drifts";
  EXPECT_EQ(fleet.hosts[target(*ok)]["state"], "compliant");
  EXPECT_EQ(fleet.hosts[target(*leaving)]["state"], "compliant");
  const Json& drifting_host = fleet.hosts[target(*drift)];
  EXPECT_EQ(drifting_host["state"], "drift");
  const Json& report = drifting_host["report"];
  EXPECT_EQ(report["contract"]["name"], "fleet-drift");
  EXPECT_EQ(report["compliant_envs"], Json::array());
  ASSERT_EQ(report["envs"].size(), 1U) << common::json_text(report, 1);
  const Json& failing = report["envs"][0]["checks"];
  ASSERT_EQ(failing.size(), 1U) << common::json_text(report, 1);
  EXPECT_EQ(failing[0]["id"], "torch-pin");
  EXPECT_NE(failing[0]["diagnosis"]["cause"], "");
  // The host's image, and its target's failing check.
  EXPECT_EQ(report["image"]["value"],
            "harbor.example/flagos-runtime/flagos-runtime-kunlunxin-xre5.37.1:2.1.2");
  ASSERT_EQ(report["targets"].size(), 1U) << common::json_text(report, 1);
  EXPECT_EQ(report["targets"][0]["name"], "ci");
  EXPECT_EQ(report["targets"][0]["checks"][0]["diagnosis"]["cause"], "image_mismatch");

  // The table names the cause, as for an inventory.
  const auto table = run_command({FLEETCTL_PATH, "check", "--prometheus", url});
  EXPECT_NE(table.out.find(failing[0]["diagnosis"]["cause"].get<std::string>()), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("1 of 3 hosts drift"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("image_mismatch"), std::string::npos) << table.out;
  fs::create_directories(ENVCONTRACT_ARTIFACTS_DIR);
  write_text(fs::path(ENVCONTRACT_ARTIFACTS_DIR) / "fleet-prometheus.txt", table.out);

  // The fleet's JUnit is the same from Prometheus as from an inventory of
  // the same agents: the same suites, cases and outcomes.
  const auto inventory =
      dir.write("fleet.txt", target(*ok) + "\n" + target(*drift) + "\n" + target(*leaving) + "\n");
  const auto from_prometheus =
      run_command({FLEETCTL_PATH, "check", "--prometheus", url, "-o", "junit"});
  const auto from_inventory =
      run_command({FLEETCTL_PATH, "check", "--inventory", inventory.string(), "-o", "junit"});
  EXPECT_EQ(from_prometheus.exit_code, 1);
  EXPECT_EQ(from_inventory.exit_code, 1);
  const auto junit_cases = junit_outcomes(from_prometheus.out);
  EXPECT_EQ(junit_cases, junit_outcomes(from_inventory.out)) << from_prometheus.out << "\n---\n"
                                                             << from_inventory.out;
  EXPECT_NE(std::find(junit_cases.begin(), junit_cases.end(),
                      target(*drift) + "/torch-fl-cpu torch-pin failure"),
            junit_cases.end())
      << from_prometheus.out;
  EXPECT_NE(std::find(junit_cases.begin(), junit_cases.end(),
                      target(*ok) + "/torch-fl-cpu complies pass"),
            junit_cases.end())
      << from_prometheus.out;

  // What is not Prometheus, or not there, is an error naming the query.
  const auto not_prometheus =
      run_command({FLEETCTL_PATH, "check", "--prometheus", "http://" + target(*ok)});
  EXPECT_EQ(not_prometheus.exit_code, 2);
  EXPECT_NE(not_prometheus.err.find(": query up{job=\"envcontract\"}: HTTP 404"), std::string::npos)
      << not_prometheus.err;
  const auto nobody = run_command(
      {FLEETCTL_PATH, "check", "--prometheus", "http://127.0.0.1:1", "--timeout", "2s"});
  EXPECT_EQ(nobody.exit_code, 2);
  EXPECT_NE(nobody.err.find("cannot connect to 127.0.0.1 port 1"), std::string::npos) << nobody.err;
  EXPECT_NE(nobody.err.find("is Prometheus running and listening there?"), std::string::npos)
      << nobody.err;
  const auto both = run_command({FLEETCTL_PATH, "check", "--prometheus", url, "node-1"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("--prometheus lists the hosts itself"), std::string::npos) << both.err;

  // The fleet view on the same Prometheus: its JSON and its page.
  const int view_port = free_loopback_port();
  const std::string view_url = "http://127.0.0.1:" + std::to_string(view_port);
  BackgroundProcess view(
      {ENVCONTRACTD_PATH, "fleet", "--prometheus", url, "--job", "envcontract", "--listen",
       "127.0.0.1:" + std::to_string(view_port), "--history", "1h", "--timeout", "5s"},
      dir.path() / "fleet-view.log");
  Json seen;
  const auto view_shows = [&](const std::function<bool(const Json&)>& wanted) {
    return wait_until(
        [&] {
          const auto answer = http_get(view_url, "/api/v1/fleet");
          seen = Json::parse(answer.body, nullptr, false);
          return answer.status == 200 && seen.is_object() && wanted(seen);
        },
        std::chrono::seconds(30));
  };
  ASSERT_TRUE(view_shows([](const Json& answer) {
    const auto& points = answer["history"]["points"];
    return answer["counts"]["drift"] == 1 && answer["counts"]["compliant"] == 2 &&
           !points.empty() && points.back()["compliant"] == 2 && points.back()["drift"] == 1;
  })) << common::json_text(seen, 1)
      << view.log();
  EXPECT_EQ(seen["source"], "prometheus " + url + " job envcontract");
  EXPECT_EQ(seen["history"]["step_seconds"], 60);
  const Json& first = seen["hosts"][0];  // the drifting host comes first
  EXPECT_EQ(first["host"], target(*drift));
  EXPECT_EQ(first["state"], "drift");
  EXPECT_EQ(first["up"], true);
  EXPECT_EQ(first["agent_url"], "http://" + target(*drift) + "/");
  EXPECT_EQ(first["contract"], "fleet-drift");
  EXPECT_EQ(first["platform"], "kunlunxin");  // through the agent's envcontract_info
  EXPECT_EQ(seen["platforms"], Json::array({"kunlunxin"}));
  EXPECT_EQ(first["drifting_envs"], 1);
  std::vector<std::string> causes;
  for (const auto& cause : first["top_causes"]) {
    causes.push_back(cause["cause"]);
  }
  std::sort(causes.begin(), causes.end());
  std::vector<std::string> expected = {failing[0]["diagnosis"]["cause"].get<std::string>(),
                                       "image_mismatch"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(causes, expected);
  EXPECT_NE(std::find(seen["checks"].begin(), seen["checks"].end(),
                      Json{{"check", "torch-pin"}, {"hosts", 1}, {"envs", 1}}),
            seen["checks"].end())
      << seen["checks"];
  const auto filtered = Json::parse(http_get(view_url, "/api/v1/fleet?check=torch-pin").body);
  ASSERT_EQ(filtered["hosts"].size(), 1U) << filtered;
  EXPECT_EQ(filtered["hosts"][0]["host"], target(*drift));
  // A host's full report, fetched from its agent on demand.
  const auto fetched = http_get(view_url, "/api/v1/fleet/hosts/" + target(*drift) + "/report");
  EXPECT_EQ(fetched.status, 200) << fetched.body;
  EXPECT_EQ(Json::parse(fetched.body, nullptr, false).value("verdict", ""), "drift");
  // The page in headless Chromium: every host with its verdict in words.
  const bool chromium = fs::exists("/usr/bin/chromium");
  if (chromium) {
    const auto dom = rendered_dom(view_url + "/", dir.path() / "profile");
    for (const auto* each : {ok.get(), drift.get(), leaving.get()}) {
      EXPECT_NE(dom.find("data-host=\"" + target(*each) + "\""), std::string::npos) << dom;
    }
    EXPECT_NE(dom.find(R"(<span class="badge drift">✗ drift</span>)"), std::string::npos) << dom;
    EXPECT_NE(dom.find(R"(data-count="compliant">✓ 2 compliant)"), std::string::npos) << dom;
    EXPECT_NE(dom.find(">image_mismatch</a>"), std::string::npos) << dom;
    EXPECT_NE(dom.find(R"(<rect class="bar drift" data-state="drift")"), std::string::npos);
    keep_screenshot(view_url + "/", dir.path() / "shot", "fleet-prometheus");
  }

  // A stopped agent is down, with the verdict it last had.
  const std::string gone = target(*leaving);
  EXPECT_EQ(leaving->stop(), 0);
  const auto shown_down = [&] {
    fleet = fleet_from(url);
    return fleet.hosts.contains(gone) && fleet.hosts[gone]["state"] == "unavailable" &&
           fleet.hosts[gone]["error"].get<std::string>().starts_with("down:");
  };
  ASSERT_TRUE(wait_until(shown_down, std::chrono::seconds(30)))
      << common::json_text(fleet.hosts, 1);
  EXPECT_EQ(fleet.exit_code, 2) << "a host is down";
  EXPECT_EQ(fleet.hosts[gone]["error"],
            "down: Prometheus' last scrape of it failed (its last verdict: compliant)");
  // ...and so in the fleet view, with when it last scanned.
  ASSERT_TRUE(view_shows([&](const Json& answer) {
    return answer["counts"]["unavailable"] == 1 && answer["hosts"][0]["host"] == gone;
  })) << common::json_text(seen, 1);
  const Json& down = seen["hosts"][0];
  EXPECT_EQ(down["up"], false);
  EXPECT_EQ(down["last_verdict"], "compliant");
  EXPECT_NE(down["last_scan"], "");
  // What the view read of it while it was up stays, marked as last known.
  EXPECT_EQ(down["last_known"], true);
  EXPECT_EQ(down["contract"], "fleet-ok");
  EXPECT_NE(down["last_known_from"].get<std::string>().find("the view's read of Prometheus"),
            std::string::npos)
      << down;
  if (chromium) {
    const auto dom = rendered_dom(view_url + "/?verdict=unavailable", dir.path() / "profile2");
    EXPECT_NE(dom.find("data-host=\"" + gone + "\" data-state=\"unavailable\""), std::string::npos)
        << dom;
    EXPECT_EQ(dom.find("data-host=\"" + target(*ok) + "\""), std::string::npos)
        << "the filter shows only the host that is down";
    EXPECT_NE(dom.find("last known, from the view's read of Prometheus"), std::string::npos) << dom;
  }

  // After an idle spell longer than the view's refresh (5 s), the first
  // answer is a fresh read, not the one the last request left behind.
  const auto idle_and_ask = [&] {
    std::this_thread::sleep_for(std::chrono::seconds(6));
    const auto answer = http_get(view_url, "/api/v1/fleet");
    EXPECT_EQ(answer.status, 200) << answer.body;
    return Json::parse(answer.body, nullptr, false);
  };
  const auto after_idle = idle_and_ask();
  EXPECT_EQ(after_idle["refresh_seconds"], 5.0);
  EXPECT_LT(after_idle["age_seconds"].get<double>(), 5.0) << common::json_text(after_idle, 1);
  EXPECT_FALSE(after_idle.contains("stale")) << after_idle["stale"];
  EXPECT_FALSE(after_idle.contains("problem")) << after_idle["problem"];
  // A Prometheus that stops answering (SIGSTOP): the read in flight is
  // waited for 2 s, then the answer says it is old and why.
  ::kill(prometheus.pid(), SIGSTOP);
  const auto frozen = idle_and_ask();
  ::kill(prometheus.pid(), SIGCONT);
  EXPECT_GE(frozen["age_seconds"].get<double>(), 6.0);
  EXPECT_NE(frozen.value("stale", "").find("a read of Prometheus has run for "), std::string::npos)
      << common::json_text(frozen, 1);
  EXPECT_FALSE(frozen.contains("problem")) << "nothing failed yet";
  // With Prometheus gone, the first answer says so and how old its hosts are.
  prometheus_process.reset();
  const auto without_prometheus = idle_and_ask();
  EXPECT_GE(without_prometheus["age_seconds"].get<double>(), 6.0);
  EXPECT_NE(without_prometheus.value("stale", "").find("the latest read of Prometheus failed"),
            std::string::npos)
      << common::json_text(without_prometheus, 1);
  EXPECT_NE(without_prometheus.value("problem", "").find("cannot connect"), std::string::npos)
      << without_prometheus.value("problem", "");
  EXPECT_EQ(without_prometheus["hosts"].size(), 3U) << "the last hosts it read, not none";
  if (chromium) {
    const auto dom = rendered_dom(view_url + "/", dir.path() / "profile3");
    EXPECT_NE(dom.find("showing the fleet as of " + without_prometheus["as_of"].get<std::string>()),
              std::string::npos)
        << dom;
  }
  if (!chromium) {
    GTEST_SKIP() << "chromium is not installed (scripts/test installs it): the API was checked, "
                    "the page was not drawn";
  }
}

}  // namespace
}  // namespace envcontract
