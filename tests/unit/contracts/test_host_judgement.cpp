// The host-level judgement: targets (the image) and the contract's env rule.
#include <gtest/gtest.h>

#include "common/json_text.hpp"
#include "common/time_text.hpp"
#include "contracts/host_judgement.hpp"
#include "tests/support/contract_text.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

using contracts::CheckStatus;
using contracts::EnvVerdict;
using contracts::Json;

contracts::Contract load(const std::string& text) {
  auto loaded = testing::load_text(text);
  EXPECT_TRUE(loaded.contract) << testing::joined(loaded);
  return loaded.contract ? *loaded.contract : contracts::Contract{};
}

const std::string k_two_targets =
    "schema_version: 1\n"
    "targets:\n"
    "  - {name: ci, image: 'harbor.example/flagos/runtime:2.2.0'}\n"
    "  - {name: dev, image: 'harbor.example/flagos/runtime-dev'}\n";

facts::ImageTag image(const std::string& value) {
  return {value, "file /etc/flagos-image", ""};
}

TEST(JudgeTargets, TagMismatchNamesBothTags) {
  const auto judged =
      contracts::judge_targets(load(k_two_targets), image("harbor.example/flagos/runtime:2.1.2"));
  ASSERT_EQ(judged.size(), 2U);
  EXPECT_EQ(judged[0].check.status, CheckStatus::fail);
  EXPECT_EQ(judged[0].check.diagnosis->cause, "image_mismatch");
  EXPECT_EQ(judged[0].check.diagnosis->summary,
            "the host runs harbor.example/flagos/runtime tag 2.1.2, target 'ci' wants tag 2.2.0");
  EXPECT_EQ(judged[0].check.diagnosis->evidence["source"], "file /etc/flagos-image");
  EXPECT_EQ(judged[1].check.diagnosis->summary,
            "the host runs harbor.example/flagos/runtime:2.1.2, target 'dev' wants "
            "harbor.example/flagos/runtime-dev");
}

TEST(JudgeTargets, OneMatchingTargetPassesAndTheOthersDoNotApply) {
  const auto judged = contracts::judge_targets(load(k_two_targets),
                                               image("harbor.example/flagos/runtime-dev:nightly"));
  ASSERT_EQ(judged.size(), 2U);
  EXPECT_EQ(judged[0].check.status, CheckStatus::skip);
  EXPECT_EQ(judged[0].check.diagnosis->cause, "other_target");
  EXPECT_EQ(judged[1].check.status, CheckStatus::pass);  // no tag in the target: any tag
}

// A target the host's reference cannot decide does not apply either once
// another matched (the host runs that one), and one of another name is a
// plain mismatch, not undecided: before, either kept the host at `error`.
TEST(JudgeTargets, AnUndecidedTargetDoesNotApplyOnceAnotherMatched) {
  const std::string digest(64, 'a');
  const auto contract = load(
      "schema_version: 1\n"
      "targets:\n"
      "  - {name: ci, image: 'harbor.example/flagos/runtime:2.2.0'}\n"
      "  - {name: pinned, image: 'harbor.example/flagos/runtime@sha256:" +
      digest +
      "'}\n"
      "  - {name: other, image: 'harbor.example/flagos/other@sha256:" +
      digest + "'}\n");
  const auto judged =
      contracts::judge_targets(contract, image("harbor.example/flagos/runtime:2.2.0"));
  ASSERT_EQ(judged.size(), 3U);
  EXPECT_EQ(judged[0].check.status, CheckStatus::pass);
  EXPECT_EQ(judged[1].check.status, CheckStatus::skip);
  EXPECT_EQ(judged[1].check.diagnosis->cause, "other_target");
  EXPECT_EQ(judged[2].check.status, CheckStatus::skip);
  EXPECT_EQ(judged[2].check.diagnosis->cause, "other_target");

  // Alone, the pinned target stays undecided, and the other one is a mismatch.
  const auto alone =
      contracts::judge_targets(contract, image("harbor.example/flagos/runtime:2.1.2"));
  EXPECT_EQ(alone[1].check.status, CheckStatus::error);
  EXPECT_EQ(alone[1].check.diagnosis->cause, "image_unknown");
  EXPECT_EQ(alone[2].check.status, CheckStatus::fail);
  EXPECT_EQ(alone[2].check.diagnosis->cause, "image_mismatch");
}

TEST(JudgeTargets, DigestMustMatchWhenTheTargetNamesOne) {
  const std::string digest(64, 'a');
  const auto contract =
      load("schema_version: 1\nimage: 'registry.example/x:1@sha256:" + digest + "'\n");
  EXPECT_EQ(contracts::judge_targets(contract, image("registry.example/x:1@sha256:" + digest))[0]
                .check.status,
            CheckStatus::pass);
  EXPECT_EQ(contracts::judge_targets(
                contract, image("registry.example/x:1@sha256:" + std::string(64, 'b')))[0]
                .check.status,
            CheckStatus::fail);
}

// Docker's rules: no registry is docker.io, a one-part name is under
// library/, index.docker.io is docker.io, no tag is latest.
TEST(JudgeTargets, ReferencesAreComparedAsDockerResolvesThem) {
  const auto judge = [](const std::string& target, const std::string& host) {
    return contracts::judge_targets(load("schema_version: 1\nimage: '" + target + "'\n"),
                                    image(host))[0];
  };
  for (const auto& [target, host] : std::vector<std::pair<std::string, std::string>>{
           {"ubuntu:22.04", "docker.io/library/ubuntu:22.04"},
           {"docker.io/library/ubuntu:22.04", "ubuntu:22.04"},
           {"library/ubuntu:22.04", "index.docker.io/library/ubuntu:22.04"},
           {"ubuntu:latest", "ubuntu"},
           {"localhost:5000/runtime:1", "localhost:5000/runtime:1"}}) {
    EXPECT_EQ(judge(target, host).check.status, CheckStatus::pass) << target << " vs " << host;
  }
  EXPECT_EQ(judge("ubuntu:22.04", "quay.io/ubuntu:22.04").check.status, CheckStatus::fail);
  EXPECT_EQ(judge("ubuntu:22.04", "ubuntu").check.status, CheckStatus::fail);  // latest
}

// The incident's host file names the image without its registry: what it
// records is compared, a note says so, and identical tags are never a
// "mismatch" between two equal strings.
TEST(JudgeTargets, AHostThatRecordsLessIsComparedOnWhatItRecords) {
  const auto contract = load(
      "schema_version: 1\nimage: "
      "'registry.example/flagos-runtime/flagos-runtime-kunlunxin-xre5.37.1:2.2.0'\n");
  const auto same =
      contracts::judge_targets(contract, image("flagos-runtime-kunlunxin-xre5.37.1:2.2.0"))[0];
  EXPECT_EQ(same.check.status, CheckStatus::pass);
  ASSERT_EQ(same.check.notes.size(), 1U);
  EXPECT_EQ(same.check.notes[0].cause, "image_partial");
  EXPECT_NE(same.check.notes[0].summary.find("without a registry"), std::string::npos);

  const auto older =
      contracts::judge_targets(contract, image("flagos-runtime-kunlunxin-xre5.37.1:2.1.2"))[0];
  EXPECT_EQ(older.check.status, CheckStatus::fail);

  const auto other = contracts::judge_targets(contract, image("another-runtime:2.2.0"))[0];
  EXPECT_EQ(other.check.status, CheckStatus::fail);
  ASSERT_TRUE(other.check.diagnosis);
  EXPECT_EQ(other.check.diagnosis->cause, "image_mismatch");
  EXPECT_EQ(other.check.diagnosis->evidence["host_image"], "another-runtime:2.2.0");
  EXPECT_NE(other.check.diagnosis->summary.find("(the same tag, another image)"), std::string::npos)
      << other.check.diagnosis->summary;

  const std::string digest(64, 'c');
  const auto pinned =
      load("schema_version: 1\nimage: 'registry.example/x:1@sha256:" + digest + "'\n");
  const auto undigested = contracts::judge_targets(pinned, image("registry.example/x:1"))[0];
  EXPECT_EQ(undigested.check.status, CheckStatus::pass);
  ASSERT_EQ(undigested.check.notes.size(), 1U);
  EXPECT_EQ(undigested.check.notes[0].cause, "image_partial");
  EXPECT_NE(undigested.check.notes[0].summary.find("records no digest"), std::string::npos);
}

// Digests decide when both sides have one; a target pinned only by digest
// against a host that records none is undecided: an error, never a pass.
TEST(JudgeTargets, DigestsDecideAndADigestOnlyTargetNeedsOne) {
  const std::string digest(64, 'd');
  const auto by_digest = load("schema_version: 1\nimage: 'reg.example/x@sha256:" + digest + "'\n");
  const auto undecided = contracts::judge_targets(by_digest, image("reg.example/x:whatever"))[0];
  EXPECT_EQ(undecided.check.status, CheckStatus::error);
  EXPECT_EQ(undecided.check.diagnosis->cause, "image_unknown");
  EXPECT_NE(undecided.check.diagnosis->summary.find("pins only the digest"), std::string::npos);
  EXPECT_EQ(contracts::judge_targets(by_digest, image("x"))[0].check.status, CheckStatus::error);

  const auto tagged = load("schema_version: 1\nimage: 'reg.example/x:1@sha256:" + digest + "'\n");
  EXPECT_EQ(
      contracts::judge_targets(tagged, image("reg.example/x@sha256:" + digest))[0].check.status,
      CheckStatus::pass);
  EXPECT_EQ(
      contracts::judge_targets(tagged, image("reg.example/x:1@sha256:" + std::string(64, 'e')))[0]
          .check.status,
      CheckStatus::fail);
}

TEST(JudgeTargets, UnknownOrUnreadableImageIsAnErrorThatSaysWhatToConfigure) {
  const auto contract = load(k_two_targets);
  const auto unconfigured = contracts::judge_targets(contract, facts::ImageTag{});
  EXPECT_EQ(unconfigured[0].check.status, CheckStatus::error);
  EXPECT_EQ(unconfigured[0].check.diagnosis->cause, "image_unknown");
  EXPECT_NE(unconfigured[0].check.diagnosis->remedy.find("--image-tag-file"), std::string::npos);

  const auto unreadable =
      contracts::judge_targets(contract, facts::ImageTag{"", "file /nope", "No such file"});
  EXPECT_EQ(unreadable[0].check.diagnosis->summary,
            "the host's image reference could not be read: No such file");

  const auto garbage = contracts::judge_targets(contract, image("Not An Image!"));
  EXPECT_EQ(garbage[0].check.status, CheckStatus::error);
  EXPECT_EQ(garbage[0].check.diagnosis->cause, "image_unknown");
  EXPECT_EQ(garbage[0].check.diagnosis->evidence["value"], "Not An Image!");
  EXPECT_NE(garbage[0].check.diagnosis->summary.find("is not an image reference"),
            std::string::npos);
}

// An env's facts as probes give them for a contract asking for
// {prefix}/marker: found in it or not.
facts::EnvFacts named_env(const std::string& name, const std::filesystem::path& prefix) {
  facts::EnvFacts env;
  env.env.name = name;
  env.env.prefix = prefix;
  return env;
}

facts::EnvFacts marker_env(const std::string& name, const std::filesystem::path& prefix,
                           bool has_marker) {
  const std::string marker = (prefix / "marker").string();
  auto env = named_env(name, prefix);
  facts::PathMatches matches;
  matches.pattern = "{prefix}/marker";
  matches.expansions = {marker};
  if (has_marker) {
    matches.matches = {marker};
  }
  env.path_matches.push_back(matches);
  return env;
}

// An environment check compares values as they are but reports only those
// a report may show: a token it checks is set stays out of the report.
TEST(PureJudges, EnvironmentChecksNeverReportTheValueOfASecret) {
  const auto contract = load(
      "schema_version: 1\nchecks:\n"
      "  - {id: token, kind: environment, set: [HF_TOKEN], equals: {XPU_ROOT: /opt/xpu}}\n"
      "  - {id: no-token, kind: environment, unset: [HF_TOKEN]}\n");
  auto env = named_env("e", "/nonexistent/env");
  env.activation.activated = {{"HF_TOKEN", "hf_secret_value"}, {"XPU_ROOT", "/opt/xpu"}};
  const auto judged = contracts::judge_env(contract, env);
  ASSERT_EQ(judged.checks.size(), 2U);
  EXPECT_EQ(judged.checks[0].status, CheckStatus::pass);
  EXPECT_EQ(judged.checks[0].actual["XPU_ROOT"], "/opt/xpu");
  EXPECT_EQ(judged.checks[0].actual["HF_TOKEN"], "(set, 15 bytes; value not shown)");
  EXPECT_EQ(judged.checks[1].status, CheckStatus::fail);
  const std::string shown = common::json_text(contracts::to_json(judged.checks[1]));
  EXPECT_EQ(shown.find("hf_secret_value"), std::string::npos) << shown;
  EXPECT_NE(shown.find("value not shown"), std::string::npos) << shown;
}

// Judges read facts, never the host they run on: device nodes this machine
// does not have count when the facts (say, of the fleet host) list them, and
// a check whose facts were not gathered is an error, not a pass.
TEST(PureJudges, DeviceNodesAndToolsComeFromTheFacts) {
  const auto contract = load(
      "schema_version: 1\nchecks:\n"
      "  - {id: nodes, kind: device_nodes, glob: /dev/xpu*, count: '>= 2'}\n"
      "  - {id: smi, kind: tools, on_path: [xpu-smi]}\n");
  auto env = named_env("e", "/nonexistent/env");
  env.device_nodes.push_back({"/dev/xpu*", {"/dev/xpu0", "/dev/xpu1"}});
  env.tools.push_back({"xpu-smi", "/opt/xre/bin/xpu-smi"});
  const auto judged = contracts::judge_env(contract, env);
  EXPECT_EQ(judged.verdict, EnvVerdict::compliant);
  EXPECT_EQ(judged.checks[0].actual, 2);
  EXPECT_EQ(judged.checks[1].actual["xpu-smi"], "/opt/xre/bin/xpu-smi");
  const auto unasked = contracts::judge_env(contract, named_env("e", "/x"));
  EXPECT_EQ(unasked.verdict, EnvVerdict::error);
  EXPECT_EQ(unasked.checks[0].diagnosis->cause, "probe_error");
  EXPECT_EQ(unasked.checks[1].diagnosis->cause, "probe_error");
}

// An env of a container or an image tree (its system root) names its paths
// as its own processes do: its search path, set by its activation inside,
// and a contract's library path are the container's, compared with its
// prefix and files seen from inside, never with the agent's path to them.
TEST(PureJudges, PathRulesAreJudgedAsTheEnvSeesItsPaths) {
  const auto contract = load(
      "schema_version: 1\nchecks:\n"
      "  - {id: path, kind: search_path, variable: PATH, starts_with: ['{prefix}/bin'],\n"
      "     must_not_contain: ['/srv/image']}\n"
      "  - {id: cuda-free, kind: linkage, library: /usr/lib/libvendor.so,\n"
      "     must_not_need: [libcuda.so.1]}\n");
  auto env = named_env("e", "/srv/image/opt/envs/e");
  env.env.system_root = "/srv/image";
  env.activation.activated = {{"PATH", "/opt/envs/e/bin:/usr/bin"}};
  facts::LibraryLinkage vendor;
  vendor.path = "/srv/image/usr/lib/libvendor.so";
  vendor.needed = {"libcuda.so.1"};
  vendor.closure = {{"libcuda.so.1", "libvendor.so", "/srv/image/usr/lib/libcuda.so.1"}};
  env.linkage.libraries.push_back(vendor);
  const auto judged = contracts::judge_env(contract, env);
  ASSERT_EQ(judged.checks.size(), 2U);
  EXPECT_EQ(judged.checks[0].status, CheckStatus::pass)
      << common::json_text(contracts::to_json(judged.checks[0]));
  EXPECT_EQ(judged.checks[1].status, CheckStatus::fail)
      << common::json_text(contracts::to_json(judged.checks[1]));
  ASSERT_TRUE(judged.checks[1].diagnosis);
  EXPECT_EQ(judged.checks[1].diagnosis->cause, "forbidden_needed");
}

// Two envs, "good" where probes found the marker file and "bad" where they
// did not, judged by a contract that wants the marker: judges read facts only.
class EnvRule : public ::testing::Test {
 protected:
  facts::HostFacts host(const std::string& image_value = "") const {
    facts::HostFacts host;
    host.image = image(image_value);
    for (const char* name : {"good", "bad"}) {
      host.envs.push_back(marker_env(name, m_dir.path() / name, std::string(name) == "good"));
    }
    return host;
  }
  contracts::HostJudgement judge(const std::string& rule, const std::string& extra = "",
                                 const std::string& image_value = "") const {
    return contracts::judge_host(load("schema_version: 1\n" + extra + "envs:\n  require: " + rule +
                                      "\nchecks:\n  - id: marker\n    kind: files\n"
                                      "    exist: ['{prefix}/marker']\n"),
                                 host(image_value));
  }
  testing::TempDir m_dir;
};

TEST_F(EnvRule, AnyNeedsOneCompliantEnv) {
  const auto judged = judge("any");
  EXPECT_EQ(judged.verdict, EnvVerdict::compliant);
  EXPECT_EQ(judged.compliant_envs, std::vector<std::string>{"good"});
  EXPECT_TRUE(judged.reasons.empty());
  ASSERT_EQ(judged.envs.size(), 2U);
  EXPECT_EQ(judged.envs[1].judgement.verdict, EnvVerdict::drift);
}

TEST_F(EnvRule, AllNeedsEveryEnv) {
  const auto judged = judge("all");
  EXPECT_EQ(judged.verdict, EnvVerdict::drift);
  EXPECT_EQ(judged.reasons,
            std::vector<std::string>{"the contract wants every env to comply, 1 of 2 envs do not"});
}

TEST_F(EnvRule, NamedEnvsMustExistAndComply) {
  EXPECT_EQ(judge("[good]").verdict, EnvVerdict::compliant);
  const auto judged = judge("[good, bad, gone]");
  EXPECT_EQ(judged.verdict, EnvVerdict::drift);
  EXPECT_EQ(judged.reasons,
            (std::vector<std::string>{"env 'bad', which the contract names, is drift",
                                      "env 'gone', which the contract names, was not found"}));
}

TEST_F(EnvRule, ImageMismatchMakesACompliantEnvSetDrift) {
  const std::string target = "image: 'registry.example/runtime:2.2.0'\n";
  EXPECT_EQ(judge("any", target, "registry.example/runtime:2.2.0").verdict, EnvVerdict::compliant);
  const auto judged = judge("any", target, "registry.example/runtime:2.1.2");
  EXPECT_EQ(judged.verdict, EnvVerdict::drift);
  ASSERT_EQ(judged.reasons.size(), 1U);
  EXPECT_EQ(judged.reasons[0],
            "the host runs registry.example/runtime tag 2.1.2, target 'default' wants tag 2.2.0");
  EXPECT_EQ(judge("any", target).verdict, EnvVerdict::error);  // image not configured
}

// An env whose reading failed (no thread to read it, say) has no facts: it
// is an error pointing at why, never a drift made of its empty facts.
TEST(HostRule, AnEnvThatCouldNotBeReadIsAnErrorNotADrift) {
  facts::HostFacts host;
  auto env = named_env("unread", "/srv/envs/unread");
  env.env.imports_checked = true;
  env.env.imports_unchecked = "the env could not be read: Resource temporarily unavailable";
  env.errors.push_back(
      {facts::FactError::Stage::reading, "Resource temporarily unavailable", std::nullopt});
  host.envs.push_back(env);
  const auto judged = contracts::judge_host(
      load("schema_version: 1\nchecks:\n  - {id: torch, kind: torch, base: '2.10.0'}\n"
           "  - {id: marker, kind: files, exist: ['{prefix}/marker']}\n"),
      host);
  ASSERT_EQ(judged.envs.size(), 1U);
  const auto& judgement = judged.envs[0].judgement;
  EXPECT_EQ(judgement.verdict, EnvVerdict::error);
  for (const auto& check : judgement.checks) {
    if (check.id == "env:facts") {
      EXPECT_EQ(check.status, CheckStatus::error);
      ASSERT_TRUE(check.diagnosis);
      EXPECT_EQ(check.diagnosis->summary,
                "reading the env failed: Resource temporarily unavailable");
    } else {
      // Neither the refused code nor the missing facts are the cause.
      EXPECT_EQ(check.status, CheckStatus::skip) << check.id;
    }
  }
}

// A scan judges each env once, as its probe ends, and the host of those
// judgements: the same host judgement as judging them all at the end.
TEST(HostRule, EnvsJudgedBeforehandMakeTheSameHostJudgement) {
  const auto contract = load(
      "schema_version: 1\nenvs: {require: all}\n"
      "checks:\n  - id: marker\n    kind: files\n    exist: ['{prefix}/marker']\n");
  testing::TempDir dir;
  facts::HostFacts host;
  host.envs.push_back(marker_env("good", dir.path(), true));
  host.envs.push_back(marker_env("bad", dir.path(), false));
  std::vector<contracts::EnvJudgement> judged;
  for (const auto& env : host.envs) {
    judged.push_back(contracts::judge_env_contained(contract, env));
  }
  const auto at_once = contracts::judge_host(contract, host);
  const auto beforehand = contracts::judge_host(contract, host, judged);
  EXPECT_EQ(beforehand.verdict, EnvVerdict::drift);
  EXPECT_EQ(beforehand.verdict, at_once.verdict);
  EXPECT_EQ(beforehand.compliant_envs, std::vector<std::string>{"good"});
  EXPECT_EQ(beforehand.reasons, at_once.reasons);
  ASSERT_EQ(beforehand.envs.size(), 2U);
  EXPECT_EQ(beforehand.envs[1].name, "bad");
  EXPECT_EQ(beforehand.envs[1].judgement.verdict, EnvVerdict::drift);
  // A judgement short is the caller's mistake, said rather than misread.
  EXPECT_THROW(contracts::judge_host(contract, host, {judged[0]}), std::invalid_argument);
}

TEST(HostRule, NoEnvAtAllIsDrift) {
  facts::HostFacts no_envs;
  no_envs.image = image("r.example/x:1");
  const auto judged =
      contracts::judge_host(load("schema_version: 1\nimage: 'r.example/x:1'\n"), no_envs);
  EXPECT_EQ(judged.verdict, EnvVerdict::drift);
  EXPECT_EQ(judged.reasons, std::vector<std::string>{"no Python env was found on the host"});
}

}  // namespace
}  // namespace envcontract

namespace envcontract {
namespace {

const std::string k_marker_contract =
    "schema_version: 1\n"
    "checks:\n  - id: marker\n    kind: files\n    exist: ['{prefix}/marker']\n";

facts::EnvFacts env_without_marker(const testing::TempDir& dir) {
  return marker_env("bad", dir.path(), false);
}

const auto k_day = *common::parse_rfc3339("2026-11-30T12:00:00Z");

TEST(Waivers, AWaiverInForceWaivesTheCheckAndKeepsItsDiagnosis) {
  testing::TempDir dir;
  const auto contract =
      load(k_marker_contract +
           "waivers:\n  - {check: marker, envs: [bad], reason: OPS-1234, until: 2026-11-30}\n");
  const auto judged = contracts::judge_env(contract, env_without_marker(dir), k_day);
  EXPECT_EQ(judged.verdict, EnvVerdict::compliant);
  ASSERT_EQ(judged.checks.size(), 1U);
  EXPECT_EQ(judged.checks[0].status, CheckStatus::waived);
  EXPECT_EQ(judged.checks[0].diagnosis->cause, "missing_file");
  ASSERT_EQ(judged.checks[0].notes.size(), 1U);
  EXPECT_EQ(judged.checks[0].notes[0].cause, "waived");
  EXPECT_EQ(judged.checks[0].notes[0].summary, "waived until 2026-11-30: OPS-1234");

  // Another env is not covered; the day after, the waiver has expired.
  auto other = env_without_marker(dir);
  other.env.name = "other";
  EXPECT_EQ(contracts::judge_env(contract, other, k_day).verdict, EnvVerdict::drift);
  const auto expired =
      contracts::judge_env(contract, env_without_marker(dir), k_day + std::chrono::hours(24));
  EXPECT_EQ(expired.verdict, EnvVerdict::drift);
  EXPECT_EQ(expired.checks[0].notes[0].cause, "waiver_expired");
}

TEST(Waivers, WithoutEnvsOrDateItCoversEveryEnvForGood) {
  testing::TempDir dir;
  const auto contract =
      load(k_marker_contract + "waivers:\n  - {check: marker, reason: accepted}\n");
  EXPECT_EQ(contracts::judge_env(contract, env_without_marker(dir), k_day).checks[0].status,
            CheckStatus::waived);
}

TEST(Waivers, MistakesAreReportedWithTheirPosition) {
  const auto result = testing::load_text(k_marker_contract +
                                         "waivers:\n"
                                         "  - {check: markr, reason: typo}\n"
                                         "  - {check: marker, reason: '  ', until: next week}\n"
                                         "  - {check: marker}\n");
  const auto errors = testing::joined(result);
  EXPECT_FALSE(result.contract);
  EXPECT_NE(errors.find("contract.yaml:7:13: error: waiver for unknown check 'markr' (did you "
                        "mean 'marker'?)"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("'until' of a waiver must be a date such as 2026-12-31, got 'next week'"),
            std::string::npos);
  EXPECT_NE(errors.find("a waiver needs a reason"), std::string::npos);
  EXPECT_NE(errors.find("missing the required key 'reason'"), std::string::npos) << errors;
}

}  // namespace
}  // namespace envcontract
