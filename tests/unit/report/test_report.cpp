// report/report.cpp: the typed report built from a host's judgement and its facts.
#include "report/report.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/shown_values.hpp"
#include "contracts/host_judgement.hpp"
#include "tests/support/contract_text.hpp"

namespace envcontract::report {
namespace {

using contracts::CheckStatus;
using contracts::EnvVerdict;
using contracts::Severity;

const ContractIdentity k_contract{"kunlunxin", "/etc/envcontract/kunlunxin.yaml", "ab12",
                                  "Kunlunxin"};

contracts::CheckResult check(const std::string& id, CheckStatus status,
                             Severity severity = Severity::required) {
  contracts::CheckResult result;
  result.id = id;
  result.kind = "files";
  result.severity = severity;
  result.status = status;
  if (status != CheckStatus::pass) {
    result.diagnosis = contracts::Diagnosis{id + "_cause", id + " did not pass", {}, ""};
  }
  return result;
}

// A check as a report holds it before any history is known.
CheckReport as_reported(const contracts::CheckResult& result) {
  return {result, std::nullopt, false};
}

facts::EnvFacts env_facts(const std::string& name) {
  facts::EnvFacts env;
  env.env.name = name;
  env.env.prefix = "/opt/envs/" + name;
  env.env.kind = facts::EnvKind::venv;
  env.env.python_version = "3.11.7";
  env.env.run_as.uid = 1000;
  env.env.run_as.user = "ci";
  return env;
}

contracts::Contract load(const std::string& text) {
  auto loaded = testing::load_text(text);
  EXPECT_TRUE(loaded.contract) << testing::joined(loaded);
  return loaded.contract ? *loaded.contract : contracts::Contract{};
}

// The pipeline as scan and serve run it: the contract judges the facts, the
// report is built of both. An env whose code never ran has an imports check
// that could not be judged, and every other check passing.
TEST(BuildReport, ACheckThatCouldNotBeJudgedIsNeverReportedAsPassing) {
  const auto contract = load(
      "schema_version: 1\n"
      "checks:\n"
      "  - {id: marker, kind: files, exist: ['{prefix}/marker']}\n"
      "  - {id: imports, kind: imports, modules: [torch_fl]}\n");
  facts::HostFacts host;
  host.host = "xpu-07";
  auto env = env_facts("never-probed");
  facts::PathMatches marker;
  marker.pattern = "{prefix}/marker";
  marker.expansions = {"/opt/envs/never-probed/marker"};
  marker.matches = marker.expansions;
  env.path_matches.push_back(marker);
  host.envs.push_back(env);

  const Report report = build_report(k_contract, contracts::judge_host(contract, host), host, 1);
  ASSERT_EQ(report.envs.size(), 1U);
  const EnvReport& reported = report.envs[0];
  ASSERT_EQ(reported.checks.size(), 2U);
  EXPECT_EQ(reported.checks[0].id, "marker");
  EXPECT_EQ(reported.checks[0].status, CheckStatus::pass);
  EXPECT_EQ(reported.checks[1].id, "imports");
  EXPECT_EQ(reported.checks[1].status, CheckStatus::error);
  EXPECT_EQ(diagnosis_of(reported.checks[1]).cause, "probe_error");
  EXPECT_EQ(reported.verdict, EnvVerdict::error) << "a required check not judged: not compliant";
  EXPECT_TRUE(report.compliant_envs.empty());
  EXPECT_EQ(report.verdict, Verdict::error);
  EXPECT_EQ(exit_status(report), 2);
  EXPECT_EQ(reported.summary.rfind("imports: ", 0), 0U) << reported.summary;
  EXPECT_FALSE(reported.probed_at.has_value()) << "its code never ran";
}

TEST(BuildReport, EachCheckIsReportedWithTheStatusItWasJudged) {
  const std::vector<CheckStatus> statuses = {CheckStatus::pass, CheckStatus::fail,
                                             CheckStatus::error, CheckStatus::skip,
                                             CheckStatus::waived};
  contracts::HostJudgement judgement;
  judgement.verdict = EnvVerdict::error;
  contracts::NamedEnvJudgement env{"e", {EnvVerdict::error, {}}};
  for (std::size_t i = 0; i < statuses.size(); ++i) {
    auto judged = check("c" + std::to_string(i), statuses[i]);
    judged.expected = {{"base", "2.10.0"}};
    judged.actual = "2.10.0+cu129";
    judged.notes = {{"activation_required", "needs activation", {}, "activate it"}};
    env.judgement.checks.push_back(judged);
  }
  judgement.envs = {env};
  const Report report = build_report(k_contract, judgement, facts::HostFacts{}, 0);
  ASSERT_EQ(report.envs.size(), 1U);
  ASSERT_EQ(report.envs[0].checks.size(), statuses.size());
  for (std::size_t i = 0; i < statuses.size(); ++i) {
    const CheckReport& reported = report.envs[0].checks[i];
    EXPECT_EQ(reported.status, statuses[i]) << i;
    EXPECT_EQ(reported.id, "c" + std::to_string(i));
    EXPECT_EQ(reported.expected, env.judgement.checks[i].expected);
    EXPECT_EQ(reported.actual, env.judgement.checks[i].actual);
    EXPECT_EQ(reported.diagnosis.has_value(), statuses[i] != CheckStatus::pass);
    ASSERT_EQ(reported.notes.size(), 1U);
    EXPECT_EQ(reported.notes[0].cause, "activation_required");
    // Only a store that keeps history can tell these.
    EXPECT_EQ(reported.since, std::nullopt);
    EXPECT_FALSE(reported.flapping);
  }
}

TEST(BuildReport, TheHostsVerdictIsTheJudgements) {
  for (const auto& [judged, reported] :
       std::vector<std::pair<EnvVerdict, Verdict>>{{EnvVerdict::compliant, Verdict::compliant},
                                                   {EnvVerdict::drift, Verdict::drift},
                                                   {EnvVerdict::error, Verdict::error}}) {
    contracts::HostJudgement judgement;
    judgement.verdict = judged;
    const Report report = build_report(k_contract, judgement, facts::HostFacts{}, 0);
    EXPECT_EQ(report.verdict, reported) << to_string(reported);
  }
  EXPECT_EQ(Report{}.verdict, Verdict::error) << "a report nothing filled in is no compliance";
}

TEST(BuildReport, TheHostsPartsAreCarriedOver) {
  facts::HostFacts host;
  host.host = "xpu-07";
  host.gathered_at = "2026-12-06T07:00:00Z";
  host.image = {"harbor.example/flagos:2.1.2", "file /etc/flagos-image", ""};
  host.problems = {{"/home/bob/envs", "permission denied"}, {"/srv/nfs", "timed out"}};
  contracts::HostJudgement judgement;
  judgement.verdict = EnvVerdict::drift;
  judgement.reasons = {"no env satisfies the contract"};
  judgement.compliant_envs = {};
  const Report report = build_report(k_contract, judgement, host, 12.5);
  EXPECT_EQ(report.schema_version, schema_version);
  EXPECT_EQ(report.host, "xpu-07");
  EXPECT_EQ(report.scanned_at, "2026-12-06T07:00:00Z");
  EXPECT_EQ(report.duration_ms, 12.5);
  EXPECT_EQ(report.contract.sha256, "ab12");
  EXPECT_EQ(report.reasons, judgement.reasons);
  EXPECT_EQ(report.image.value, "harbor.example/flagos:2.1.2");
  EXPECT_EQ(report.image.source, "file /etc/flagos-image");
  ASSERT_EQ(report.problems.size(), 2U);
  EXPECT_EQ(report.problems[1].path, "/srv/nfs");
  EXPECT_EQ(report.problems[1].problem, "timed out");
  EXPECT_FALSE(report.scan_id.has_value()) << "only once stored";
  EXPECT_FALSE(report.partial.has_value());
  EXPECT_FALSE(report.source.has_value()) << "agents never set it";
}

contracts::TargetJudgement target(const std::string& name, CheckStatus status) {
  auto judged = check("image", status);
  return {name, "harbor.example/flagos/" + name + ":2.2.0", judged};
}

// An env runs under the target its machine's image matches; when none
// matches, under the first, which it fails.
TEST(BuildReport, AnEnvsTargetIsTheOneItsHostsImageMatches) {
  facts::HostFacts host;
  host.envs = {env_facts("e")};
  contracts::HostJudgement judgement;
  judgement.envs = {{"e", {EnvVerdict::drift, {}}}};
  judgement.targets = {target("ci", CheckStatus::skip), target("dev", CheckStatus::pass)};
  EXPECT_EQ(build_report(k_contract, judgement, host, 0).envs[0].target,
            std::optional<std::string>("dev"));
  judgement.targets = {target("ci", CheckStatus::fail), target("dev", CheckStatus::fail)};
  EXPECT_EQ(build_report(k_contract, judgement, host, 0).envs[0].target,
            std::optional<std::string>("ci"));
  judgement.targets = {};
  EXPECT_EQ(build_report(k_contract, judgement, host, 0).envs[0].target, std::nullopt)
      << "a contract without targets";
  const auto report = build_report(k_contract, judgement, host, 0);
  EXPECT_TRUE(report.targets.empty());
}

TEST(BuildReport, TheHostsTargetsAreReportedEachWithItsImageCheck) {
  contracts::HostJudgement judgement;
  judgement.targets = {target("ci", CheckStatus::fail), target("dev", CheckStatus::error)};
  const Report report = build_report(k_contract, judgement, facts::HostFacts{}, 0);
  ASSERT_EQ(report.targets.size(), 2U);
  EXPECT_EQ(report.targets[0].name, "ci");
  EXPECT_EQ(report.targets[0].image, "harbor.example/flagos/ci:2.2.0");
  ASSERT_EQ(report.targets[1].checks.size(), 1U);
  EXPECT_EQ(report.targets[1].checks[0].id, "image");
  EXPECT_EQ(report.targets[1].checks[0].status, CheckStatus::error);
}

// A container target: where it is read, how its envs run, its image and
// targets, and its envs; an env in it is judged under the container's target.
TEST(BuildReport, AContainersEnvsAndTargetsAreItsOwn) {
  facts::HostFacts host;
  facts::ContainerFacts trainer{"trainer",
                                "/proc/42/root",
                                {"podman", "exec", "trainer-0"},
                                {"harbor.example/flagos/dev:2.2.0", "podman inspect", ""},
                                ""};
  facts::ContainerFacts stopped{"stopped", "", {"docker", "exec"}, {}, "not running"};
  host.containers = {trainer, stopped};
  auto inside = env_facts("trainer:app");
  inside.env.exec.target = "trainer";
  inside.env.exec.argv = {"podman", "exec", "trainer-0"};
  host.envs = {env_facts("host-env"), inside};
  contracts::HostJudgement judgement;
  judgement.targets = {target("ci", CheckStatus::pass), target("dev", CheckStatus::skip)};
  judgement.containers = {
      {"trainer", {target("ci", CheckStatus::skip), target("dev", CheckStatus::pass)}},
      {"stopped", {}}};
  judgement.envs = {{"host-env", {EnvVerdict::compliant, {}}},
                    {"trainer:app", {EnvVerdict::compliant, {}}}};

  const Report report = build_report(k_contract, judgement, host, 0);
  ASSERT_EQ(report.containers.size(), 2U);
  const ContainerReport& reported = report.containers[0];
  EXPECT_EQ(reported.name, "trainer");
  EXPECT_EQ(reported.root, "/proc/42/root");
  EXPECT_EQ(reported.exec, (std::vector<std::string>{"podman", "exec", "trainer-0"}));
  EXPECT_EQ(reported.image.value, "harbor.example/flagos/dev:2.2.0");
  EXPECT_EQ(reported.problem, std::nullopt) << "scanned: no problem, not an empty one";
  ASSERT_EQ(reported.targets.size(), 2U);
  EXPECT_EQ(reported.targets[1].checks.at(0).status, CheckStatus::pass);
  EXPECT_EQ(reported.envs, std::vector<std::string>{"trainer:app"}) << "not the host's env";
  EXPECT_EQ(report.containers[1].problem, std::optional<std::string>("not running"));
  EXPECT_TRUE(report.containers[1].targets.empty());
  EXPECT_TRUE(report.containers[1].envs.empty());

  ASSERT_EQ(report.envs.size(), 2U);
  EXPECT_EQ(report.envs[0].container, std::nullopt);
  EXPECT_EQ(report.envs[0].target, std::optional<std::string>("ci")) << "the host's match";
  EXPECT_EQ(report.envs[1].container, std::optional<std::string>("trainer"));
  EXPECT_EQ(report.envs[1].target, std::optional<std::string>("dev")) << "its container's match";
}

// A container whose facts are there but not its judgement (it was not
// judged): reported, with no targets rather than another's.
TEST(BuildReport, AContainerWithoutAJudgementHasNoTargets) {
  facts::HostFacts host;
  host.containers = {{"box", "/srv/box", {"bwrap"}, {}, ""}};
  contracts::HostJudgement judgement;
  judgement.containers = {{"other", {target("ci", CheckStatus::pass)}}};
  const Report report = build_report(k_contract, judgement, host, 0);
  ASSERT_EQ(report.containers.size(), 1U);
  EXPECT_EQ(report.containers[0].name, "box");
  EXPECT_TRUE(report.containers[0].targets.empty());
}

// A judged env whose facts are missing keeps its verdict and checks, and
// claims nothing the facts would have said.
TEST(BuildReport, AnEnvWithoutFactsSaysOnlyItsJudgement) {
  contracts::HostJudgement judgement;
  judgement.envs = {{"gone", {EnvVerdict::error, {check("env:facts", CheckStatus::error)}}}};
  const Report report = build_report(k_contract, judgement, facts::HostFacts{}, 0);
  ASSERT_EQ(report.envs.size(), 1U);
  const EnvReport& env = report.envs[0];
  EXPECT_EQ(env.name, "gone");
  EXPECT_EQ(env.verdict, EnvVerdict::error);
  ASSERT_EQ(env.checks.size(), 1U);
  EXPECT_EQ(env.checks[0].status, CheckStatus::error);
  EXPECT_EQ(env.summary, "env:facts: env:facts did not pass");
  EXPECT_EQ(env.prefix, "");
  EXPECT_EQ(env.kind, "");
  EXPECT_FALSE(env.run_as.has_value());
  EXPECT_FALSE(env.activation.has_value());
  EXPECT_FALSE(env.probed_at.has_value());
}

TEST(BuildReport, AnEnvsFactsFillItsEntry) {
  facts::HostFacts host;
  auto env = env_facts("torch-fl");
  env.env.kind = facts::EnvKind::conda;
  env.dynamic = facts::DynamicFacts{};
  env.probed_at = "2026-12-06T07:00:01Z";
  env.env.run_as.reason = "owner of the env";
  host.envs = {env_facts("other"), env};
  contracts::HostJudgement judgement;
  judgement.envs = {{"torch-fl", {EnvVerdict::compliant, {check("python", CheckStatus::pass)}}}};
  const Report report = build_report(k_contract, judgement, host, 0);
  ASSERT_EQ(report.envs.size(), 1U) << "the judged envs, not every env of the facts";
  const EnvReport& reported = report.envs[0];
  EXPECT_EQ(reported.prefix, "/opt/envs/torch-fl");
  EXPECT_EQ(reported.kind, facts::to_string(facts::EnvKind::conda));
  EXPECT_EQ(reported.python_version, "3.11.7");
  EXPECT_EQ(reported.probed_at, std::optional<std::string>("2026-12-06T07:00:01Z"));
  ASSERT_TRUE(reported.run_as.has_value());
  EXPECT_EQ(reported.run_as->user, "ci");
  EXPECT_EQ(reported.run_as->uid, std::optional<std::int64_t>(1000));
  EXPECT_EQ(reported.run_as->reason, "owner of the env");
  EXPECT_FALSE(reported.run_as->as_root);
  EXPECT_EQ(reported.summary, "complies");
}

// Root only when the env's code did run as root: uid 0 with a problem is
// the code that did not run at all.
TEST(BuildReport, AnEnvRunsAsRootOnlyWhenItsCodeCouldRunAsRoot) {
  facts::HostFacts host;
  auto root = env_facts("root-env");
  root.env.run_as.uid = 0;
  root.env.run_as.user = "root";
  auto refused = env_facts("refused-env");
  refused.env.run_as.uid = 0;
  refused.env.run_as.problem = "the configured user 'ci' does not exist";
  host.envs = {root, refused};
  contracts::HostJudgement judgement;
  judgement.envs = {{"root-env", {}}, {"refused-env", {}}};
  const Report report = build_report(k_contract, judgement, host, 0);
  EXPECT_TRUE(report.envs[0].run_as->as_root);
  EXPECT_FALSE(report.envs[1].run_as->as_root);
}

facts::EnvFacts activated(const facts::Environment& bare, const facts::Environment& after) {
  auto env = env_facts("e");
  env.activation.bare = bare;
  env.activation.activated = after;
  return env;
}

ActivationReport activation_reported(const facts::EnvFacts& env) {
  facts::HostFacts host;
  host.envs = {env};
  contracts::HostJudgement judgement;
  judgement.envs = {{env.env.name, {}}};
  const Report report = build_report(k_contract, judgement, host, 0);
  EXPECT_TRUE(report.envs.at(0).activation.has_value());
  return report.envs.at(0).activation.value_or(ActivationReport{});
}

TEST(BuildReport, ActivationSaysWhatEachVariableWasAndBecame) {
  auto env =
      activated({{"PATH", "/usr/bin"}, {"OLD_HOME", "/old"}, {"SAME_ROOT", "/x"}},
                {{"PATH", "/opt/envs/e/bin:/usr/bin"}, {"SAME_ROOT", "/x"}, {"XPU_ROOT", ""}});
  env.activation.scripts = {"/opt/envs/e/etc/conda/activate.d/xpu.sh"};
  env.activation.problem = "deactivate.d/x.sh exited 1";
  const auto activation = activation_reported(env);
  EXPECT_EQ(activation.scripts,
            std::vector<std::string>{"/opt/envs/e/etc/conda/activate.d/xpu.sh"});
  EXPECT_EQ(activation.problem, "deactivate.d/x.sh exited 1");
  ASSERT_EQ(activation.changes.size(), 3U) << "SAME_ROOT did not change";
  EXPECT_EQ(activation.changes[0].name, "OLD_HOME");
  EXPECT_EQ(activation.changes[0].bare, std::optional<std::string>("/old"));
  EXPECT_EQ(activation.changes[0].activated, std::nullopt) << "unset by activation";
  EXPECT_EQ(activation.changes[1].name, "PATH");
  EXPECT_EQ(activation.changes[1].activated,
            std::optional<std::string>("/opt/envs/e/bin:/usr/bin"));
  EXPECT_EQ(activation.changes[2].name, "XPU_ROOT");
  EXPECT_EQ(activation.changes[2].bare, std::nullopt) << "not set before activation";
  EXPECT_EQ(activation.changes[2].activated, std::optional<std::string>(""))
      << "set to empty is set";
  EXPECT_EQ(activation.more_changes, 0U);
}

// Reports go to whoever reaches the agent: only where-things-are values are
// shown, without the credentials of URLs in them.
TEST(BuildReport, ActivationShowsNoSecret) {
  const facts::Environment set = {{"API_KEY_PATH", "/etc/key"},
                                  {"HF_TOKEN", "hf_abcdefghijklmnop"},
                                  {"MODEL_HOME", "https://alice:s3cret@hub.example/m"}};
  const auto activation = activation_reported(activated({}, set));
  ASSERT_EQ(activation.changes.size(), 3U);
  for (const auto& change : activation.changes) {
    ASSERT_TRUE(change.activated.has_value()) << change.name;
    EXPECT_EQ(*change.activated, common::shown_variable_value(change.name, set.at(change.name)));
    EXPECT_EQ(change.activated->find("hf_abcdefghijklmnop"), std::string::npos)
        << *change.activated;
    EXPECT_EQ(change.activated->find("s3cret"), std::string::npos) << *change.activated;
  }
  EXPECT_EQ(activation.changes[0].activated->find("/etc/key"), std::string::npos)
      << "a path named like a key is not shown either";
  EXPECT_NE(activation.changes[2].activated->find("hub.example/m"), std::string::npos)
      << "a home is shown, without its password";
}

// The scripts are the env's: as many variables, as long a name and value as
// they make, the report holds a bounded part.
TEST(BuildReport, ActivationIsBounded) {
  facts::Environment after;
  for (int i = 0; i < 100; ++i) {
    after["VAR_" + std::to_string(1000 + i) + "_PATH"] = "/p";
  }
  auto many = activation_reported(activated({}, after));
  EXPECT_EQ(many.changes.size(), 64U);
  EXPECT_EQ(many.more_changes, 36U);
  EXPECT_EQ(many.changes[0].name, "VAR_1000_PATH") << "the first by name";

  const std::string long_path(5000, 'p');
  const std::string long_name = std::string(300, 'N') + "_PATH";
  auto huge = activation_reported(activated({}, {{"LONG_PATH", long_path}, {long_name, "/x"}}));
  ASSERT_EQ(huge.changes.size(), 2U);
  EXPECT_EQ(huge.changes[0].name, "LONG_PATH");
  EXPECT_EQ(huge.changes[0].activated,
            std::optional<std::string>(long_path.substr(0, 4096) + "... (5000 bytes)"));
  EXPECT_EQ(huge.changes[1].name, long_name.substr(0, 256) + "... (305 bytes)");
  EXPECT_EQ(huge.changes[1].activated, std::optional<std::string>("/x"))
      << "its value is still found by the whole name";
  const std::string exactly(4096, 'p');
  auto edge = activation_reported(activated({}, {{"EDGE_PATH", exactly}}));
  EXPECT_EQ(edge.changes.at(0).activated, std::optional<std::string>(exactly)) << "4096 is kept";
}

// The summary names the first required check that failed or could not be
// judged: "complies" is never said of an env one of those is in, whatever
// verdict it carries.
TEST(BuildReport, TheSummaryNeverSaysCompliesOverARequiredErrorOrFailure) {
  EnvReport env;
  env.verdict = EnvVerdict::compliant;
  for (const auto status : {CheckStatus::error, CheckStatus::fail}) {
    env.checks = {as_reported(check("python", CheckStatus::pass)), as_reported(check("x", status))};
    EXPECT_EQ(env_summary(env), "x: x did not pass") << contracts::to_string(status);
  }
  // Advisory, skipped or waived: none is a reason.
  env.checks = {as_reported(check("hint", CheckStatus::error, Severity::advisory)),
                as_reported(check("later", CheckStatus::skip)),
                as_reported(check("known", CheckStatus::waived))};
  EXPECT_EQ(env_summary(env), "complies");
  env.verdict = EnvVerdict::drift;
  EXPECT_EQ(env_summary(env), "") << "drift with no required failure: nothing to name";
  env.checks = {as_reported(check("a", CheckStatus::error)),
                as_reported(check("b", CheckStatus::fail)),
                as_reported(check("c", CheckStatus::fail))};
  EXPECT_EQ(env_summary(env), "a: a did not pass (and 2 more)");
  auto bare = check("d", CheckStatus::error);
  bare.diagnosis.reset();
  env.checks = {as_reported(bare)};
  EXPECT_EQ(env_summary(env).rfind("d:", 0), 0U) << "named even without a diagnosis";
}

TEST(BuildReport, AnEmptyCheckReportIsNotAPass) {
  EXPECT_NE(CheckReport{}.status, CheckStatus::pass);
  EXPECT_NE(EnvReport{}.verdict, EnvVerdict::compliant);
  const CheckReport empty;
  EXPECT_EQ(diagnosis_of(empty).cause, "") << "no diagnosis reads as an empty one";
  auto failed = check("x", CheckStatus::fail);
  EXPECT_EQ(diagnosis_of(failed).cause, "x_cause");
}

}  // namespace
}  // namespace envcontract::report
