// `envcontractd gate` run as each CI runner runs a job's first step: the
// runner's variables, a workspace holding real Torch-FL platform configs, a
// step summary file, the demo host's venv (a CUDA torch where Kunlunxin's
// CI wants a CPU one).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "tests/support/demo_host.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

namespace fs = std::filesystem;

const std::string k_binary = ENVCONTRACTD_PATH;
const std::string k_configs = ENVCONTRACT_SOURCE_DIR "/tests/data/contracts";

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> starting_with(const std::string& text, const std::string& start) {
  std::vector<std::string> found;
  for (const auto& line : lines_of(text)) {
    if (line.starts_with(start)) {
      found.push_back(line);
    }
  }
  return found;
}

class GateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    // The job's checkout: two platforms' configs, as Torch-FL keeps them.
    fs::create_directories(workspace() / ".github/configs");
    fs::copy_file(k_configs + "/platform-config-kunlunxin.yml",
                  workspace() / ".github/configs/kunlunxin.yml");
    fs::copy_file(k_configs + "/ci-lines/newest-main-cuda.yml",
                  workspace() / ".github/configs/cuda.yml");
  }

  fs::path workspace() const { return m_dir.path() / "workspace"; }
  fs::path summary() const { return m_dir.path() / "step-summary.md"; }
  static std::string venv() { return (testing::demo_host() / "venvs/xpu210v").string(); }

  // The gate with only `variables` in its environment (and PATH): what the
  // test's own environment holds (a CI's, a venv's) must not leak in.
  testing::CommandResult gate(const std::map<std::string, std::string>& variables,
                              const std::vector<std::string>& flags = {}) const {
    std::vector<std::string> argv = {"/usr/bin/env", "-i", "PATH=/usr/bin:/bin"};
    for (const auto& [name, value] : variables) {
      argv.push_back(name + "=" + value);
    }
    argv.push_back(k_binary);
    argv.push_back("gate");
    argv.insert(argv.end(), flags.begin(), flags.end());
    return testing::run_command(argv);
  }

  std::map<std::string, std::string> github(const std::string& platform) const {
    return {{"GITHUB_ACTIONS", "true"},
            {"GITHUB_WORKSPACE", workspace().string()},
            {"GITHUB_STEP_SUMMARY", summary().string()},
            {"ENVCONTRACT_PLATFORM", platform},
            {"VIRTUAL_ENV", venv()}};
  }

  testing::TempDir m_dir;
};

TEST_F(GateCli, OnGithubADriftingEnvStopsTheJobWithAnAnnotationPerFailingCheck) {
  const auto result = gate(github("kunlunxin"));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  const auto errors = starting_with(result.out, "::error ");
  ASSERT_EQ(errors.size(), 2U) << result.out;
  EXPECT_EQ(errors[0],
            "::error title=envcontract%3A xpu210v%3A torch-contract::CUDA build of torch "
            "(2.10.0+cu129, torch.version.cuda == '12.9') where the contract requires a CPU "
            "build%0AWhat to do: install the CPU build of torch 2.10.0 in this env (pip install "
            "torch==2.10.0 --index-url https://download.pytorch.org/whl/cpu)");
  EXPECT_TRUE(
      errors[1].starts_with("::error title=envcontract%3A xpu210v%3A preflight-devices::"
                            "integration test preflight-devices exited 1 (wanted 0)"))
      << errors[1];
  // The image is not the env's: said, not counted.
  const auto warnings = starting_with(result.out, "::warning ");
  ASSERT_EQ(warnings.size(), 1U) << result.out;
  EXPECT_TRUE(warnings[0].starts_with(
      "::warning title=envcontract%3A target ci%3A image could not be judged::"))
      << warnings[0];
  // The table, whose strings are the env's, is printed with workflow
  // commands stopped: nothing in it can become one.
  const auto stop = starting_with(result.out, "::stop-commands::");
  ASSERT_EQ(stop.size(), 1U) << result.out;
  const std::string token = stop[0].substr(std::string("::stop-commands::").size());
  EXPECT_EQ(token.size(), std::string("envcontract-").size() + 32) << token;
  const auto stop_at = result.out.find(stop[0]);
  const auto resume_at = result.out.find("\n::" + token + "::\n");
  ASSERT_NE(resume_at, std::string::npos) << result.out;
  const auto row_at = result.out.find("torch-contract", stop_at);
  EXPECT_LT(row_at, resume_at);
  EXPECT_GT(stop_at, result.out.rfind("::error "));
  EXPECT_NE(result.err.find("envcontract gate: contract "), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("(platform kunlunxin)"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("envcontract gate: env: the job's VIRTUAL_ENV " + venv()),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("envcontract gate: the job is stopped"), std::string::npos);

  const auto summary_lines = lines_of(read_file(summary()));
  ASSERT_GE(summary_lines.size(), 12U) << read_file(summary());
  EXPECT_EQ(summary_lines[0], "### envcontract gate: stopped: the env breaks the contract");
  EXPECT_EQ(summary_lines[2], "xpu210v breaks kunlunxin");
  EXPECT_EQ(starting_with(read_file(summary()),
                          "| torch\\-contract | fail | "
                          "cuda\\_build | CUDA build of torch")
                .size(),
            1U)
      << read_file(summary());
}

TEST_F(GateCli, OnGithubACompliantEnvGoesAndTheSummaryIsAppended) {
  std::ofstream(summary()) << "an earlier step's summary\n";
  const auto result = gate(github("cuda"));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(starting_with(result.out, "::notice "),
            std::vector<std::string>{"::notice title=envcontract::xpu210v complies with cuda"})
      << result.out;
  EXPECT_TRUE(starting_with(result.out, "::error ").empty()) << result.out;
  const std::string summary_text = read_file(summary());
  EXPECT_TRUE(summary_text.starts_with("an earlier step's summary\n### envcontract gate: go\n"))
      << summary_text;
  EXPECT_NE(result.err.find("envcontract gate: go"), std::string::npos) << result.err;
}

TEST_F(GateCli, TheRunnersLabelsChooseThePlatformConfig) {
  auto variables = github("");
  variables.erase("ENVCONTRACT_PLATFORM");
  variables["ENVCONTRACT_RUNNER_LABELS"] = "self-hosted,linux,torch-fl-nv";
  const auto result = gate(variables);
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.err.find("cuda.yml (the runner's labels)"), std::string::npos) << result.err;

  variables["ENVCONTRACT_RUNNER_LABELS"] = "self-hosted,kunlunxin";
  EXPECT_EQ(gate(variables).exit_code, 1);
}

TEST_F(GateCli, WithoutAContractOrAnEnvItCannotTell) {
  auto variables = github("");
  variables.erase("ENVCONTRACT_PLATFORM");
  const auto several = gate(variables);
  EXPECT_EQ(several.exit_code, 2);
  EXPECT_NE(several.err.find("holds several platform configs (cuda, kunlunxin) and none was "
                             "chosen; name the platform (--platform NAME, or "
                             "ENVCONTRACT_PLATFORM)"),
            std::string::npos)
      << several.err;

  const auto unknown = gate(github("ascend"));
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no platform config ascend.yml in"), std::string::npos) << unknown.err;

  auto no_env = github("kunlunxin");
  no_env["VIRTUAL_ENV"] = (m_dir.path() / "gone").string();
  const auto gone = gate(no_env);
  EXPECT_EQ(gone.exit_code, 2) << gone.out << gone.err;
  EXPECT_NE(
      gone.err.find("the job's VIRTUAL_ENV (" + no_env["VIRTUAL_ENV"] + ") is not a directory"),
      std::string::npos)
      << gone.err;
}

TEST_F(GateCli, ABypassLetsAStoppedJobStartAndSaysSo) {
  auto variables = github("kunlunxin");
  variables["ENVCONTRACT_GATE_BYPASS"] = "hotfix for #12, approved by ops";
  const auto result = gate(variables);
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(starting_with(result.out, "::warning title=envcontract gate bypassed::"),
            std::vector<std::string>{"::warning title=envcontract gate bypassed::the job starts "
                                     "although xpu210v breaks kunlunxin: hotfix for #12, "
                                     "approved by ops"});
  EXPECT_NE(result.err.find("envcontract gate: BYPASSED"), std::string::npos) << result.err;
  EXPECT_TRUE(read_file(summary()).starts_with("### envcontract gate: bypassed\n"));
}

TEST_F(GateCli, OnGitlabTheChecksAreACollapsedSectionAndAJunitFile) {
  const auto junit = m_dir.path() / "gate.xml";
  const auto result =
      gate({{"GITLAB_CI", "true"}, {"CI_PROJECT_DIR", workspace().string()}, {"CI_JOB_ID", "4242"}},
           {"--platform", "kunlunxin", "--env", venv(), "--junit", junit.string()});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  const auto lines = lines_of(result.out);
  ASSERT_GE(lines.size(), 3U) << result.out;
  EXPECT_EQ(lines[0], "envcontract gate: xpu210v breaks kunlunxin");
  EXPECT_TRUE(lines[1].starts_with("\033[0Ksection_start:")) << lines[1];
  EXPECT_TRUE(
      lines[1].ends_with(":envcontract_gate[collapsed=true]\r\033[0Kenvcontract: the "
                         "env's checks"))
      << lines[1];
  EXPECT_TRUE(lines.back().starts_with("\033[0Ksection_end:")) << lines.back();
  EXPECT_TRUE(starting_with(result.out, "::").empty()) << "no GitHub commands on GitLab";
  const std::string xml = read_file(junit);
  EXPECT_NE(xml.find("<failure"), std::string::npos) << xml;
  EXPECT_NE(xml.find("torch-contract"), std::string::npos) << xml;
}

// The hook the package ships, run as the runner runs it: before the job's
// checkout, so the contract is the host's, named in the runner's .env.
TEST_F(GateCli, TheRunnersJobStartedHookStopsADriftingJob) {
  auto variables = github("");
  variables.erase("ENVCONTRACT_PLATFORM");
  variables.erase("VIRTUAL_ENV");
  variables["PATH"] = fs::path(k_binary).parent_path().string() + ":/usr/bin:/bin";
  variables["ENVCONTRACT_GATE_CONTRACT"] = k_configs + "/platform-config-kunlunxin.yml";
  variables["ENVCONTRACT_GATE_ENV"] = venv();
  const auto hook = [](const std::map<std::string, std::string>& job) {
    std::vector<std::string> argv = {"/usr/bin/env", "-i"};
    for (const auto& [name, value] : job) {
      argv.push_back(name + "=" + value);
    }
    argv.insert(argv.end(),
                {"/bin/sh", ENVCONTRACT_SOURCE_DIR "/packaging/ci/github-job-started.sh"});
    return testing::run_command(argv);
  };
  const auto stopped = hook(variables);
  EXPECT_EQ(stopped.exit_code, 1) << stopped.out << stopped.err;
  EXPECT_EQ(starting_with(stopped.out, "::error ").size(), 2U) << stopped.out;
  EXPECT_NE(stopped.err.find("(--contract)"), std::string::npos) << stopped.err;

  variables["ENVCONTRACT_GATE_CONTRACT"] = k_configs + "/ci-lines/newest-main-cuda.yml";
  const auto goes = hook(variables);
  EXPECT_EQ(goes.exit_code, 0) << goes.out << goes.err;
}

// Strings of an env's, or of the checkout's, never become a line of their
// own in the job's log: a workflow command, a GitLab section marker.
TEST_F(GateCli, AnEnvsNamesCannotWriteWorkflowCommands) {
  const fs::path root = m_dir.path() / "envs";
  const fs::path hostile = root / "x\n::error::pwned\r\033[0Ksection_end:1:y";
  fs::create_directories(hostile / "bin");
  std::ofstream(hostile / "pyvenv.cfg") << "home = /usr/bin\nversion = 3.11.2\n";
  fs::create_symlink("/usr/bin/python3", hostile / "bin/python");
  auto variables = github("kunlunxin");
  variables.erase("VIRTUAL_ENV");
  const auto result = gate(variables, {"--env", "nosuchenv", "--root", root.string()});
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_NE(result.err.find("no env is named nosuchenv (found: x\\x0a::error::pwned\\x0d\\x1b"),
            std::string::npos)
      << result.err;
  for (const auto& output : {result.out, result.err}) {
    EXPECT_TRUE(starting_with(output, "::error::pwned").empty()) << output;
    EXPECT_EQ(output.find('\r'), std::string::npos) << output;
    EXPECT_EQ(output.find('\033'), std::string::npos) << output;
  }
}

// The JUnit file is written in the checkout, where a change under review
// could have put a link to a file of the runner's user: never followed.
TEST_F(GateCli, AJunitFileThatIsALinkIsRefused) {
  const auto victim = m_dir.path() / "runner-credentials";
  std::ofstream(victim) << "keep me\n";
  const auto junit = workspace() / "envcontract-gate.xml";
  fs::create_symlink(victim, junit);
  const auto result = gate({{"GITLAB_CI", "true"}, {"CI_PROJECT_DIR", workspace().string()}},
                           {"--platform", "kunlunxin", "--env", venv(), "--junit", junit.string()});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("cannot write " + junit.string()), std::string::npos) << result.err;
  EXPECT_EQ(read_file(victim), "keep me\n");

  // A FIFO there is refused too, never waited on for a reader.
  fs::remove(junit);
  ASSERT_EQ(::mkfifo(junit.c_str(), 0644), 0);
  const auto fifo = gate({{"GITLAB_CI", "true"}, {"CI_PROJECT_DIR", workspace().string()}},
                         {"--platform", "kunlunxin", "--env", venv(), "--junit", junit.string()});
  EXPECT_EQ(fifo.exit_code, 1) << fifo.err;
  EXPECT_NE(fifo.err.find("cannot write " + junit.string()), std::string::npos) << fifo.err;
}

// A venv activated over conda's base is the env the job uses.
TEST_F(GateCli, TheJobsVenvComesBeforeCondasBase) {
  auto variables = github("kunlunxin");
  variables["CONDA_PREFIX"] = (testing::demo_host() / "miniconda3").string();
  const auto result = gate(variables);
  EXPECT_NE(result.err.find("env: the job's VIRTUAL_ENV " + venv()), std::string::npos)
      << result.err;
}

// A job that cannot be judged at all (no platform config in its checkout)
// starts with a bypass too, saying so.
TEST_F(GateCli, ABypassAlsoLetsAJobThatCannotBeJudgedStart) {
  fs::remove_all(workspace() / ".github");
  auto variables = github("kunlunxin");
  const auto stopped = gate(variables);
  EXPECT_EQ(stopped.exit_code, 2) << stopped.err;
  variables["ENVCONTRACT_GATE_BYPASS"] = "configs moved in this branch";
  const auto started = gate(variables);
  EXPECT_EQ(started.exit_code, 0) << started.err;
  EXPECT_EQ(starting_with(started.out, "::warning title=envcontract gate bypassed::").size(), 1U)
      << started.out;
  EXPECT_NE(started.err.find("BYPASSED: the job starts although it could not be judged (configs "
                             "moved in this branch)"),
            std::string::npos)
      << started.err;
}

TEST_F(GateCli, ElsewhereTheTableAndTheDecision) {
  const auto result =
      gate({}, {"--workspace", workspace().string(), "--platform", "kunlunxin", "--env", venv()});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_TRUE(starting_with(result.out, "::").empty()) << result.out;
  EXPECT_NE(result.out.find("torch-contract"), std::string::npos) << result.out;
  EXPECT_EQ(lines_of(result.out).back(), "envcontract gate: xpu210v breaks kunlunxin");

  // An env named as discovery names it.
  const auto named = gate({}, {"--workspace", workspace().string(), "--platform", "cuda", "--env",
                               "xpu210v", "--root", (testing::demo_host() / "venvs").string()});
  EXPECT_EQ(named.exit_code, 0) << named.out << named.err;
  EXPECT_NE(named.err.find("env: --env xpu210v"), std::string::npos) << named.err;
  const auto nameless =
      gate({}, {"--workspace", workspace().string(), "--platform", "cuda", "--env", "nosuchenv",
                "--root", (testing::demo_host() / "venvs").string()});
  EXPECT_EQ(nameless.exit_code, 2);
  EXPECT_NE(nameless.err.find("no env is named nosuchenv (found: xpu210v)"), std::string::npos)
      << nameless.err;
}

}  // namespace
}  // namespace envcontract
