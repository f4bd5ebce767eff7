// A host whose envs were written to stop the agent (tests/fixtures/
// make_hostile_host.py): FIFOs where files are read, a 30 KB line, a
// 60,000-digit version, invalid UTF-8, FIFO and oversized .condarc files.
// Scanned by `scan` and by `serve`: every hostile env is reported with the
// file named, the good env complies, the agent keeps serving, and nothing of
// the scan is left running.
#include <dirent.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "common/json_text.hpp"
#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/report_schema.hpp"
#include "tests/support/run_command.hpp"

namespace envcontract {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers
namespace fs = std::filesystem;

const char* const k_contract = R"(schema_version: 1
name: hostile-host
envs:
  require: any
checks:
  - id: python
    kind: python
    version: "3.10"
  - id: goodpkg
    kind: distributions
    pins:
      goodpkg: ">=1.0"
  - id: imports
    kind: imports
    modules: [goodpkg]
)";

// Each hostile env and the file the report must name.
const std::map<std::string, std::string> k_refused = {
    {"fifo-metadata", "goodpkg-1.0.dist-info/METADATA is a FIFO, not a regular file"},
    {"fifo-conda-meta", "conda-meta/goodpkg-1.0-py_0.json is a FIFO, not a regular file"},
    {"fifo-torch-version", "torch/version.py is a FIFO, not a regular file"},
    {"long-line-torch-version",
     "torch/version.py has a line of 30736 bytes, over the 4 KiB limit for a Python source"},
    {"huge-pyvenv-version",
     "pyvenv.cfg has a line of 60010 bytes, over the 4 KiB limit for a small text file"},
    {"fifo-library",
     "goodpkg/libhostile.so is not a regular file, where a shared library was expected"},
};

class HostileHost : public ::testing::Test {
 protected:
  void SetUp() override {
    m_root = m_dir.path() / "host";
    const auto python = fs::canonical(demo_host() / "venvs/xpu210v/bin/python");
    const auto built = run_command({"/usr/bin/python3",
                                    ENVCONTRACT_SOURCE_DIR "/tests/fixtures/make_hostile_host.py",
                                    m_root.string(), python.string()});
    ASSERT_EQ(built.exit_code, 0) << built.err;
    m_contract = m_dir.write("hostile.yaml", k_contract);
  }

  // Processes whose working directory is inside the hostile host: probes
  // run there, so none may outlive the scan.
  std::vector<std::string> leftovers() const {
    std::vector<std::string> found;
    DIR* proc = ::opendir("/proc");
    while (const dirent* entry = proc ? ::readdir(proc) : nullptr) {
      std::error_code error;
      const auto cwd = fs::read_symlink(fs::path("/proc") / entry->d_name / "cwd", error);
      if (!error && cwd.string().starts_with(m_root.string())) {
        found.push_back(std::string(entry->d_name) + " in " + cwd.string());
      }
    }
    if (proc) {
      ::closedir(proc);
    }
    return found;
  }

  void expect_hostile_envs_reported(const Json& report) {
    std::map<std::string, const Json*> envs;
    for (const auto& env : report["envs"]) {
      envs[env["name"].get<std::string>()] = &env;
    }
    ASSERT_TRUE(envs.contains("good")) << common::json_text(report, 2);
    EXPECT_EQ((*envs["good"])["verdict"], "compliant");
    ASSERT_TRUE(envs.contains("project/.venv"));
    EXPECT_EQ((*envs["project/.venv"])["verdict"], "compliant");
    for (const auto& [name, refusal] : k_refused) {
      ASSERT_TRUE(envs.contains(name)) << name;
      const Json& env = *envs[name];
      EXPECT_NE(env["verdict"], "compliant") << name;
      const Json* facts_check = nullptr;
      for (const auto& check : env["checks"]) {
        if (check["id"] == "env:facts") {
          facts_check = &check;
        }
      }
      ASSERT_NE(facts_check, nullptr) << name << " has no env:facts check";
      EXPECT_EQ((*facts_check)["status"], "error");
      EXPECT_EQ((*facts_check)["diagnosis"]["cause"], "unreadable_file");
      const std::string summary = (*facts_check)["diagnosis"]["summary"];
      EXPECT_NE(summary.find(refusal), std::string::npos) << name << ": " << summary;
    }
    // Names and versions that are not UTF-8 are carried, replaced, and judged.
    ASSERT_TRUE(envs.contains("invalid-utf8"));
    EXPECT_EQ((*envs["invalid-utf8"])["verdict"], "compliant");

    std::string problems;
    for (const auto& problem : report["problems"]) {
      problems +=
          problem["path"].get<std::string>() + ": " + problem["problem"].get<std::string>() + "\n";
    }
    EXPECT_NE(problems.find((m_root / "home/alice/.condarc").string() +
                            ": conda configuration not read: it is a FIFO, not a regular file"),
              std::string::npos)
        << problems;
    EXPECT_NE(problems.find((m_root / "home/bob/.condarc").string() +
                            ": conda configuration not read: it is 2230811 bytes, over the 1 MiB "
                            "limit"),
              std::string::npos)
        << problems;
    if (const auto violations = report_schema_violations(report)) {
      EXPECT_EQ(*violations, "");
    }
  }

  TempDir m_dir;
  fs::path m_root;
  fs::path m_contract;
};

TEST_F(HostileHost, ScanReportsEveryHostileEnvAndTheGoodOneComplies) {
  const auto result = run_command({ENVCONTRACTD_PATH, "scan", "--contract", m_contract.string(),
                                   "--root", m_root.string(), "--format", "json"});
  // The good env complies, so the host does (envs: require: any).
  EXPECT_EQ(result.exit_code, 0) << result.err;
  const auto report = Json::parse(result.out);
  expect_hostile_envs_reported(report);
  EXPECT_EQ(leftovers(), std::vector<std::string>());
}

TEST_F(HostileHost, ServeKeepsServingAndReportsEveryHostileEnv) {
  AgentProcess agent(m_dir.path(),
                     {"--contract", m_contract.string(), "--root", m_root.string(), "--database",
                      (m_dir.path() / "agent.db").string(), "--interval", "1h"});
  const auto report = wait_for_report(agent);
  expect_hostile_envs_reported(report);
  int status = 0;
  EXPECT_EQ(get_json(agent, "/healthz", &status)["status"], "ok");
  const auto venv = get_json(agent, "/api/v1/envs/project/.venv", &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(venv["verdict"], "compliant");
  // A second scan over the same host: nothing stuck from the first.
  EXPECT_EQ(
      http_post(agent.url(), "/api/v1/scan", "", {{"X-Requested-By", "envcontract-tests"}}).status,
      202);
  const auto second = wait_for_scan_after(agent, report.value("scan_id", 0));
  expect_hostile_envs_reported(second);
  EXPECT_EQ(leftovers(), std::vector<std::string>());
  EXPECT_EQ(agent.stop(), 0) << agent.log();
}

}  // namespace
}  // namespace envcontract
