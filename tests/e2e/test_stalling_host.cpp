// A host where reading some files never returns: a user's FUSE mount in a
// home directory, and an env with a link into a filesystem whose server does
// not answer (real FUSE mounts, tests/support/hung_fuse.py). The agent keeps
// out of the user's mount, reports the blocked env with what it was reading,
// judges the others, keeps serving, scans again, and stops when told.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "common/json_text.hpp"
#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/hung_mount.hpp"
#include "tests/support/system_venv.hpp"

namespace envcontract {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers
namespace fs = std::filesystem;

const char* const k_contract = R"(schema_version: 1
name: stalling-host
envs:
  require: any
checks:
  - id: imports
    kind: imports
    modules: [json]
)";

class StallingHost : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = HungMount::unavailable(); !why.empty()) {
      GTEST_SKIP() << "skipped: " << why;
    }
    open_to_all(m_dir.path());  // root's envs are read and run as a uid of their own
    m_root = m_dir.path() / "host";
  }

  static fs::path make_venv(const fs::path& prefix) { return make_system_venv(prefix); }
  static fs::path site(const fs::path& prefix) { return system_venv_site(prefix); }

  static const Json* env_named(const Json& report, const std::string& name) {
    for (const auto& env : report["envs"]) {
      if (env["name"] == name) {
        return &env;
      }
    }
    ADD_FAILURE() << "no env " << name << " in " << common::json_text(report, 1);
    return nullptr;
  }

  TempDir m_dir;
  fs::path m_root;
};

TEST_F(StallingHost, OnlyTheBlockedEnvIsLostAndTheAgentKeepsServing) {
  make_venv(m_root / "opt" / "fine");
  const fs::path victim = make_venv(m_root / "opt" / "victim");
  const fs::path dead = m_dir.path() / "dead";
  fs::create_directories(dead);
  fs::create_symlink(dead / "evil.pth", site(victim) / "evil.pth");
  const fs::path user_mount = m_root / "home" / "alice" / "mnt";
  fs::create_directories(user_mount);
  HungMount dead_server(dead, 0);
  HungMount users(user_mount, 65534);
  const auto config = m_dir.write("agent.yaml", "reading_deadline: 2s\n");
  const auto contract = m_dir.write("contract.yaml", k_contract);

  AgentProcess agent(m_dir.path(), {"--config", config.string(), "--contract", contract.string(),
                                    "--root", m_root.string(), "--database",
                                    (m_dir.path() / "agent.db").string(), "--interval", "1h"});
  const auto report = wait_for_report(agent, std::chrono::seconds(60));
  EXPECT_EQ(report["verdict"], "compliant") << "the fine env complies (envs: require: any)";
  const Json* fine = env_named(report, "fine");
  ASSERT_NE(fine, nullptr);
  EXPECT_EQ((*fine)["verdict"], "compliant") << common::json_text(*fine, 1);
  const Json* blocked = env_named(report, "victim");
  ASSERT_NE(blocked, nullptr);
  EXPECT_EQ((*blocked)["verdict"], "error");
  const Json* facts = find_check(*blocked, "env:facts");
  ASSERT_NE(facts, nullptr);
  EXPECT_EQ((*facts)["diagnosis"]["cause"], "stalled_read");
  const std::string summary = (*facts)["diagnosis"]["summary"];
  EXPECT_NE(summary.find("did not finish within 2 s"), std::string::npos) << summary;
  EXPECT_NE(summary.find((site(victim) / "evil.pth").string()), std::string::npos) << summary;
  const Json* imports = find_check(*blocked, "imports");
  ASSERT_NE(imports, nullptr);
  EXPECT_EQ((*imports)["status"], "skip");
  EXPECT_EQ((*imports)["diagnosis"]["evidence"]["blocked_by"], "env:facts");
  std::string problems;
  for (const auto& problem : report["problems"]) {
    problems += problem["problem"].get<std::string>() + "\n";
  }
  EXPECT_NE(problems.find(user_mount.string() + " is a fuse.hung filesystem mounted by "),
            std::string::npos)
      << problems;

  // Served throughout, and a second scan does not wait on the blocked reader.
  int status = 0;
  EXPECT_EQ(get_json(agent, "/healthz", &status)["status"], "ok");
  EXPECT_EQ(
      http_post(agent.url(), "/api/v1/scan", "", {{"X-Requested-By", "envcontract-tests"}}).status,
      202);
  const auto second = wait_for_scan_after(agent, report.value("scan_id", 0));
  const Json* again = env_named(second, "victim");
  ASSERT_NE(again, nullptr);
  const Json* still = find_check(*again, "env:facts");
  ASSERT_NE(still, nullptr);
  EXPECT_NE(still->at("diagnosis")["summary"].get<std::string>().find("is still blocked"),
            std::string::npos)
      << common::json_text(*still, 1);
  // It stops while its reader is still blocked.
  EXPECT_EQ(agent.stop(std::chrono::seconds(10)), 0) << agent.log();
}

TEST_F(StallingHost, TheAgentStopsAtOnceWhileAReaderIsBlocked) {
  const fs::path victim = make_venv(m_root / "opt" / "victim");
  const fs::path dead = m_dir.path() / "dead";
  fs::create_directories(dead);
  fs::create_symlink(dead / "evil.pth", site(victim) / "evil.pth");
  HungMount dead_server(dead, 0);
  const auto config = m_dir.write("agent.yaml", "reading_deadline: 10m\n");
  const auto contract = m_dir.write("contract.yaml", k_contract);

  AgentProcess agent(m_dir.path(), {"--config", config.string(), "--contract", contract.string(),
                                    "--root", m_root.string(), "--database",
                                    (m_dir.path() / "agent.db").string(), "--interval", "1h"});
  // The first scan waits on the blocked reader; the agent serves meanwhile.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  int status = 0;
  EXPECT_EQ(get_json(agent, "/healthz", &status)["status"], "ok");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(agent.stop(std::chrono::seconds(20)), 0) << agent.log();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << agent.log();
}

}  // namespace
}  // namespace envcontract
