// contracts/judgement.cpp: an env's own checks (here `env:code-safety`) and
// how the checks that need its code point at them.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/json_text.hpp"
#include "contracts/judgement.hpp"
#include "tests/support/contract_text.hpp"

namespace envcontract {
namespace {

using contracts::CheckStatus;
using contracts::EnvVerdict;
using facts::CodeRefusal;

contracts::Contract load(const std::string& text) {
  auto loaded = testing::load_text(text);
  EXPECT_TRUE(loaded.contract) << testing::joined(loaded);
  return loaded.contract ? *loaded.contract : contracts::Contract{};
}

// A contract whose checks all need the env's code: an import, a variable
// its activation sets.
const std::string k_code_contract =
    "schema_version: 1\nchecks:\n"
    "  - {id: import-order, kind: imports, modules: [torch]}\n"
    "  - {id: xpu-root, kind: environment, equals: {XPU_ROOT: /opt/xpu}}\n";

facts::EnvFacts env_in_container(const std::vector<std::string>& exec_argv, uid_t uid) {
  facts::EnvFacts env;
  env.env.name = "torch-fl";
  env.env.prefix = "/srv/rootfs/opt/envs/torch-fl";
  env.env.system_root = "/srv/rootfs";
  env.env.imports_checked = true;
  env.env.run_as.uid = uid;
  env.env.exec.target = "trainer-0";
  env.env.exec.argv = exec_argv;
  return env;
}

const contracts::CheckResult* find(const contracts::EnvJudgement& judged, const std::string& id) {
  for (const auto& check : judged.checks) {
    if (check.id == id) {
      return &check;
    }
  }
  ADD_FAILURE() << "no check " << id;
  return nullptr;
}

// Root through nsenter is the host's root outside the container's
// confinement: none of the env's code runs, the cause says so (not
// imports_unchecked, whose remedy would send people after .pth files), and
// every check that needed its code points at it.
TEST(Judgement, RootThroughNsenterIsRefusedAsUnconfinedRoot) {
  const auto contract = load(k_code_contract);
  const auto judged = contracts::judge_env(
      contract, env_in_container({"/usr/bin/nsenter", "--target", "42", "--mount"}, 0));
  const auto* safety = find(judged, "env:code-safety");
  ASSERT_NE(safety, nullptr);
  EXPECT_EQ(safety->status, CheckStatus::fail);
  ASSERT_TRUE(safety->diagnosis);
  EXPECT_EQ(safety->diagnosis->cause, "unconfined_root");
  EXPECT_EQ(safety->diagnosis->evidence["exec"], "/usr/bin/nsenter");
  EXPECT_EQ(safety->diagnosis->evidence["container"], "trainer-0");
  EXPECT_NE(safety->diagnosis->remedy.find("exec: docker or podman"), std::string::npos)
      << safety->diagnosis->remedy;
  for (const char* id : {"import-order", "xpu-root"}) {
    const auto* check = find(judged, id);
    ASSERT_NE(check, nullptr);
    EXPECT_EQ(check->status, CheckStatus::skip) << id;
    ASSERT_TRUE(check->diagnosis) << id;
    EXPECT_EQ(check->diagnosis->cause, "blocked") << id;
    EXPECT_EQ(check->diagnosis->evidence["blocked_by"], "env:code-safety") << id;
  }
  EXPECT_EQ(judged.verdict, EnvVerdict::drift);
}

// Through the runtime's own exec root is the container's root, and an
// unprivileged user through nsenter is that user: no refusal either way.
TEST(Judgement, ConfinedOrUnprivilegedExecIsNotRefused) {
  const auto contract = load(k_code_contract);
  for (const auto& env : {env_in_container({"/usr/bin/docker", "exec", "-i"}, 0),
                          env_in_container({"/usr/bin/nsenter", "--target", "42"}, 1000)}) {
    auto confined = env;
    confined.env.exec.runtime_client = env.env.exec.argv.front() == "/usr/bin/docker";
    const auto judged = contracts::judge_env(contract, confined);
    for (const auto& check : judged.checks) {
      EXPECT_NE(check.id, "env:code-safety") << common::json_text(contracts::to_json(check));
    }
  }
}

// When the scan could not hold the env's imports to the rule, the probes do
// it themselves; what they refused for keeps its own cause and remedy.
TEST(Judgement, TheProbesOwnRefusalKeepsItsCause) {
  const auto contract = load(k_code_contract);
  const std::vector<std::pair<CodeRefusal::Kind, std::string>> kinds = {
      {CodeRefusal::Kind::run_as_unavailable, "run_as_unavailable"},
      {CodeRefusal::Kind::unsafe_permissions, "unsafe_permissions"},
      {CodeRefusal::Kind::imports_unchecked, "imports_unchecked"},
      {CodeRefusal::Kind::unconfined_root, "unconfined_root"}};
  for (const auto& [kind, cause] : kinds) {
    facts::EnvFacts env;
    env.env.name = "e";
    env.env.prefix = "/opt/envs/e";
    env.dynamic.emplace();
    env.dynamic->refused =
        CodeRefusal{kind, "none of this env's code runs: /opt/envs/e/lib/x.pth is writable"};
    const auto judged = contracts::judge_env(contract, env);
    const auto* safety = find(judged, "env:code-safety");
    ASSERT_NE(safety, nullptr) << cause;
    ASSERT_TRUE(safety->diagnosis) << cause;
    EXPECT_EQ(safety->diagnosis->cause, cause);
    EXPECT_EQ(safety->diagnosis->summary,
              "none of this env's code runs: /opt/envs/e/lib/x.pth is writable");
  }
}

// Paths others could write come first, whoever the code would run as: that
// is what someone must mend before anything of the env runs.
TEST(Judgement, UnsafePathsOutweighAMissingUser) {
  const auto contract = load(k_code_contract);
  facts::EnvFacts env;
  env.env.name = "e";
  env.env.prefix = "/opt/envs/e";
  env.env.run_as.problem = "there is no user 'svc-probe' on this host";
  facts::UnsafePath unsafe;
  unsafe.path = "/opt/envs/e/lib";
  unsafe.why = "writable by everyone";
  unsafe.owner = "alice";
  unsafe.group = "alice";
  unsafe.mode = 0777;
  env.env.unsafe = {unsafe, unsafe};
  const auto judged = contracts::judge_env(contract, env);
  const auto* safety = find(judged, "env:code-safety");
  ASSERT_NE(safety, nullptr);
  ASSERT_TRUE(safety->diagnosis);
  EXPECT_EQ(safety->diagnosis->cause, "unsafe_permissions");
  EXPECT_EQ(safety->diagnosis->evidence["unsafe"].size(), 2U);
  EXPECT_EQ(safety->diagnosis->evidence["unsafe"][0]["path"], "/opt/envs/e/lib");

  env.env.unsafe.clear();
  const auto without_unsafe = contracts::judge_env(contract, env);
  const auto* run_as = find(without_unsafe, "env:code-safety");
  ASSERT_NE(run_as, nullptr);
  ASSERT_TRUE(run_as->diagnosis);
  EXPECT_EQ(run_as->diagnosis->cause, "run_as_unavailable");
  EXPECT_EQ(run_as->diagnosis->summary,
            "there is no user 'svc-probe' on this host: none of this env's code was run");
}

// An env whose activation failed had its facts gathered under its bare
// environment: it gets an `error` check of its own naming the failure, so it
// is never compliant on facts of the wrong environment, and its checks on
// the activated environment are errors too, never a pass or a drift.
TEST(Judgement, AFailedActivationIsAnErrorOfTheEnvsOwn) {
  const auto contract = load(
      "schema_version: 1\nchecks:\n"
      "  - {id: no-preload, kind: environment, unset: [LD_PRELOAD]}\n");
  facts::EnvFacts env;
  env.env.name = "e";
  env.env.prefix = "/opt/envs/e";
  env.activation.problem = "etc/conda/activate.d/xpu_env.sh exited with status 1";
  env.activation.scripts = {"/opt/envs/e/etc/conda/activate.d/xpu_env.sh"};
  const auto judged = contracts::judge_env(contract, env);
  const auto* activation = find(judged, "env:activation");
  ASSERT_NE(activation, nullptr);
  EXPECT_EQ(activation->status, CheckStatus::error);
  ASSERT_TRUE(activation->diagnosis);
  EXPECT_EQ(activation->diagnosis->cause, "activation_failed");
  EXPECT_EQ(activation->diagnosis->evidence["problem"], env.activation.problem);
  EXPECT_EQ(activation->diagnosis->evidence["scripts"][0],
            "/opt/envs/e/etc/conda/activate.d/xpu_env.sh");
  const auto* unset = find(judged, "no-preload");
  ASSERT_NE(unset, nullptr);
  EXPECT_EQ(unset->status, CheckStatus::error) << "a pass on the bare environment";
  EXPECT_EQ(judged.verdict, EnvVerdict::error);

  // Activation that worked: no check of its own.
  env.activation.problem.clear();
  const auto activated = contracts::judge_env(contract, env);
  EXPECT_TRUE(std::none_of(activated.checks.begin(), activated.checks.end(),
                           [](const auto& check) { return check.id == "env:activation"; }));
  EXPECT_EQ(activated.verdict, EnvVerdict::compliant);
}

}  // namespace
}  // namespace envcontract
