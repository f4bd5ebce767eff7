// From drift to a compliant env, for real: `envcontractd provision` builds a
// venv from the demo host's /opt/python3.10 and installs real wheels of the
// stand-ins (built by `pip wheel` into the demo host's wheelhouse) with
// `pip install --no-index --find-links`, as the provisioning user; the new
// env is scanned with the whole contract; `promote` switches a link only to a
// compliant env; `rollback` switches it back; the agent serves the record.
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <regex>

#include "common/json_text.hpp"
#include "daemon/store.hpp"
#include "provisioning/promotion.hpp"
#include "provisioning/provisioner.hpp"
#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/system_venv.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

namespace fs = std::filesystem;
using testing::demo_host;
using testing::read_text;
using testing::run_command;
using testing::write_text;

class Provisioning : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(demo_host() / "wheelhouse")) {
      GTEST_SKIP() << "the demo host has no wheelhouse: no python3 with setuptools and wheel "
                      "(scripts/test installs python3-setuptools python3-wheel)";
    }
    fs::permissions(m_dir.path(), fs::perms(0755));
    m_envs = m_dir.path() / "envs";
    fs::create_directory(m_envs);
    if (::geteuid() == 0) {
      // Root provisions as an unprivileged user, who owns the envs directory.
      const auto* nobody = ::getpwnam("nobody");
      ASSERT_NE(nobody, nullptr);
      ASSERT_EQ(::chown(m_envs.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
      m_user = "nobody";
      m_uid = nobody->pw_uid;
    } else {
      m_uid = ::geteuid();
    }
    m_contract = contract_with("");
  }

  // The demo host's contract with its recipe, the smoke time-out cut to 6 s,
  // `replace` applied as "from=>to".
  fs::path contract_with(const std::string& from, const std::string& to = "",
                         const std::string& file = "provision.yaml") {
    std::string text = read_text(demo_host() / "kunlunxin-provision.yaml");
    text = std::regex_replace(text, std::regex("timeout: 20s"), "timeout: 6s");
    if (!from.empty()) {
      const auto at = text.find(from);
      EXPECT_NE(at, std::string::npos) << from;
      text.replace(at, from.size(), to);
    }
    const auto path = m_dir.path() / file;
    write_text(path, text);
    return path;
  }

  std::vector<std::string> verb(const std::string& name, const fs::path& contract,
                                std::string user = "-") const {
    if (user == "-") {
      user = m_user;
    }
    std::vector<std::string> argv = {ENVCONTRACTD_PATH, name};
    if (!contract.empty()) {
      argv.insert(argv.end(), {"--contract", contract.string()});
    }
    argv.insert(argv.end(), {"--envs-dir", m_envs.string(), "--database", database().string(),
                             "--config", (m_dir.path() / "agent.yaml").string()});
    if (!user.empty()) {
      argv.insert(argv.end(), {"--user", user});
    }
    write_text(m_dir.path() / "agent.yaml",
               "image_tag:\n  file: " + (demo_host() / "etc/flagos-image").string() + "\n");
    return argv;
  }

  testing::CommandResult provision(const std::string& name, const fs::path& contract,
                                   std::vector<std::string> extra = {"--apply"}) const {
    auto argv = verb("provision", contract);
    argv.insert(argv.end(), {"--name", name});
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_command(argv);
  }

  testing::CommandResult promote(const std::string& env, const std::string& as,
                                 const fs::path& contract,
                                 std::vector<std::string> extra = {}) const {
    auto argv = verb("promote", contract);
    argv.insert(argv.end(), {env, "--as", as});
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_command(argv);
  }

  fs::path database() const { return m_dir.path() / "agent.db"; }

  // The arguments of an agent that provisions over HTTP with `token`, on the
  // venv xpu210v of the demo host.
  std::vector<std::string> provisioning_agent(const std::string& token) const {
    const auto file = m_dir.write("token", token + "\n");
    fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
    const auto config = m_dir.write(
        "serve.yaml", "image_tag: {file: " + (demo_host() / "etc/flagos-image").string() +
                          "}\ntoken_file: " + file.string() + "\nprovisioning:\n  enabled: true\n" +
                          (m_user.empty() ? std::string() : "  user: " + m_user + "\n") +
                          "  envs_dir: " + m_envs.string() + "\n");
    return {"--config",          config.string(),    "--contract",
            m_contract.string(), "--prefix",         (demo_host() / "venvs/xpu210v").string(),
            "--database",        database().string()};
  }

  nlohmann::ordered_json records() const {
    auto store = daemon::Store::open(database());
    EXPECT_TRUE(store) << store.error();
    return store ? store.value()->provisions() : nlohmann::ordered_json::array();
  }

  testing::TempDir m_dir;
  fs::path m_envs;
  fs::path m_contract;
  std::string m_user;
  uid_t m_uid = 0;
};

TEST_F(Provisioning, ADryRunPrintsTheExactStepsAndBuildsNothing) {
  const auto result = provision("fresh", m_contract, {});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string prefix = (m_envs / "fresh").string();
  EXPECT_NE(
      result.out.find("1. create: $ " + (demo_host() / "opt/python3.10/bin/python3.10").string() +
                      " -m venv " + prefix),
      std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("2. install: $ " + prefix +
                            "/bin/python -m pip install --no-input --no-index --find-links " +
                            (demo_host() / "wheelhouse").string() +
                            " -- torch==2.10.0+cpu torch_fl==0.3.0 flagtree==0.7.0"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("5. verify: scan fresh with the whole contract"), std::string::npos);
  EXPECT_NE(result.out.find("dry run: nothing was run; add --apply to build it"),
            std::string::npos);
  EXPECT_TRUE(fs::is_empty(m_envs));
}

TEST_F(Provisioning, ARecipeBuildsACompliantEnvThatPromotionLinksAndRollbackRestores) {
  auto built = provision("torch-fl-a", m_contract);
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  EXPECT_NE(built.out.find("[1/4] create: ok (exit 0"), std::string::npos) << built.out;
  EXPECT_NE(built.out.find("[2/4] install: ok (exit 0"), std::string::npos);
  EXPECT_NE(built.out.find("compliant envs: torch-fl-a;"), std::string::npos) << built.out;
  EXPECT_NE(built.out.find("torch-fl-a complies with kunlunxin-demo"), std::string::npos);
  const fs::path a = m_envs / "torch-fl-a";
  // Built by the provisioning user, with the recipe's activation in bin/activate.
  struct stat info {};
  ASSERT_EQ(::stat((a / "lib/python3.10/site-packages/torch/version.py").c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, m_uid);
  const auto activate = read_text(a / "bin/activate");
  EXPECT_NE(activate.find("export XPU_ROOT=" + (demo_host() / "usr/local/xpu").string()),
            std::string::npos)
      << activate;
  EXPECT_TRUE(fs::exists(a / "lib/python3.10/site-packages/torch_fl/lib/libtorch_fl.so"));

  auto promoted = promote("torch-fl-a", "torch-fl", m_contract);
  ASSERT_EQ(promoted.exit_code, 0) << promoted.err;
  EXPECT_EQ(provisioning::link_target(m_envs / "torch-fl"), a);

  // A second build, promoted over the first: the first is kept for rollback.
  built = provision("torch-fl-b", m_contract);
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  promoted = promote("torch-fl-b", "torch-fl", m_contract);
  ASSERT_EQ(promoted.exit_code, 0) << promoted.err;
  EXPECT_NE(promoted.out.find("(was " + a.string() + "; envcontractd rollback torch-fl goes back)"),
            std::string::npos)
      << promoted.out;
  EXPECT_EQ(provisioning::link_target(m_envs / "torch-fl"), m_envs / "torch-fl-b");
  EXPECT_EQ(provisioning::link_target(m_envs / ".torch-fl.previous"), a);
  ASSERT_EQ(::lstat((m_envs / "torch-fl").c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, m_uid);  // the link is the user's, not root's

  auto rollback = verb("rollback", "");
  rollback.push_back("torch-fl");
  const auto rolled = run_command(rollback);
  ASSERT_EQ(rolled.exit_code, 0) << rolled.err;
  EXPECT_EQ(provisioning::link_target(m_envs / "torch-fl"), a);

  // Every action is in the history, newest first, with who asked.
  const auto history = records();
  ASSERT_EQ(history.size(), 5U) << common::json_text(history, 2);
  EXPECT_EQ(history[0]["action"], "rollback");
  EXPECT_EQ(history[0]["outcome"], "rolled_back");
  EXPECT_EQ(history[1]["action"], "promote");
  EXPECT_EQ(history[1]["outcome"], "promoted");
  EXPECT_EQ(history[1]["detail"]["previous"], a.string());
  EXPECT_EQ(history[4]["action"], "provision");
  EXPECT_EQ(history[4]["name"], "torch-fl-a");
  EXPECT_EQ(history[4]["outcome"], "compliant");
  EXPECT_EQ(history[4]["detail"]["provision"]["steps"].size(), 4U);
  EXPECT_EQ(history[4]["detail"]["provision"]["steps"][1]["status"], "ok");
  EXPECT_NE(history[4]["requested_by"].get<std::string>().find("cli: "), std::string::npos);

  // The agent serves the record, and a plan for the drifting envs only: the
  // promoted env complies, so its plan is empty.
  testing::AgentProcess agent(
      m_dir.path(), {"--contract", m_contract.string(), "--prefix", a.string(), "--prefix",
                     (demo_host() / "venvs/xpu210v").string(), "--database", database().string(),
                     "--image-tag-file", (demo_host() / "etc/flagos-image").string()});
  int status = 0;
  const auto served = testing::get_json(agent, "/api/v1/provisions?limit=2", &status);
  EXPECT_EQ(status, 200);
  ASSERT_EQ(served["provisions"].size(), 2U) << common::json_text(served);
  EXPECT_EQ(served["provisions"][0]["action"], "rollback");
  testing::wait_for_report(agent);
  const auto plan = testing::get_json(agent, "/api/v1/plan", &status);
  EXPECT_EQ(status, 200);
  ASSERT_EQ(plan["envs"].size(), 1U) << common::json_text(plan, 2);
  EXPECT_EQ(plan["envs"][0]["env"], "xpu210v");
  const auto only = testing::get_json(agent, "/api/v1/plan?env=torch-fl-a", &status);
  EXPECT_EQ(status, 200);
  EXPECT_TRUE(only["envs"].empty());
  testing::get_json(agent, "/api/v1/plan?env=nowhere", &status);
  EXPECT_EQ(status, 404);
  testing::get_json(agent, "/api/v1/plan?colour=blue", &status);
  EXPECT_EQ(status, 400);
}

TEST_F(Provisioning, APinTheWheelhouseCannotSatisfyStopsAtThatStepWithPipsMessage) {
  const auto contract = contract_with("torch_fl==0.3.0", "torch_fl==0.4.0");
  const auto failed = provision("pinned", contract);
  EXPECT_EQ(failed.exit_code, 2);
  EXPECT_NE(failed.err.find("step 2 (install) failed: exit 1"), std::string::npos) << failed.err;
  EXPECT_NE(failed.err.find("No matching distribution found for torch_fl==0.4.0"),
            std::string::npos)
      << failed.err;
  EXPECT_NE(failed.out.find("[2/4] install: failed"), std::string::npos);
  // Kept and marked, the later steps not run.
  const auto marker = m_envs / "pinned" / provisioning::k_failed_marker;
  ASSERT_TRUE(fs::exists(marker)) << failed.err;
  EXPECT_NE(read_text(marker).find("torch_fl==0.4.0"), std::string::npos);
  const auto history = records();
  ASSERT_EQ(history.size(), 1U);
  EXPECT_EQ(history[0]["outcome"], "failed");
  EXPECT_EQ(history[0]["detail"]["provision"]["steps"][2]["status"], "not_run");

  // A failed provision is never promoted, whatever a scan of it would say:
  // refused (1), as an env that does not comply is.
  const auto refused = promote("pinned", "torch-fl", m_contract);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("pinned is marked as a failed provision"), std::string::npos)
      << refused.err;

  // Configured to remove what it could not finish.
  const auto removed = provision("pinned-2", contract, {"--apply", "--on-failure", "remove"});
  EXPECT_EQ(removed.exit_code, 2);
  EXPECT_NE(removed.err.find("pinned-2: removed"), std::string::npos) << removed.err;
  EXPECT_FALSE(fs::exists(m_envs / "pinned-2"));
}

TEST_F(Provisioning, StockTritonIsBuiltButReportedAsDriftAndNeverPromoted) {
  const auto contract = contract_with("flagtree==0.7.0", "triton==3.5.0", "stock.yaml");
  // Each scans the env it built or promotes: --progress says so env by env, as scan's does.
  const auto built = provision("stock", contract, {"--apply", "--progress", "always"});
  EXPECT_EQ(built.exit_code, 1) << built.out << built.err;
  EXPECT_NE(built.err.find("[1/1] stock: drift ("), std::string::npos) << built.err;
  EXPECT_NE(built.err.find("stock was built but does not comply (drift); it will not be "
                           "promoted:\n  flagtree-xpu (stock_triton)"),
            std::string::npos)
      << built.err;
  const auto refused = promote("stock", "torch-fl", m_contract, {"--progress", "always"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("[1/1] stock: drift ("), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("stock does not comply with kunlunxin-demo (drift), so it is not "
                             "promoted"),
            std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(fs::symlink_status(m_envs / "torch-fl")));
  EXPECT_EQ(records()[0]["outcome"], "refused");
}

TEST_F(Provisioning, TheCondaRouteRunsItsCommandTemplate) {
  // A stand-in for `micromamba create`: lays out a conda-style prefix (a
  // venv with conda-meta/), so that discovery and activation treat it as conda.
  const auto fake = m_dir.path() / "fake-micromamba";
  write_text(fake,
             "#!/bin/sh\n# fake-micromamba create --yes --prefix PREFIX python=3.10\n"
             "set -e\nprefix=\"$4\"\n\"" +
                 (demo_host() / "opt/python3.10/bin/python3.10").string() +
                 "\" -m venv \"$prefix\"\nmkdir -p \"$prefix/conda-meta\"\n"
                 "printf '==> 2026-12-01 00:00:00 <==\\n# cmd: micromamba create\\n' > "
                 "\"$prefix/conda-meta/history\"\n");
  fs::permissions(fake, fs::perms(0755));
  const auto contract = contract_with(
      "create: venv", "create: " + fake.string() + " create --yes --prefix {prefix} python=3.10",
      "conda.yaml");
  const auto built = provision("conda-env", contract);
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  const auto prefix = m_envs / "conda-env";
  // conda's own places: env_vars in conda-meta/state, the script in activate.d.
  EXPECT_NE(read_text(prefix / "conda-meta/state").find("\"XPU_ROOT\""), std::string::npos);
  EXPECT_TRUE(fs::exists(prefix / "etc/conda/activate.d/xpu_env.sh"));
  EXPECT_EQ(read_text(prefix / "bin/activate").find("XPU_ROOT"), std::string::npos);
  EXPECT_NE(built.out.find("compliant envs: conda-env;"), std::string::npos) << built.out;
}

TEST_F(Provisioning, ASecondProvisionOfTheSameNameIsRefusedWhileOneRuns) {
  facts::RunAs run_as;
  if (!m_user.empty()) {
    run_as = process::run_as_user(m_user);
    run_as.switch_credentials = true;
  }
  provisioning::NameLock held(m_envs, "busy", m_user.empty() ? nullptr : &run_as);
  ASSERT_TRUE(held.held()) << held.problem();
  const auto refused = provision("busy", m_contract);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("another provision of 'busy' is running"), std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(m_envs / "busy"));
}

// Without a database (no --database, no agent config) nothing is recorded,
// and the verb says so and how to record; with one, the record is made.
TEST_F(Provisioning, WithoutADatabaseTheVerbSaysNothingIsRecorded) {
  if (fs::exists("/etc/envcontract/agent.yaml")) {
    GTEST_SKIP() << "/etc/envcontract/agent.yaml exists: the verbs take their database from it";
  }
  std::vector<std::string> argv = {ENVCONTRACTD_PATH, "rollback", "torch-fl", "--envs-dir",
                                   m_envs.string()};
  if (!m_user.empty()) {
    argv.insert(argv.end(), {"--user", m_user});
  }
  const auto unrecorded = run_command(argv);
  EXPECT_EQ(unrecorded.exit_code, 2) << "there is nothing to go back to";
  EXPECT_NE(unrecorded.err.find("envcontractd rollback: not recorded: no database (--database "
                                "FILE records it"),
            std::string::npos)
      << unrecorded.err;
  EXPECT_FALSE(fs::exists(database()));

  argv.insert(argv.end(), {"--database", database().string()});
  const auto recorded = run_command(argv);
  EXPECT_EQ(recorded.exit_code, 2);
  EXPECT_EQ(recorded.err.find("not recorded"), std::string::npos) << recorded.err;
  const auto history = records();
  ASSERT_EQ(history.size(), 1U);
  EXPECT_EQ(history[0]["action"], "rollback");
  EXPECT_EQ(history[0]["outcome"], "failed");
}

// The demo host's walk-through (tests/fixtures/README.md, "Fixing an env"):
// every env has pip, and the plan's own commands, run as printed, make
// torch-fl-activate comply. On a demo host of its own: it changes an env.
TEST_F(Provisioning, ThePlansOwnCommandsMakeADemoEnvComply) {
  const auto host = m_dir.path() / "host";
  testing::build_demo_host(host);
  const auto env = host / "miniconda3/envs/torch-fl-activate";
  ASSERT_TRUE(fs::exists(env / "lib/python3.10/site-packages/pip/__main__.py"))
      << "the demo envs have no pip (Debian: python3-pip-whl)";
  const std::vector<std::string> scope = {
      "--contract",       (host / "kunlunxin-provision.yaml").string(), "--prefix", env.string(),
      "--image-tag-file", (host / "etc/flagos-image").string(),         "-o",       "json"};
  const auto run_verb = [&scope](const std::string& verb) {
    std::vector<std::string> argv = {ENVCONTRACTD_PATH, verb};
    argv.insert(argv.end(), scope.begin(), scope.end());
    return run_command(argv);
  };
  const auto planned = run_verb("plan");
  ASSERT_EQ(planned.exit_code, 1) << planned.err;
  const auto plan = nlohmann::json::parse(planned.out);
  ASSERT_EQ(plan["envs"].size(), 1U) << planned.out;
  const auto& steps = plan["envs"][0]["steps"];
  ASSERT_FALSE(steps.empty()) << planned.out;
  for (const auto& step : steps) {
    const std::string command = step.value("command", "");
    ASSERT_NE(command, "") << "a step with no command: " << common::json_text(step);
    const auto ran = run_command({"/bin/sh", "-c", command});
    ASSERT_EQ(ran.exit_code, 0) << command << "\n" << ran.out << ran.err;
  }

  const auto scanned = run_verb("scan");
  const auto report = nlohmann::json::parse(scanned.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << scanned.out << scanned.err;
  ASSERT_EQ(report["envs"].size(), 1U);
  EXPECT_EQ(report["envs"][0]["verdict"], "compliant") << scanned.out;
  EXPECT_EQ(report["compliant_envs"], nlohmann::json::array({"torch-fl-activate"}));
}

TEST_F(Provisioning, AnExistingEnvIsNeverTouchedAndRootNeverRunsTheSteps) {
  fs::create_directory(m_envs / "taken");
  // Promotion by name takes a real directory of the envs directory: a link
  // planted there (to / here) is not followed.
  fs::create_directory_symlink("/", m_envs / "planted");
  const auto planted = promote("planted", "torch-fl", m_contract);
  EXPECT_EQ(planted.exit_code, 2);
  EXPECT_NE(planted.err.find("(a directory of the envs directory, not a link)"), std::string::npos)
      << planted.err;
  const auto taken = provision("taken", m_contract);
  EXPECT_EQ(taken.exit_code, 2);
  EXPECT_NE(taken.err.find("exists: provision builds a new env beside the others and never "
                           "modifies one"),
            std::string::npos)
      << taken.err;
  for (const auto& [name, why] : {std::pair{"../escape", "an env name cannot start with '.'"},
                                  std::pair{"a/b", "'a/b' is not an env name"}}) {
    const auto refused = provision(name, m_contract);
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_NE(refused.err.find(why), std::string::npos) << refused.err;
  }
  if (::geteuid() != 0) {
    GTEST_SKIP() << "the root refusal needs the test to run as root";
  }
  auto as_root = verb("provision", m_contract, "root");
  as_root.insert(as_root.end(), {"--name", "rooted", "--apply"});
  const auto refused = run_command(as_root);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("provisioning never runs as root"), std::string::npos) << refused.err;
}

// Over HTTP: only with the agent's token, only when the config enables it;
// the job's progress is readable while it runs, and the record says who.
TEST_F(Provisioning, OverHttpOnlyWithTheTokenWhenEnabledWithProgressAndARecord) {
  testing::AgentProcess agent(m_dir.path(), provisioning_agent("s3cret-token"));
  const std::map<std::string, std::string> bearer = {{"Authorization", "Bearer s3cret-token"}};
  auto answer = testing::http_post(agent.url(), "/api/v1/provision?name=web-env", "");
  EXPECT_EQ(answer.status, 401) << answer.body;
  answer = testing::http_post(agent.url(), "/api/v1/provision?name=web-env", "",
                              {{"Authorization", "Bearer wrong"}});
  EXPECT_EQ(answer.status, 401) << answer.body;
  answer = testing::http_post(agent.url(), "/api/v1/provision?name=..%2Fweb", "", bearer);
  EXPECT_EQ(answer.status, 400);
  EXPECT_NE(answer.body.find("'name': an env name cannot start with '.'"), std::string::npos)
      << answer.body;
  answer = testing::http_post(agent.url(), "/api/v1/provision?nmae=web-env", "", bearer);
  EXPECT_EQ(answer.status, 400);

  // Queued, then followed to its end.
  const auto follow = [&](const testing::HttpResult& queued) {
    EXPECT_EQ(queued.status, 202) << queued.body;
    const auto url = nlohmann::json::parse(queued.body, nullptr, false).value("url", "");
    nlohmann::ordered_json job;
    std::size_t most_lines_seen_running = 0;
    EXPECT_TRUE(testing::wait_until(
        [&] {
          int status = 0;
          job = testing::get_json(agent, url, &status);
          if (job.value("state", "") == "running") {
            most_lines_seen_running = std::max(most_lines_seen_running, job["lines"].size());
          }
          return status == 200 && job.value("state", "") == "done";
        },
        std::chrono::seconds(120)))
        << common::json_text(job, 2) << agent.log();
    return std::pair{job, most_lines_seen_running};
  };
  const auto [built, seen_running] =
      follow(testing::http_post(agent.url(), "/api/v1/provision?name=web-env", "", bearer));
  EXPECT_EQ(built["exit_code"], 0) << common::json_text(built, 2);
  std::string lines;
  for (const auto& line : built["lines"]) {
    lines += line.get<std::string>() + "\n";
  }
  EXPECT_NE(lines.find("[2/4] install: ok (exit 0"), std::string::npos) << lines;
  EXPECT_NE(lines.find("web-env complies with kunlunxin-demo"), std::string::npos) << lines;
  EXPECT_GT(seen_running, 0U) << "no progress was readable while the job ran";

  const auto [promoted, unused] = follow(
      testing::http_post(agent.url(), "/api/v1/promote?env=web-env&as=torch-fl", "", bearer));
  EXPECT_EQ(promoted["exit_code"], 0) << common::json_text(promoted, 2);
  EXPECT_EQ(provisioning::link_target(m_envs / "torch-fl"), m_envs / "web-env");

  int status = 0;
  const auto history = testing::get_json(agent, "/api/v1/provisions", &status);
  ASSERT_EQ(history["provisions"].size(), 2U) << common::json_text(history, 2);
  EXPECT_EQ(history["provisions"][0]["action"], "promote");
  EXPECT_EQ(history["provisions"][0]["outcome"], "promoted");
  EXPECT_EQ(history["provisions"][0]["requested_by"], "api: token holder from 127.0.0.1");
  EXPECT_EQ(history["provisions"][1]["outcome"], "compliant");
  testing::get_json(agent, "/api/v1/provisions/999", &status);
  EXPECT_EQ(status, 404);
  testing::wait_for_report(agent);
  EXPECT_EQ(testing::get_json(agent, "/api/v1/plan")["provisioning"]["enabled"], true);
}

// The agent stopping mid-provision: the running step is killed at once,
// the half-built env is marked failed, and the record says so.
TEST_F(Provisioning, StoppingTheAgentStopsARunningProvisionPromptly) {
  testing::AgentProcess agent(m_dir.path(), provisioning_agent("stop-token"));
  const auto queued = testing::http_post(agent.url(), "/api/v1/provision?name=cut", "",
                                         {{"Authorization", "Bearer stop-token"}});
  ASSERT_EQ(queued.status, 202) << queued.body;
  const auto url = nlohmann::json::parse(queued.body, nullptr, false).value("url", "");
  ASSERT_TRUE(testing::wait_until(
      [&] {
        const auto job = testing::get_json(agent, url);
        return job.value("state", "") == "running" && fs::exists(m_envs / "cut");
      },
      std::chrono::seconds(30)))
      << agent.log();
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(agent.stop(), 0) << agent.log();
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_LT(took, std::chrono::seconds(15)) << agent.log();
  EXPECT_TRUE(fs::exists(m_envs / "cut" / provisioning::k_failed_marker)) << agent.log();
  const auto history = records();
  ASSERT_EQ(history.size(), 1U);
  EXPECT_EQ(history[0]["outcome"], "failed");
}

TEST_F(Provisioning, OverHttpRefusedWithoutATokenOrWhenNotEnabled) {
  const auto prefix = (demo_host() / "venvs/xpu210v").string();
  {
    testing::AgentProcess no_token(m_dir.path(), {"--contract", m_contract.string(), "--prefix",
                                                  prefix, "--database", database().string()});
    const auto answer = testing::http_post(no_token.url(), "/api/v1/provision?name=x", "",
                                           {{"X-Requested-By", "test"}});
    EXPECT_EQ(answer.status, 403);
    EXPECT_NE(answer.body.find("needs the agent's token, and this agent has none"),
              std::string::npos)
        << answer.body;
  }
  const auto token = m_dir.write("token", "t0ken\n");
  fs::permissions(token, fs::perms::owner_read | fs::perms::owner_write);
  testing::AgentProcess disabled(
      m_dir.path(), {"--contract", m_contract.string(), "--prefix", prefix, "--database",
                     database().string(), "--token-file", token.string()});
  const auto answer = testing::http_post(disabled.url(), "/api/v1/promote?env=a&as=b", "",
                                         {{"Authorization", "Bearer t0ken"}});
  EXPECT_EQ(answer.status, 403);
  EXPECT_NE(answer.body.find("provisioning is not enabled on this agent"), std::string::npos)
      << answer.body;
  testing::wait_for_report(disabled);
  EXPECT_EQ(testing::get_json(disabled, "/api/v1/plan")["provisioning"]["enabled"], false);
}

// A snapshot is of one env, named when discovery finds several, and never
// of one whose facts are partial: its activation failing, it would state
// less than the env is.
TEST(Snapshot, NamesItsEnvAndRefusesOneWhoseFactsArePartial) {
  const auto unnamed = run_command({ENVCONTRACTD_PATH, "snapshot", "--root", demo_host().string()});
  EXPECT_EQ(unnamed.exit_code, 2);
  EXPECT_NE(unnamed.err.find("envcontractd snapshot: name the env to snapshot (--env); the envs "
                             "found are: base, torch-fl-activate, torch-fl-cpu, "),
            std::string::npos)
      << unnamed.err;
  const auto typo = run_command(
      {ENVCONTRACTD_PATH, "snapshot", "--root", demo_host().string(), "--env", "torch-fl-cpux"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("no env named 'torch-fl-cpux' (did you mean 'torch-fl-cpu'?); the envs "
                          "found are: base, "),
            std::string::npos)
      << typo.err;

  testing::TempDir dir;
  testing::open_to_all(dir.path());
  const auto broken = testing::make_system_venv(dir.path() / "broken");
  testing::open_to_all(broken);
  write_text(broken / "bin/activate", "echo activating >&2\nexit 3\n");
  const auto output = dir.path() / "broken.yaml";
  const auto refused = run_command({ENVCONTRACTD_PATH, "snapshot", "--prefix", broken.string(),
                                    "--output-file", output.string()});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("envcontractd snapshot: the facts of broken are incomplete "
                             "(activation: activation exit 3: activating); a snapshot would "
                             "state less than the env is"),
            std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(output));
}

// A contract from a golden env: it validates, the env it came from complies
// with it, and every env of the demo host drifts from it.
TEST_F(Provisioning, ASnapshotOfACompliantEnvPassesOnItAndFailsOnTheDemoHostsEnvs) {
  const auto built = provision("golden", m_contract);
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  const auto snapshot = m_dir.path() / "golden.yaml";
  const auto taken = run_command(
      {ENVCONTRACTD_PATH, "snapshot", "--prefix", (m_envs / "golden").string(), "--contract",
       m_contract.string(), "--name", "kunlunxin-golden", "--pin", "--image-tag-file",
       (demo_host() / "etc/flagos-image").string(), "--output-file", snapshot.string()});
  ASSERT_EQ(taken.exit_code, 0) << taken.err;
  EXPECT_EQ(taken.err.find("deprecated"), std::string::npos) << taken.err;
  EXPECT_NE(taken.err.find("wrote " + snapshot.string() + ": 3 imports, 1 device and 1 smoke"),
            std::string::npos)
      << taken.err;
  const auto text = read_text(snapshot);
  for (const char* line :
       {"  - id: torch-build\n    kind: torch\n    base: \"2.10.0\"\n",
        "    modules: [\"torch\", \"torch_fl\", \"triton\"]\n", "    backends: [\"xpu\"]\n",
        "      \"torch-fl\": \"==0.3.0\"\n", "    count: \">= 8\"\n",
        "  # From the base contract, as it is; here it passed.\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\nin:\n" << text;
  }
  EXPECT_EQ(run_command({ENVCONTRACTD_PATH, "validate", snapshot.string()}).exit_code, 0);
  // -o is a format everywhere: snapshot's old -o FILE still writes FILE, and says so.
  const auto old_form = m_dir.path() / "old-form.yaml";
  const auto deprecated =
      run_command({ENVCONTRACTD_PATH, "snapshot", "--prefix", (m_envs / "golden").string(),
                   "--name", "kunlunxin-golden", "-o", old_form.string()});
  EXPECT_EQ(deprecated.exit_code, 0) << deprecated.err;
  EXPECT_NE(deprecated.err.find("-o FILE is deprecated (-o is the output format of every verb): "
                                "write --output-file " +
                                old_form.string()),
            std::string::npos)
      << deprecated.err;
  EXPECT_NE(read_text(old_form).find("name: \"kunlunxin-golden\""), std::string::npos);

  const auto golden = run_command({ENVCONTRACTD_PATH, "scan", "--contract", snapshot.string(),
                                   "--prefix", (m_envs / "golden").string(), "--image-tag-file",
                                   (demo_host() / "etc/flagos-image").string(), "-o", "json"});
  EXPECT_EQ(golden.exit_code, 0) << golden.out;
  const auto demo = run_command({ENVCONTRACTD_PATH, "scan", "--contract", snapshot.string(),
                                 "--root", demo_host().string(), "--image-tag-file",
                                 (demo_host() / "etc/flagos-image").string(), "-o", "json"});
  EXPECT_EQ(demo.exit_code, 1);
  const auto report = nlohmann::json::parse(demo.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << demo.out;
  EXPECT_EQ(report["envs"].size(), 8U);
  EXPECT_TRUE(report["compliant_envs"].empty()) << common::json_text(report["compliant_envs"]);
}

// The dashboard, as a person uses it in headless Chromium: a drifting env's
// plan under its diagnoses; then the provision form with the token, the
// job's lines appearing while it runs, and the promote form once it complies.
TEST_F(Provisioning, TheDashboardShowsThePlanAndProvisionsWithLiveProgress) {
  if (!fs::exists("/usr/bin/chromium") ||
      run_command({"/usr/bin/python3", "-c", "import websocket"}).exit_code != 0) {
    GTEST_SKIP() << "chromium or python3-websocket is not installed (scripts/test installs "
                    "them): the dashboard's provisioning is not tested";
  }
  testing::AgentProcess agent(m_dir.path(), provisioning_agent("dash-token"));
  testing::wait_for_report(agent);
  const auto script = m_dir.write("drive.js", R"js(
const wait = async (ready, ms) => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (ready()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
};
const byId = (id) => document.getElementById(id);
const label = byId("provision-state");
const result = {};
result.formShown = await wait(() => !byId("provision-section").hidden, 20000);
result.plan = await wait(() => document.querySelector('[data-plan="xpu210v"]') !== null, 20000)
  ? document.querySelector('[data-plan="xpu210v"]').innerText : null;
byId("provision-name").value = "dash-env";
byId("provision-token").value = "dash-token";
byId("provision").click();
let linesWhileRunning = 0;
await wait(() => {
  if (label.getAttribute("data-state") === "running") {
    linesWhileRunning = Math.max(linesWhileRunning, byId("provision-log").textContent.split("\n").length);
  }
  return label.getAttribute("data-state") === "done";
}, 100000);
result.linesWhileRunning = linesWhileRunning;
result.provisionExit = label.getAttribute("data-exit");
result.log = byId("provision-log").textContent;
result.afterProvision = label.textContent;
result.promoteShown = !byId("promote-form").hidden;
byId("promote-as").value = "torch-fl";
byId("promote").click();
await wait(() => label.getAttribute("data-state") === "done", 60000);
result.promoteExit = label.getAttribute("data-exit");
result.afterPromote = label.textContent;
return result;
)js");
  const auto driven = run_command(
      {"/usr/bin/python3", ENVCONTRACT_SOURCE_DIR "/tests/support/browser.py",
       (m_dir.path() / "profile").string(), agent.url() + "/#env=xpu210v", script.string(), "150"});
  ASSERT_EQ(driven.exit_code, 0) << driven.err << agent.log();
  const auto seen = nlohmann::json::parse(driven.out, nullptr, false);
  ASSERT_TRUE(seen.is_object()) << driven.out;
  EXPECT_TRUE(seen["formShown"].get<bool>());
  const std::string plan = seen["plan"].is_string() ? seen["plan"].get<std::string>() : "";
  EXPECT_NE(plan.find("What would make it comply"), std::string::npos) << plan;
  EXPECT_NE(plan.find("install distribution torch (torch==2.10.0+cpu)"), std::string::npos) << plan;
  EXPECT_NE(plan.find("fixes: torch-cpu-build, no-libtorch-cuda"), std::string::npos) << plan;
  EXPECT_GT(seen["linesWhileRunning"].get<int>(), 1) << "no progress while it ran";
  EXPECT_EQ(seen["provisionExit"], "0") << seen["log"];
  EXPECT_NE(seen["log"].get<std::string>().find("[2/4] install: ok"), std::string::npos);
  EXPECT_EQ(seen["afterProvision"],
            "dash-env complies: promote it to make it the env people and CI activate");
  EXPECT_TRUE(seen["promoteShown"].get<bool>());
  EXPECT_EQ(seen["promoteExit"], "0");
  EXPECT_EQ(seen["afterPromote"], "promoted: torch-fl now points to dash-env");
  EXPECT_EQ(provisioning::link_target(m_envs / "torch-fl"), m_envs / "dash-env");
}

}  // namespace
}  // namespace envcontract
