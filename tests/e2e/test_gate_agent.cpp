// `envcontractd gate` asking a real local agent (docs/ci.md): a warm agent
// answers for an unchanged env without running it, an env changed since
// the agent's last scan is judged on what it is now, every decision is in
// the agent's history and /metrics, and with no agent, another contract or
// a port held by someone else the gate judges the env itself.
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>

#include "common/json_text.hpp"
#include "report/ci_output.hpp"
#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/background_process.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/system_venv.hpp"

namespace envcontract::testing {
namespace {

namespace fs = std::filesystem;

const std::string k_binary = ENVCONTRACTD_PATH;

// An import the env's interpreter runs, and a module a job's env must not
// have (what a stray `pip install` brings).
const std::string k_contract = R"(schema_version: 1
name: gate-line
envs:
  require: any
checks:
  - id: imports
    kind: imports
    modules: [json]
  - id: no-shadow
    kind: modules
    absent: [shadowpkg]
)";

std::vector<std::string> lines_starting(const std::string& text, const std::string& start) {
  std::vector<std::string> found;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(start)) {
      found.push_back(line);
    }
  }
  return found;
}

class GateAgent : public ::testing::Test {
 protected:
  void SetUp() override {
    make_system_venv(env());
    write_text(contract(), k_contract);
    m_agent = std::make_unique<AgentProcess>(
        m_dir.path(),
        std::vector<std::string>{"--contract", contract().string(), "--root",
                                 (m_dir.path() / "envs").string(), "--database",
                                 (m_dir.path() / "agent.db").string(), "--interval", "1h"});
    const auto report = wait_for_report(*m_agent);
    ASSERT_EQ(report["envs"].size(), 1U) << common::json_text(report, 2);
  }

  fs::path env() const { return m_dir.path() / "envs/app"; }
  fs::path contract() const { return m_dir.path() / "contract.yaml"; }
  std::string agent_address() const { return "127.0.0.1:" + std::to_string(m_agent->port()); }

  // A GitHub Actions job's first step on the env, with only the runner's
  // variables in its environment.
  CommandResult gate(const std::string& agent, const std::vector<std::string>& flags = {},
                     const std::map<std::string, std::string>& extra = {}) const {
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "-i",
                                     "PATH=/usr/bin:/bin",
                                     "GITHUB_ACTIONS=true",
                                     "GITHUB_REPOSITORY=org/repo",
                                     "GITHUB_RUN_ID=99",
                                     "GITHUB_RUN_ATTEMPT=2",
                                     "GITHUB_JOB=tests",
                                     "GITHUB_SERVER_URL=https://github.example",
                                     "VIRTUAL_ENV=" + env().string()};
    for (const auto& [name, value] : extra) {
      argv.push_back(name + "=" + value);
    }
    argv.insert(argv.end(), {k_binary, "gate", "--agent", agent});
    if (std::find(flags.begin(), flags.end(), "--contract") == flags.end()) {
      argv.insert(argv.end(), {"--contract", contract().string()});
    }
    argv.insert(argv.end(), flags.begin(), flags.end());
    return run_command(argv);
  }

  Json decisions() const { return get_json(*m_agent, "/api/v1/gate/decisions")["decisions"]; }

  std::string counter(const std::string& labels) const {
    const auto metrics = http_get(m_agent->url(), "/metrics").body;
    const auto lines = lines_starting(metrics, "envcontract_gate_decisions_total{" + labels + "}");
    return lines.size() == 1 ? lines[0].substr(lines[0].rfind(' ') + 1) : "absent";
  }

  void install_shadow() const {
    fs::create_directories(system_venv_site(env()) / "shadowpkg");
    write_text(system_venv_site(env()) / "shadowpkg/__init__.py", "");
  }

  TempDir m_dir;
  std::unique_ptr<AgentProcess> m_agent;
};

TEST_F(GateAgent, AWarmAgentJudgesAnUnchangedEnvWithoutRunningItAndRecordsTheDecision) {
  auto result = gate(agent_address());
  // The env's interpreter is the system's: a test run beside this one can
  // change its inode's change time (a demo host built by hard-linking
  // interpreters), and the agent then rightly probes the env again. The
  // next gate finds nothing changed since, and must reuse.
  std::size_t gates = 1;
  if (result.err.find("(1 env(s) probed, 0 unchanged)") != std::string::npos) {
    result = gate(agent_address());
    gates = 2;
  }
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.err.find("envcontract gate: judged by the agent at " + agent_address() + " in "),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("(0 env(s) probed, 1 unchanged); decision recorded as #" +
                            std::to_string(gates)),
            std::string::npos)
      << result.err;
  // What the job shows is what judging the env itself shows.
  const auto itself = gate("none");
  EXPECT_EQ(itself.exit_code, 0) << itself.err;
  EXPECT_EQ(lines_starting(result.out, "::notice "),
            std::vector<std::string>{"::notice title=envcontract::app complies with gate-line"});
  EXPECT_EQ(lines_starting(itself.out, "::notice "), lines_starting(result.out, "::notice "));

  const auto recorded = decisions();  // the latest first
  ASSERT_EQ(recorded.size(), gates) << common::json_text(recorded, 2);
  EXPECT_EQ(recorded[0]["job"]["ci"], "github");
  EXPECT_EQ(recorded[0]["job"]["id"], "org/repo run 99 attempt 2 job tests");
  EXPECT_EQ(recorded[0]["job"]["url"], "https://github.example/org/repo/actions/runs/99");
  EXPECT_EQ(recorded[0]["env"], fs::canonical(env()).string());
  EXPECT_EQ(recorded[0]["contract"]["name"], "gate-line");
  EXPECT_EQ(recorded[0]["outcome"], "go");
  EXPECT_EQ(recorded[0]["stopped"], false);
  EXPECT_EQ(recorded[0]["judged_by"], "agent");
  EXPECT_EQ(recorded[0]["why"], "app complies with gate-line");
  EXPECT_EQ(counter(R"(bypassed="false",judged_by="agent",outcome="go")"), std::to_string(gates));
  EXPECT_EQ(counter(R"(bypassed="false",judged_by="agent",outcome="drift")"), "0");
}

TEST_F(GateAgent, AnEnvChangedSinceTheLastScanIsJudgedOnWhatItIsNow) {
  install_shadow();
  const auto changed = gate(agent_address());
  EXPECT_EQ(changed.exit_code, 1) << changed.out << changed.err;
  EXPECT_NE(changed.err.find("(1 env(s) probed, 0 unchanged)"), std::string::npos) << changed.err;
  const auto errors = lines_starting(changed.out, "::error ");
  ASSERT_EQ(errors.size(), 1U) << changed.out;
  EXPECT_TRUE(
      errors[0].starts_with("::error title=envcontract%3A app%3A no-shadow::module "
                            "shadowpkg is installed"))
      << errors[0];

  // Fixed again: judged again, never the stopped verdict kept.
  fs::remove_all(system_venv_site(env()) / "shadowpkg");
  const auto fixed = gate(agent_address());
  EXPECT_EQ(fixed.exit_code, 0) << fixed.out << fixed.err;
  const auto recorded = decisions();
  ASSERT_EQ(recorded.size(), 2U) << common::json_text(recorded, 2);
  EXPECT_EQ(recorded[0]["outcome"], "go");
  EXPECT_EQ(recorded[1]["outcome"], "drift");
  EXPECT_EQ(recorded[1]["stopped"], true);
  EXPECT_EQ(recorded[1]["why"], "app breaks gate-line");
}

TEST_F(GateAgent, ABypassedStopIsRecordedWithItsReason) {
  install_shadow();
  const auto result = gate(agent_address(), {}, {{"ENVCONTRACT_GATE_BYPASS", "hotfix, INC-7"}});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  const auto recorded = decisions();
  ASSERT_EQ(recorded.size(), 1U) << common::json_text(recorded, 2);
  EXPECT_EQ(recorded[0]["outcome"], "drift");
  EXPECT_EQ(recorded[0]["bypass"], "hotfix, INC-7");
  EXPECT_EQ(recorded[0]["stopped"], false);
  EXPECT_EQ(counter(R"(bypassed="true",judged_by="agent",outcome="drift")"), "1");
}

TEST_F(GateAgent, WithTheAgentDownTheGateJudgesItselfAndSaysNothingWasRecorded) {
  install_shadow();
  const std::string address = agent_address();
  m_agent->stop();
  const auto result = gate(address);
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("envcontract gate: the agent at " + address +
                            ": nothing listens on "
                            "port " +
                            address.substr(address.find(':') + 1) + " (is the agent running?)"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("judged here, and the decision is not recorded"), std::string::npos)
      << result.err;
  EXPECT_EQ(lines_starting(result.out, "::error ").size(), 1U) << result.out;
}

TEST_F(GateAgent, UnderAnotherContractTheJobJudgesAndTheAgentRecordsTheJobsDecision) {
  // The same text elsewhere is the same contract: the agent answers.
  const auto copy = m_dir.write("checkout/.github/configs/line.yml", k_contract);
  const auto same = gate(agent_address(), {"--contract", copy.string()});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.err.find("judged by the agent"), std::string::npos) << same.err;

  const auto other = m_dir.write("other.yaml", k_contract + R"(  - id: no-json
    kind: modules
    absent: [json]
)");
  const auto result = gate(agent_address(), {"--contract", other.string()});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("cannot judge it: the job's contract is not this agent's (gate-line "
                            "from " +
                            contract().string()),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("; judged here\n"), std::string::npos) << result.err;
  const auto recorded = decisions();
  ASSERT_EQ(recorded.size(), 2U) << common::json_text(recorded, 2);
  EXPECT_EQ(recorded[0]["judged_by"], "job");
  EXPECT_EQ(recorded[0]["outcome"], "drift");
  EXPECT_EQ(recorded[0]["job"]["id"], "org/repo run 99 attempt 2 job tests");
  EXPECT_EQ(counter(R"(bypassed="false",judged_by="job",outcome="drift")"), "1");
}

TEST_F(GateAgent, APortHeldByAnotherUserIsNeverAsked) {
  // Anyone may listen on a free port: a stand-in that says "go" to everything.
  const int port = free_loopback_port();
  BackgroundProcess impostor(
      {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
       "-m", "http.server", "--bind", "127.0.0.1", std::to_string(port)},
      m_dir.path() / "impostor.log");
  ASSERT_TRUE(wait_until(
      [&] { return http_get("http://127.0.0.1:" + std::to_string(port), "/").status != 0; },
      std::chrono::seconds(20)))
      << impostor.log();
  install_shadow();
  const auto result = gate("127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("port " + std::to_string(port) +
                            " is held by uid 65534, not root: the agent runs as root, so what "
                            "answers there is not asked"),
            std::string::npos)
      << result.err;
}

TEST_F(GateAgent, TheEndpointRefusesWhatItDoesNotTake) {
  const std::map<std::string, std::string> ci = {{"X-Requested-By", "test"}};
  EXPECT_EQ(http_post(m_agent->url(), "/api/v1/gate", "").status, 403);
  const auto unknown = http_post(m_agent->url(), "/api/v1/gate?envv=/x", "", ci);
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.body.find("unknown parameter 'envv'; gate takes bypass, ci, contract, env, "
                              "job_id, job_url"),
            std::string::npos)
      << unknown.body;
  EXPECT_EQ(http_post(m_agent->url(), "/api/v1/gate?env=relative/env", "", ci).status, 400);
  EXPECT_EQ(http_post(m_agent->url(), "/api/v1/gate?contract=abc", "", ci).status, 400);
  // A directory the agent's scan did not find is not run by the agent.
  const auto elsewhere = http_post(m_agent->url(), "/api/v1/gate?env=/tmp", "", ci);
  EXPECT_EQ(elsewhere.status, 404) << elsewhere.body;
  EXPECT_EQ(http_post(m_agent->url(), "/api/v1/gate/record?outcome=maybe", "", ci).status, 400);
  EXPECT_EQ(http_get(m_agent->url(), "/api/v1/gate/decisions?limit=0").status, 400);
  EXPECT_TRUE(decisions().empty());
}

TEST_F(GateAgent, DecisionsJobsClaimAreBoundedAndNeverTakenForTheAgents) {
  const std::map<std::string, std::string> ci = {{"X-Requested-By", "test"}};
  int recorded = 0;
  int refused = 0;
  for (int i = 0; i < 70; ++i) {
    const auto posted = http_post(
        m_agent->url(), "/api/v1/gate/record?outcome=go&env=/opt/envs/x&why=said%20so", "", ci);
    recorded += posted.status == 201 ? 1 : 0;
    refused += posted.status == 429 ? 1 : 0;
  }
  EXPECT_EQ(recorded, 60);
  EXPECT_EQ(refused, 10);
  const auto kept = decisions();
  ASSERT_EQ(kept.size(), 60U);
  EXPECT_EQ(kept[0]["judged_by"], "job");
  EXPECT_EQ(kept[0]["why"], "said so");
  EXPECT_EQ(counter(R"(bypassed="false",judged_by="job",outcome="go")"), "60");
  EXPECT_EQ(counter(R"(bypassed="false",judged_by="agent",outcome="go")"), "0");

  // The agent's own decisions are found however many a job claims, a page
  // at a time.
  ASSERT_EQ(gate(agent_address()).exit_code, 0);
  const auto agents = get_json(*m_agent, "/api/v1/gate/decisions?judged_by=agent")["decisions"];
  ASSERT_EQ(agents.size(), 1U) << common::json_text(agents, 2);
  EXPECT_EQ(agents[0]["judged_by"], "agent");
  const auto page =
      get_json(*m_agent, "/api/v1/gate/decisions?judged_by=job&limit=10")["decisions"];
  ASSERT_EQ(page.size(), 10U);
  const auto next =
      get_json(*m_agent, "/api/v1/gate/decisions?judged_by=job&limit=10&before=" +
                             std::to_string(page[9]["id"].get<std::int64_t>()))["decisions"];
  ASSERT_EQ(next.size(), 10U);
  EXPECT_LT(next[0]["id"].get<std::int64_t>(), page[9]["id"].get<std::int64_t>());
  EXPECT_EQ(http_get(m_agent->url(), "/api/v1/gate/decisions?judged_by=someone").status, 400);
  EXPECT_EQ(http_get(m_agent->url(), "/api/v1/gate/decisions?before=-1").status, 400);
}

TEST_F(GateAgent, FleetctlAsksAnotherHostsAgentTheSameQuestion) {
  const std::string host = agent_address();
  const auto go = run_command({FLEETCTL_PATH, "gate", host, "--env", env().string()});
  EXPECT_EQ(go.exit_code, 0) << go.out << go.err;
  EXPECT_NE(go.out.find("fleetctl gate: app complies with gate-line"), std::string::npos) << go.out;

  install_shadow();
  const auto stop =
      run_command({FLEETCTL_PATH, "-o", "json", "gate", host, "--contract", contract().string()});
  EXPECT_EQ(stop.exit_code, 1) << stop.out << stop.err;
  const auto answer = Json::parse(stop.out, nullptr, false);
  ASSERT_TRUE(answer.is_object()) << stop.out;
  EXPECT_EQ(answer["decision"], "drift");
  EXPECT_EQ(answer["why"], "app breaks gate-line");
  EXPECT_EQ(answer["probed"], 1);
  EXPECT_EQ(answer["report"]["envs"][0]["verdict"], "drift");

  const auto other = m_dir.write("other.yaml",
                                 "schema_version: 1\nname: other\nchecks:\n  - id: "
                                 "python\n    kind: python\n    version: '>=3'\n");
  const auto refused = run_command({FLEETCTL_PATH, "gate", host, "--contract", other.string()});
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("the job's contract is not this agent's"), std::string::npos)
      << refused.err;
  const auto recorded = decisions();
  ASSERT_EQ(recorded.size(), 2U) << common::json_text(recorded, 2);
  EXPECT_EQ(recorded[0]["outcome"], "drift");
  EXPECT_EQ(recorded[1]["outcome"], "go");
}

// Two envs of one name on the host: the full scan names each by its prefix
// (a waiver by name must not reach the other), and a gate's report names
// its env the same. What discovery met elsewhere on the host (a configured
// prefix that is no env) is not in the gate's report, which a job's log shows.
TEST(GateAgentNames, AGatesEnvIsNamedAsTheScanNamesItAndOthersProblemsStayOut) {
  TempDir dir;
  const auto first = make_system_venv(dir.path() / "team-a/app");
  make_system_venv(dir.path() / "team-b/app");
  fs::create_directories(dir.path() / "not-an-env");
  const auto contract = dir.write("contract.yaml", k_contract);
  AgentProcess agent(
      dir.path(),
      {"--contract", contract.string(), "--root", (dir.path() / "team-a").string(), "--root",
       (dir.path() / "team-b").string(), "--prefix", (dir.path() / "not-an-env").string(),
       "--database", (dir.path() / "agent.db").string()});
  const auto scanned = wait_for_report(agent);
  ASSERT_EQ(scanned["envs"].size(), 2U) << common::json_text(scanned, 2);
  EXPECT_FALSE(scanned["problems"].empty()) << common::json_text(scanned["problems"], 2);
  const auto answer = http_post(agent.url(), "/api/v1/gate?env=" + first.string(), "",
                                {{"X-Requested-By", "test"}});
  ASSERT_EQ(answer.status, 200) << answer.body;
  const auto body = Json::parse(answer.body, nullptr, false);
  ASSERT_EQ(body["report"]["envs"].size(), 1U) << answer.body;
  EXPECT_EQ(body["report"]["envs"][0]["name"], first.string());
  EXPECT_TRUE(body["report"]["problems"].empty())
      << common::json_text(body["report"]["problems"], 2);
}

// A GitHub runner's job on the demo host's venv (a CUDA torch where
// Kunlunxin's CI wants a CPU one), its workspace holding Torch-FL's real
// platform config: the host's agent holds the same config (the host's copy),
// so it answers, and the job shows what judging the env itself shows.
TEST(GateAgentRunner, TheJobsPlatformConfigIsTheAgentsWhenItsTextIsTheSame) {
  TempDir dir;
  const std::string configs = ENVCONTRACT_SOURCE_DIR "/tests/data/contracts";
  fs::create_directories(dir.path() / "workspace/.github/configs");
  fs::create_directories(dir.path() / "host");
  fs::copy_file(configs + "/platform-config-kunlunxin.yml",
                dir.path() / "workspace/.github/configs/kunlunxin.yml");
  fs::copy_file(configs + "/platform-config-kunlunxin.yml", dir.path() / "host/kunlunxin.yml");
  const std::string venv = (demo_host() / "venvs/xpu210v").string();
  AgentProcess agent(dir.path(),
                     {"--contract", (dir.path() / "host/kunlunxin.yml").string(), "--prefix", venv,
                      "--database", (dir.path() / "agent.db").string()});
  wait_for_report(agent);
  const auto job = [&](const std::string& address, const std::string& summary) {
    return run_command({"/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "GITHUB_ACTIONS=true",
                        "GITHUB_WORKSPACE=" + (dir.path() / "workspace").string(),
                        "GITHUB_STEP_SUMMARY=" + (dir.path() / summary).string(),
                        "GITHUB_REPOSITORY=flagos/torch-fl", "GITHUB_RUN_ID=7",
                        "ENVCONTRACT_PLATFORM=kunlunxin", "VIRTUAL_ENV=" + venv,
                        "ENVCONTRACT_AGENT=" + address, k_binary, "gate"});
  };
  const auto asked = job("127.0.0.1:" + std::to_string(agent.port()), "asked.md");
  const auto alone = job("none", "alone.md");
  EXPECT_EQ(asked.exit_code, 1) << asked.out << asked.err;
  EXPECT_EQ(alone.exit_code, 1) << alone.err;
  EXPECT_NE(asked.err.find("judged by the agent at 127.0.0.1:"), std::string::npos) << asked.err;
  EXPECT_EQ(alone.err.find("judged by the agent"), std::string::npos) << alone.err;
  const auto errors = lines_starting(asked.out, "::error ");
  EXPECT_EQ(errors.size(), 2U) << asked.out;
  EXPECT_EQ(errors, lines_starting(alone.out, "::error "));
  // The same summary, but that it names the agent's copy of the contract.
  const auto without_contract_line = [](const std::string& text) {
    std::vector<std::string> kept;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (!line.starts_with("Contract kunlunxin (")) {
        kept.push_back(line);
      }
    }
    return kept;
  };
  const auto asked_summary = read_text(dir.path() / "asked.md");
  EXPECT_NE(asked_summary.find("Contract kunlunxin (" +
                               report::markdown_text((dir.path() / "host/kunlunxin.yml").string())),
            std::string::npos)
      << asked_summary;
  EXPECT_EQ(without_contract_line(asked_summary),
            without_contract_line(read_text(dir.path() / "alone.md")));
  const auto recorded = get_json(agent, "/api/v1/gate/decisions")["decisions"];
  ASSERT_EQ(recorded.size(), 1U) << common::json_text(recorded, 2);
  EXPECT_EQ(recorded[0]["job"]["id"], "flagos/torch-fl run 7");
  EXPECT_EQ(recorded[0]["contract"]["name"], "kunlunxin");
  EXPECT_EQ(recorded[0]["why"], "xpu210v breaks kunlunxin");
}

// An image's tree (an os-release marks it) holding a venv at `relative`
// whose files, and every directory from opt/ down, the image's author gave
// to uid 1003.
fs::path make_image_env(const fs::path& image, const std::string& relative) {
  fs::create_directories(image / "etc");
  write_text(image / "etc/os-release", "ID=debian\n");
  const auto env = make_system_venv(image / relative);
  for (const auto& entry : fs::recursive_directory_iterator(image / "opt")) {
    if (::lchown(entry.path().c_str(), 1003, 1003) != 0) {
      throw std::runtime_error("cannot give " + entry.path().string() + " to uid 1003");
    }
  }
  if (::lchown((image / "opt").c_str(), 1003, 1003) != 0) {
    throw std::runtime_error("cannot give " + (image / "opt").string() + " to uid 1003");
  }
  return env;
}

// An image's tree on the host (`--root`): its envs' owners are the image
// author's word, so its code never runs as the host user its files name.
// A gate asking for such an env gets it judged under the same rule as the
// agent's scans.
TEST(GateAgentImageTree, AnEnvInAnImagesTreeRunsAsTheImageRuleSaysNotAsItsFilesOwner) {
  TempDir dir;
  const auto image = dir.path() / "image";
  const auto env = make_image_env(image, "opt/venvs/app");
  const auto contract = dir.write("contract.yaml", k_contract);
  AgentProcess agent(dir.path(), {"--contract", contract.string(), "--root", image.string(),
                                  "--database", (dir.path() / "agent.db").string()});
  const auto scanned = wait_for_report(agent);
  ASSERT_EQ(scanned["envs"].size(), 1U) << common::json_text(scanned, 2);
  const auto scanned_uid = scanned["envs"][0]["run_as"]["uid"];
  EXPECT_NE(scanned_uid, 1003) << common::json_text(scanned["envs"][0]["run_as"], 2);

  const auto answer =
      http_post(agent.url(), "/api/v1/gate?env=" + env.string(), "", {{"X-Requested-By", "test"}});
  ASSERT_EQ(answer.status, 200) << answer.body;
  const auto body = Json::parse(answer.body, nullptr, false);
  ASSERT_TRUE(body.is_object()) << answer.body;
  const auto& run_as = body["report"]["envs"][0]["run_as"];
  EXPECT_EQ(run_as["uid"], scanned_uid) << common::json_text(run_as, 2);
  EXPECT_EQ(run_as["reason"], scanned["envs"][0]["run_as"]["reason"]);
}

// The same env reached from the host, not by the image's own walk: a
// user's environments.txt naming it (the walk stops 4 levels down) must
// not make it the host's, run as the uid its files name.
TEST(GateAgentImageTree, AnImagesEnvNamedInAUsersListStaysTheImages) {
  TempDir dir;
  const auto image = dir.path() / "image";
  const auto env = make_image_env(image, "opt/deep/a/b/c/app");
  const auto* nobody = ::getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  const auto home = dir.path() / "host/home/mallory";
  fs::create_directories(home / ".conda");
  write_text(home / ".conda/environments.txt", env.string() + "\n");
  for (const auto& path : {home, home / ".conda", home / ".conda/environments.txt"}) {
    ASSERT_EQ(::lchown(path.c_str(), nobody->pw_uid, nobody->pw_gid), 0) << path;
  }
  const auto contract = dir.write("contract.yaml", k_contract);
  AgentProcess agent(dir.path(),
                     {"--contract", contract.string(), "--root", (dir.path() / "host").string(),
                      "--root", image.string(), "--database", (dir.path() / "agent.db").string()});
  const auto scanned = wait_for_report(agent);
  ASSERT_EQ(scanned["envs"].size(), 1U) << common::json_text(scanned, 2);
  const auto& run_as = scanned["envs"][0]["run_as"];
  EXPECT_NE(run_as["uid"], 1003) << common::json_text(run_as, 2);
  EXPECT_NE(run_as["reason"].get<std::string>().find("an env of an image's tree"),
            std::string::npos)
      << common::json_text(run_as, 2);
}

}  // namespace
}  // namespace envcontract::testing
