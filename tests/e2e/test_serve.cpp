// `envcontractd serve` end to end: a real agent on a free loopback port, a
// real database file, the demo host (a private copy where the test changes it).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

#include <set>
#include <thread>

#include "common/json_text.hpp"
#include "daemon/sqlite.hpp"
#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/notify_socket.hpp"
#include "tests/support/processes.hpp"
#include "tests/support/report_schema.hpp"
#include "tests/support/run_command.hpp"

namespace envcontract {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers
using Causes = std::vector<std::string>;

std::vector<std::string> demo_arguments(const TempDir& dir, const std::filesystem::path& host) {
  return {"--contract",       quick_demo_contract(dir.path()).string(),
          "--root",           host.string(),
          "--image-tag-file", (host / "etc/flagos-image").string(),
          "--database",       (dir.path() / "agent.db").string(),
          "--interval",       "1h"};
}

// One env of the demo host: for tests about the agent rather than the envs.
std::vector<std::string> one_env_arguments(const TempDir& dir) {
  return {"--contract",       quick_demo_contract(dir.path()).string(),
          "--prefix",         (demo_host() / "venvs/xpu210v").string(),
          "--image-tag-file", (demo_host() / "etc/flagos-image").string(),
          "--database",       (dir.path() / "agent.db").string(),
          "--interval",       "1h"};
}

TEST(Serve, ReportDiagnosesHistoryAndComplianceOnTheDemoHost) {
  TempDir dir;
  const auto host = dir.path() / "host";
  build_demo_host(host);
  AgentProcess agent(dir.path(), demo_arguments(dir, host));

  int status = 0;
  EXPECT_EQ(get_json(agent, "/healthz", &status)["status"], "ok");
  EXPECT_EQ(status, 200);

  const auto report = wait_for_report(agent);
  ASSERT_EQ(report["verdict"], "drift") << agent.log();
  EXPECT_EQ(report["scan_id"], 1);
  EXPECT_EQ(report["reasons"][1], "no env satisfies the contract (8 envs: 8 drift, 0 error)");
  EXPECT_EQ(failing_causes(report, "torch-fl-hf-test"),
            (Causes{"cuda_build", "forbidden_file", "forbidden_package", "missing_library"}));
  EXPECT_EQ(failing_causes(report, "torch-fl-xpu-py310"),
            (Causes{"cuda_build", "forbidden_file", "missing_library", "stock_triton"}));
  EXPECT_EQ(failing_causes(report, "torch-fl-xpu-py311"),
            (Causes{"cuda_build", "forbidden_file", "stock_triton", "too_few_devices"}));
  EXPECT_EQ(failing_causes(report, "torch-fl-cpu"), Causes{"hang"});
  EXPECT_EQ(failing_causes(report, "torch-fl-activate"), Causes{"triton_backend_missing"});
  if (const auto violations = report_schema_violations(report)) {
    EXPECT_EQ(*violations, "");
  }

  const auto compliance = http_get(agent.url(), "/api/v1/compliance");
  EXPECT_EQ(compliance.status, 503);
  EXPECT_EQ(Json::parse(compliance.body)["reasons"], report["reasons"]);

  const auto env = get_json(agent, "/api/v1/envs/torch-fl-cpu", &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(env["verdict"], "drift");
  EXPECT_EQ(env["scan_id"], 1);
  const auto missing = get_json(agent, "/api/v1/envs/no-such-env", &status);
  EXPECT_EQ(status, 404);
  EXPECT_EQ(missing["error"], "no env named 'no-such-env' on this host");

  // Fix the host: give torch-fl-activate FlagTree's xpu backend and run the
  // host on the target image. Then ask for a scan.
  const auto backends = host /
                        "miniconda3/envs/torch-fl-activate/lib/python3.10/site-packages/"
                        "triton/backends";
  std::filesystem::create_directories(backends / "xpu");
  write_text(backends / "xpu/__init__.py", "");
  write_text(host / "etc/flagos-image",
             "harbor.example/flagos-runtime/flagos-runtime-kunlunxin-xre5.37.1:2.2.0\n");
  const auto posted =
      http_post(agent.url(), "/api/v1/scan", "", {{"X-Requested-By", "envcontract-tests"}});
  ASSERT_EQ(posted.status, 202) << posted.body;
  const auto ticket_id = Json::parse(posted.body)["id"].get<std::int64_t>();

  const auto fixed = wait_for_scan_after(agent, 1);
  EXPECT_EQ(fixed["verdict"], "compliant") << fixed["reasons"];
  EXPECT_EQ(fixed["compliant_envs"], Json({"torch-fl-activate"}));
  EXPECT_EQ(http_get(agent.url(), "/api/v1/compliance").status, 200);
  Json ticket;
  ASSERT_TRUE(wait_until([&] {
    ticket = get_json(agent, "/api/v1/scans/" + std::to_string(ticket_id));
    return ticket["state"] == "done";
  }));
  EXPECT_EQ(ticket["scan_id"], fixed["scan_id"]);

  // The transition is in the history, and the unchanged checks kept their since.
  const auto history = get_json(agent, "/api/v1/history?env=torch-fl-activate&check=flagtree-xpu");
  ASSERT_EQ(history["transitions"].size(), 2U) << common::json_text(history, 2);
  EXPECT_EQ(history["transitions"][0]["status"], "fail");
  EXPECT_EQ(history["transitions"][0]["cause"], "triton_backend_missing");
  EXPECT_EQ(history["transitions"][1]["status"], "pass");
  EXPECT_EQ(history["transitions"][1]["previous_status"], "fail");
  for (const auto& entry : fixed["envs"]) {
    if (entry["name"] == "torch-fl-cpu") {
      for (const auto& check : entry["checks"]) {
        if (check["id"] == "first-device-op") {
          EXPECT_EQ(check["since"], report["scanned_at"]);  // hanging since the first scan
        }
      }
    }
  }
  const auto host_history = get_json(agent, "/api/v1/history?check=%40verdict&since=2000-01-01");
  EXPECT_GE(host_history["transitions"].size(), 3U);  // host drift, then compliant; env changes
}

TEST(Serve, ScanNeedsTheBearerTokenFromAPrivateTokenFile) {
  TempDir dir;
  const auto token_file = dir.write("token", "s3cret-token\n");
  ::chmod(token_file.c_str(), 0644);
  auto arguments = one_env_arguments(dir);
  arguments.insert(arguments.end(), {"--token-file", token_file.string()});
  std::string log;
  EXPECT_EQ(AgentProcess::run_to_exit(dir.path(), arguments, log), 2);
  EXPECT_NE(log.find("is readable by others (mode 0644); run: chmod 600 " + token_file.string()),
            std::string::npos)
      << log;

  ::chmod(token_file.c_str(), 0600);
  AgentProcess agent(dir.path(), arguments);
  const auto first = wait_for_report(agent);
  const auto anonymous = http_post(agent.url(), "/api/v1/scan", "");
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_EQ(anonymous.headers.count("WWW-Authenticate"), 1U);
  EXPECT_EQ(http_post(agent.url(), "/api/v1/scan", "", {{"Authorization", "Bearer wrong"}}).status,
            401);
  const auto allowed =
      http_post(agent.url(), "/api/v1/scan", "", {{"Authorization", "Bearer s3cret-token"}});
  EXPECT_EQ(allowed.status, 202) << allowed.body;
  wait_for_scan_after(agent, first["scan_id"].get<std::int64_t>());
}

// A valid contract of that name with one check every env passes.
std::string python_contract(const std::string& name) {
  return "schema_version: 1\nname: " + name +
         "\nchecks:\n  - id: python\n    kind: python\n    version: '>=3.6'\n";
}

TEST(Serve, ContractReloadsOnChangeAndOnSighupKeepingTheLastGoodOne) {
  TempDir dir;
  const auto contract = dir.write("contract.yaml", python_contract("first"));
  // A long poll interval first, so only SIGHUP can reload.
  const auto config = dir.write(
      "agent.yaml", "contract_poll: 1h\ndatabase: " + (dir.path() / "agent.db").string() + "\n");
  std::vector<std::string> arguments = {"--config",   config.string(),
                                        "--contract", contract.string(),
                                        "--prefix",   (demo_host() / "venvs/xpu210v").string()};
  {
    AgentProcess agent(dir.path(), arguments);
    const auto first = wait_for_report(agent);
    EXPECT_EQ(first["contract"]["name"], "first");
    write_text(contract, python_contract("second"));
    agent.signal(SIGHUP);
    const auto second = wait_for_scan_after(agent, first["scan_id"].get<std::int64_t>());
    EXPECT_EQ(second["contract"]["name"], "second");
    EXPECT_EQ(get_json(agent, "/api/v1/contract")["name"], "second");

    write_text(contract, "schema_version: 1\nname: broken\nchecks:\n  - kind: tirton\n");
    agent.signal(SIGHUP);
    Json served;
    ASSERT_TRUE(wait_until([&] {
      served = get_json(agent, "/api/v1/contract");
      return served["reload_error"].is_string();
    })) << agent.log();
    EXPECT_EQ(served["name"], "second");
    EXPECT_NE(served["reload_error"].get<std::string>().find(":4:11: error: unknown check kind"),
              std::string::npos);
    EXPECT_NE(agent.log().find("the last good one stays in force"), std::string::npos);
    EXPECT_EQ(http_get(agent.url(), "/healthz").status, 200);
    EXPECT_EQ(agent.stop(), 0);
  }

  // Without the long poll, a changed file is picked up by itself.
  write_text(config,
             "contract_poll: 200ms\ndatabase: " + (dir.path() / "other.db").string() + "\n");
  write_text(contract, python_contract("third"));
  AgentProcess agent(dir.path(), arguments);
  const auto third = wait_for_report(agent);
  EXPECT_EQ(third["contract"]["name"], "third");
  write_text(contract, python_contract("fourth"));
  const auto fourth = wait_for_scan_after(agent, third["scan_id"].get<std::int64_t>());
  EXPECT_EQ(fourth["contract"]["name"], "fourth");
}

// An agent on a private copy of the demo host's hanging env, so that its
// probes can be told from other tests': each scan takes the smoke time-out.
struct HangingEnvAgent {
  explicit HangingEnvAgent(const TempDir& dir)
      : env(dir.path() / "host/miniconda3/envs/torch-fl-cpu"), arguments(one_env_arguments(dir)) {
    build_demo_host(dir.path() / "host");
    arguments[3] = env.string();
  }
  std::vector<pid_t> probes() const {
    return processes_with_environment("CONDA_PREFIX=" + env.string());
  }
  std::filesystem::path env;
  std::vector<std::string> arguments;
};

TEST(Serve, KilledMidScanTheDatabaseIsIntactAndThePreviousReportIsServed) {
  TempDir dir;
  const HangingEnvAgent hanging(dir);
  const auto& arguments = hanging.arguments;
  const auto probes = [&] { return hanging.probes(); };
  std::int64_t first_scan = 0;
  {
    AgentProcess agent(dir.path(), arguments);
    first_scan = wait_for_report(agent)["scan_id"].get<std::int64_t>();
  }
  {
    AgentProcess agent(dir.path(), arguments);
    // The stored report is served at once, while the startup scan runs.
    int status = 0;
    const auto served = get_json(agent, "/api/v1/report", &status);
    EXPECT_EQ(status, 200);
    EXPECT_EQ(served["scan_id"], first_scan);
    ASSERT_TRUE(wait_until([&] { return !probes().empty(); })) << agent.log();
    agent.kill_hard();
  }
  // The probe the agent was running dies with it, hung or not.
  EXPECT_TRUE(wait_until([&] { return probes().empty(); }, std::chrono::seconds(10)))
      << probes().size() << " probe processes outlived the agent";
  {
    daemon::sqlite::Database db(dir.path() / "agent.db");
    EXPECT_EQ(db.query_text("PRAGMA integrity_check"), "ok");
    EXPECT_EQ(db.query_int("SELECT MAX(id) FROM scans"), first_scan);
  }
  AgentProcess agent(dir.path(), arguments);
  const auto served = get_json(agent, "/api/v1/report");
  EXPECT_EQ(served["scan_id"], first_scan);
  EXPECT_EQ(served["verdict"], "drift");
}

// Under systemd (a notify socket and WatchdogSec=): READY=1, the status, and
// watchdog pings that go on while a probe hangs, since the scan is within
// its deadline; STOPPING=1 at the end.
TEST(Serve, TellsSystemdItsStateAndPingsTheWatchdogThroughAHangingProbe) {
  TempDir dir;
  const HangingEnvAgent hanging(dir);
  NotifySocket systemd(dir.path() / "notify");
  ::setenv("WATCHDOG_USEC", "1000000", 1);
  AgentProcess agent(dir.path(), hanging.arguments);
  ::unsetenv("WATCHDOG_USEC");
  ASSERT_TRUE(wait_until([&] { return !hanging.probes().empty(); })) << agent.log();
  const auto messages = systemd.receive(std::chrono::seconds(15), [](const auto& received) {
    return count_messages(received, "WATCHDOG=1") >= 4;
  });
  EXPECT_EQ(count_messages(messages, "READY=1"), 1U) << ::testing::PrintToString(messages);
  EXPECT_TRUE(has_message_starting(messages, "STATUS=first scan running; contract "))
      << ::testing::PrintToString(messages);
  EXPECT_GE(count_messages(messages, "WATCHDOG=1"), 4U) << ::testing::PrintToString(messages);
  EXPECT_FALSE(hanging.probes().empty()) << "the probe should still hang";
  EXPECT_NE(agent.log().find("systemd watchdog: 1000 ms"), std::string::npos) << agent.log();
  EXPECT_EQ(agent.stop(std::chrono::seconds(20)), 0) << agent.log();
  const auto last = systemd.receive(std::chrono::seconds(2), [](const auto& received) {
    return count_messages(received, "STOPPING=1") == 1;
  });
  EXPECT_EQ(count_messages(last, "STOPPING=1"), 1U) << ::testing::PrintToString(last);
}

// While the first scan runs, /api/v1/report serves the envs judged so far:
// verdict "pending" (never compliant), what is still running, valid against
// the schema; fleetctl shows it and exits 2; then the full report replaces it.
TEST(Serve, TheFirstScanShowsEachEnvAsItIsJudged) {
  TempDir dir;
  AgentProcess agent(dir.path(),
                     {"--contract", quick_demo_contract(dir.path()).string(), "--prefix",
                      (demo_host() / "miniconda3/envs/torch-fl-cpu").string(), "--prefix",
                      (demo_host() / "miniconda3/envs/torch-fl-activate").string(), "--prefix",
                      (demo_host() / "venvs/xpu210v").string(), "--image-tag-file",
                      (demo_host() / "etc/flagos-image").string(), "--database",
                      (dir.path() / "agent.db").string(), "--concurrency", "3"});
  Json partial;
  ASSERT_TRUE(wait_until(
      [&] {
        int status = 0;
        partial = get_json(agent, "/api/v1/report", &status);
        return status == 200 && partial.contains("partial") && partial["partial"]["done"] == 2;
      },
      std::chrono::seconds(30)))
      << partial << agent.log();
  EXPECT_EQ(partial["verdict"], "pending");
  EXPECT_EQ(partial["partial"]["total"], 3);
  EXPECT_EQ(partial["partial"]["pending_envs"], Json({"torch-fl-cpu"})) << partial;
  EXPECT_EQ(partial["reasons"], Json({"the first scan is running: 2 of 3 envs judged so far"}));
  std::set<std::string> judged;
  for (const auto& env : partial["envs"]) {
    judged.insert(env["name"].get<std::string>());
    EXPECT_EQ(env["verdict"], "drift") << env["name"];
  }
  EXPECT_EQ(judged, (std::set<std::string>{"torch-fl-activate", "xpu210v"}));
  EXPECT_FALSE(partial.contains("scan_id"));
  if (const auto violations = report_schema_violations(partial)) {
    EXPECT_EQ(*violations, "");
  }
  const auto fleetctl = run_command({FLEETCTL_PATH, "check", agent.url()});
  EXPECT_EQ(fleetctl.exit_code, 2) << fleetctl.out << fleetctl.err;
  EXPECT_NE(fleetctl.out.find("the first scan is running: 2 of 3 envs judged so far"),
            std::string::npos)
      << fleetctl.out;
  // Nothing but the full report feeds the metrics and the compliance answer.
  EXPECT_EQ(http_get(agent.url(), "/api/v1/compliance").status, 503);
  EXPECT_EQ(http_get(agent.url(), "/metrics").body.find("envcontract_env_compliant{"),
            std::string::npos);

  const auto report = wait_for_report(agent);
  EXPECT_FALSE(report.contains("partial"));
  EXPECT_EQ(report["verdict"], "drift");
  EXPECT_EQ(report["envs"].size(), 3U);
}

// SIGTERM while a probe hangs: the agent ends the probe and exits at once,
// rather than waiting out the smoke time-out.
TEST(Serve, SigtermEndsARunningScanWithinAShortGrace) {
  TempDir dir;
  const HangingEnvAgent hanging(dir);
  const auto probes = [&] { return hanging.probes(); };
  AgentProcess agent(dir.path(), hanging.arguments);
  ASSERT_TRUE(wait_until([&] { return !probes().empty(); })) << agent.log();
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(agent.stop(std::chrono::seconds(20)), 0) << agent.log();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(3)) << agent.log();
  EXPECT_TRUE(wait_until([&] { return probes().empty(); }, std::chrono::seconds(5)));
  EXPECT_NE(agent.log().find("scan cut short by shutdown: not recorded"), std::string::npos)
      << agent.log();
  daemon::sqlite::Database db(dir.path() / "agent.db");
  EXPECT_EQ(db.query_text("PRAGMA integrity_check"), "ok");
}

// The scan's watchdog: past scan_deadline, the hanging probe is stopped and
// the scan finishes and is published, the env an error saying why.
TEST(Serve, TheScanWatchdogStopsAHangAndPublishes) {
  TempDir dir;
  HangingEnvAgent hanging(dir);
  const auto config = dir.write("agent.yaml", "scan_deadline: 2s\n");
  auto arguments = hanging.arguments;
  arguments.insert(arguments.end(), {"--config", config.string()});
  AgentProcess agent(dir.path(), arguments);
  const auto started = std::chrono::steady_clock::now();
  const auto report = wait_for_report(agent);
  // The smoke stage alone would take its 6 s time-out.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(6)) << agent.log();
  ASSERT_EQ(report["envs"].size(), 1U);
  bool stopped = false;
  for (const auto& check : report["envs"][0]["checks"]) {
    if (check["status"] == "error" && check["diagnosis"]["cause"] == "stopped") {
      stopped = true;
      EXPECT_NE(check["diagnosis"]["summary"].get<std::string>().find(
                    "the scan's deadline of 2 s passed (scan_deadline in the agent's config)"),
                std::string::npos)
          << check["diagnosis"]["summary"];
    }
  }
  EXPECT_TRUE(stopped) << common::json_text(report["envs"][0]["checks"], 2);
  EXPECT_NE(report["envs"][0]["verdict"], "compliant");
  EXPECT_TRUE(wait_until([&] { return hanging.probes().empty(); }, std::chrono::seconds(5)));
}

// kill -9 at arbitrary moments of an agent that scans every second, so that
// some kills land in the middle of a database write: the file stays sound
// and the next agent opens it.
TEST(Serve, KilledAtAnyMomentTheDatabaseStaysSound) {
  TempDir dir;
  auto arguments = one_env_arguments(dir);
  arguments.back() = "1s";  // --interval
  for (int round = 0; round < 5; ++round) {
    {
      AgentProcess agent(dir.path(), arguments);
      std::this_thread::sleep_for(std::chrono::milliseconds(300 + 370 * round));
      agent.kill_hard();
    }
    daemon::sqlite::Database db(dir.path() / "agent.db");
    EXPECT_EQ(db.query_text("PRAGMA integrity_check"), "ok") << "round " << round;
  }
  AgentProcess agent(dir.path(), arguments);
  const auto report = wait_for_report(agent);
  EXPECT_TRUE(report.contains("scan_id"));
}

// The disk fills (a file size limit stands in for it): the scan's report is
// served saying it was not recorded, the agent keeps serving, and once there
// is room the next agent's scans are recorded again.
TEST(Serve, AFullDiskLeavesScansServedButNotPersistedAndWritesResume) {
  TempDir dir;
  const auto arguments = one_env_arguments(dir);
  const auto database = dir.path() / "agent.db";
  std::int64_t first = 0;
  {
    AgentProcess agent(dir.path(), arguments);
    first = wait_for_report(agent)["scan_id"].get<std::int64_t>();
  }
  {
    // Held open so that the WAL index exists and the WAL starts empty: the
    // agent's first write past 8 KiB fails.
    daemon::sqlite::Database holder(database);
    holder.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    rlimit saved{};
    ::getrlimit(RLIMIT_FSIZE, &saved);
    rlimit tight = saved;
    tight.rlim_cur = 8 * 1024;
    const auto previous = std::signal(SIGXFSZ, SIG_IGN);
    ::setrlimit(RLIMIT_FSIZE, &tight);
    std::unique_ptr<AgentProcess> agent;
    try {
      agent = std::make_unique<AgentProcess>(dir.path(), arguments);
    } catch (...) {
      ::setrlimit(RLIMIT_FSIZE, &saved);
      std::signal(SIGXFSZ, previous);
      throw;
    }
    ::setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, previous);
    Json report;
    ASSERT_TRUE(wait_until([&] {
      report = get_json(*agent, "/api/v1/report");
      return report.contains("not_persisted");
    }));
    EXPECT_NE(report["not_persisted"].get<std::string>().find("could not record this scan"),
              std::string::npos);
    int status = 0;
    EXPECT_EQ(get_json(*agent, "/healthz", &status)["status"], "ok");
    EXPECT_NE(http_get(agent->url(), "/metrics").body.find("envcontract_store_failures_total 1"),
              std::string::npos);
    EXPECT_EQ(agent->stop(), 0);
    EXPECT_EQ(holder.query_text("PRAGMA integrity_check"), "ok");
  }
  AgentProcess agent(dir.path(), arguments);
  const auto resumed = wait_for_scan_after(agent, first);
  EXPECT_GT(resumed["scan_id"].get<std::int64_t>(), first);
  EXPECT_FALSE(resumed.contains("not_persisted"));
}

TEST(Serve, BadRequestsGetJsonErrorsAndTheAgentKeepsServing) {
  TempDir dir;
  AgentProcess agent(dir.path(), one_env_arguments(dir));
  wait_for_report(agent);

  const auto unknown = http_get(agent.url(), "/api/v2/everything");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(Json::parse(unknown.body)["error"], "no such endpoint: GET /api/v2/everything");
  const auto wrong_method = http_request(agent.url(), "DELETE", "/api/v1/report");
  EXPECT_EQ(wrong_method.status, 405);
  EXPECT_EQ(wrong_method.headers.at("Allow"), "GET");
  EXPECT_EQ(http_get(agent.url(), "/api/v1/scan").status, 405);

  for (const char* path : {"/api/v1/history?since=last-tuesday", "/api/v1/history?limit=0",
                           "/api/v1/history?limit=abc", "/api/v1/history?colour=blue",
                           "/api/v1/history?env=a&target=b"}) {
    const auto result = http_get(agent.url(), path);
    EXPECT_EQ(result.status, 400) << path;
    EXPECT_TRUE(Json::parse(result.body)["error"].is_string()) << path;
  }
  EXPECT_EQ(http_get(agent.url(), "/api/v1/scans/999999").status, 404);
  const auto huge = http_post(agent.url(), "/api/v1/scan", std::string(200 * 1024, 'x'));
  EXPECT_EQ(huge.status, 413);
  EXPECT_EQ(http_get(agent.url(), "/healthz").status, 200);
  EXPECT_EQ(http_get(agent.url(), "/api/v1/report").status, 200);
}

// cpp-httplib sets SO_REUSEPORT by default: a second agent would bind the
// same port and the kernel would spread requests over both (answers from two
// contracts, alternating). The second one must stop with exit 2 instead.
TEST(Serve, ASecondAgentOnATakenPortStopsWithExit2) {
  TempDir dir;
  AgentProcess first(dir.path(), one_env_arguments(dir));
  TempDir other;
  auto arguments = one_env_arguments(other);
  const std::string address = "127.0.0.1:" + std::to_string(first.port());
  std::vector<std::string> argv = {"/usr/bin/timeout", "20",   ENVCONTRACTD_PATH, "serve",
                                   "--listen",         address};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  const auto second = run_command(argv);
  EXPECT_EQ(second.exit_code, 2) << "124 means it served: " << second.err;
  EXPECT_NE(second.err.find("cannot listen on " + address), std::string::npos) << second.err;
  EXPECT_EQ(http_get(first.url(), "/healthz").status, 200);
}

// A loopback port nothing listens on now (0 when none could be had).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

// Whether another process could listen on `port` of 127.0.0.1 now.
bool port_is_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                    ::listen(fd, 1) == 0;
  ::close(fd);
  return free;
}

// The ready file is written last, once the agent listens and its server
// thread runs: when it cannot be, both verbs stop all they started and exit
// 2 saying what to fix (it was an abort, std::terminate with the thread running).
TEST(Serve, AReadyFileThatCannotBeWrittenStopsEverythingWithExit2) {
  TempDir dir;
  const auto inventory = dir.write("inventory", "127.0.0.1:9\n");
  const std::vector<std::vector<std::string>> verbs = {
      [&] {
        auto serve = std::vector<std::string>{"serve"};
        const auto arguments = one_env_arguments(dir);
        serve.insert(serve.end(), arguments.begin(), arguments.end());
        return serve;
      }(),
      {"fleet", "--inventory", inventory.string()}};
  for (const auto& verb : verbs) {
    SCOPED_TRACE(verb.front());
    const int port = free_port();
    ASSERT_NE(port, 0);
    std::vector<std::string> argv = {"/usr/bin/timeout", "20", ENVCONTRACTD_PATH};
    argv.insert(argv.end(), verb.begin(), verb.end());
    argv.insert(argv.end(), {"--listen", "127.0.0.1:" + std::to_string(port), "--ready-file",
                             "/no/such/dir/url"});
    const auto result = run_command(argv);
    EXPECT_EQ(result.exit_code, 2) << "-1 (a signal) is an abort, 124 a hang:\n" << result.err;
    EXPECT_NE(result.err.find("cannot write the ready file /no/such/dir/url: No such file or "
                              "directory (give --ready-file a path in a directory that exists"),
              std::string::npos)
        << result.err;
    EXPECT_EQ(result.err.find("terminate"), std::string::npos) << result.err;
    EXPECT_TRUE(port_is_free(port));
    EXPECT_FALSE(std::filesystem::exists("/no/such/dir/url.tmp"));
  }
}

// A database whose directory is not there (or is a file) stops the agent at
// start-up, after it bound its port, with what went wrong; the missing
// directory is not made (only the package's default one would be).
TEST(Serve, ADatabaseWhoseDirectoryIsNotThereStopsWithExit2) {
  TempDir dir;
  const auto file = dir.write("a-file", "");
  const auto missing = dir.path() / "no-such-dir";
  for (const auto& [database, said] :
       {std::pair{file / "agent.db",
                  "the database's directory " + file.string() + " is not a directory"},
        std::pair{missing / "agent.db", "the database's directory " + missing.string() +
                                            " does not exist; create it, or name a database in "
                                            "a directory that exists"}}) {
    auto arguments = one_env_arguments(dir);
    *(std::find(arguments.begin(), arguments.end(), "--database") + 1) = database.string();
    const int port = free_port();
    ASSERT_NE(port, 0);
    std::vector<std::string> argv = {"/usr/bin/timeout", "20",
                                     ENVCONTRACTD_PATH,  "serve",
                                     "--listen",         "127.0.0.1:" + std::to_string(port)};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    const auto result = run_command(argv);
    EXPECT_EQ(result.exit_code, 2) << "-1 is an abort, 124 a hang:\n" << result.err;
    EXPECT_NE(result.err.find(said), std::string::npos) << result.err;
    EXPECT_TRUE(port_is_free(port));
  }
  EXPECT_FALSE(std::filesystem::exists(missing));
}

TEST(Serve, StartupErrorsSayWhatToFix) {
  TempDir dir;
  std::string log;
  const auto bad_contract = dir.write("bad.yaml", "schema_version: 1\nchecks:\n  - kind: tirton\n");
  EXPECT_EQ(
      AgentProcess::run_to_exit(
          dir.path(),
          {"--contract", bad_contract.string(), "--database", (dir.path() / "a.db").string()}, log),
      2);
  EXPECT_NE(log.find(":3:11: error: unknown check kind 'tirton'"), std::string::npos) << log;

  const auto garbage = dir.write("garbage.db", std::string(4096, 'x'));
  EXPECT_EQ(AgentProcess::run_to_exit(dir.path(),
                                      {"--contract", quick_demo_contract(dir.path()).string(),
                                       "--database", garbage.string()},
                                      log),
            2);
  EXPECT_NE(log.find("is not an envcontract database"), std::string::npos) << log;

  const auto config = dir.write("agent.yaml", "intervall: 5m\nlisten: nowhere\n");
  EXPECT_EQ(AgentProcess::run_to_exit(dir.path(), {"--config", config.string()}, log), 2);
  EXPECT_NE(log.find("unknown key 'intervall'"), std::string::npos) << log;
  EXPECT_NE(log.find("did you mean 'interval'"), std::string::npos) << log;
  EXPECT_NE(log.find("'listen' must be HOST:PORT"), std::string::npos) << log;
}

}  // namespace
}  // namespace envcontract
