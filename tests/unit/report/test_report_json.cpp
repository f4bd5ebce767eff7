// The report as data and its edge form: what build_report makes of a
// judgement, written as JSON and read back, and what is read of reports
// that other agents (or anyone on the network) send.
#include "report/report_json.hpp"

#include <gtest/gtest.h>

#include "common/json_text.hpp"
#include "report/report.hpp"

namespace envcontract::report {
namespace {

using contracts::CheckStatus;
using contracts::EnvVerdict;

contracts::CheckResult failing(const std::string& id, const std::string& cause,
                               contracts::Severity severity = contracts::Severity::required) {
  contracts::CheckResult check;
  check.id = id;
  check.kind = "torch";
  check.severity = severity;
  check.status = CheckStatus::fail;
  check.expected = {{"base", "2.10.0"}};
  check.actual = "2.10.0+cu129";
  check.diagnosis = contracts::Diagnosis{
      cause, id + " failed", {{"library", "libbkcl.so"}}, "install the CPU build"};
  return check;
}

contracts::CheckResult passing(const std::string& id) {
  contracts::CheckResult check;
  check.id = id;
  check.kind = "python";
  check.status = CheckStatus::pass;
  return check;
}

// A host of two envs: a drifting conda env whose activation sets a vendor
// path, and a compliant venv run as root; one target the host's image breaks.
struct JudgedHost {
  facts::HostFacts facts;
  contracts::HostJudgement judgement;
};

JudgedHost judged_host() {
  JudgedHost host;
  host.facts.host = "xpu-07";
  host.facts.gathered_at = "2026-12-06T07:00:00Z";
  host.facts.image = {"harbor.example/flagos:2.1.2", "file /etc/flagos-image", ""};
  facts::EnvFacts conda;
  conda.env.name = "torch-fl";
  conda.env.prefix = "/opt/conda/envs/torch-fl";
  conda.env.kind = facts::EnvKind::conda;
  conda.env.python_version = "3.10.13";
  conda.env.run_as.uid = 1000;
  conda.env.run_as.user = "ci";
  conda.env.run_as.reason = "owner of the env";
  conda.activation.scripts = {"/opt/conda/envs/torch-fl/etc/conda/activate.d/xpu.sh"};
  conda.activation.bare = {{"PATH", "/usr/bin"}};
  conda.activation.activated = {{"PATH", "/usr/bin"}, {"XPU_ROOT", "/usr/local/xpu"}};
  conda.dynamic = facts::DynamicFacts{};
  conda.probed_at = "2026-12-06T07:00:01Z";
  facts::EnvFacts venv;
  venv.env.name = "xpu210v";
  venv.env.prefix = "/srv/venvs/xpu210v";
  venv.env.kind = facts::EnvKind::venv;
  venv.env.python_version = "3.11.7";
  venv.env.run_as.uid = 0;
  venv.env.run_as.user = "root";
  host.facts.envs = {conda, venv};
  host.facts.problems.push_back({"/home/bob/envs", "permission denied"});

  host.judgement.verdict = EnvVerdict::drift;
  host.judgement.reasons = {"torch-fl drifts"};
  host.judgement.compliant_envs = {"xpu210v"};
  contracts::TargetJudgement target{"ci", "harbor.example/flagos:2.2.0",
                                    failing("image", "image_mismatch")};
  target.check.expected = "harbor.example/flagos:2.2.0";
  host.judgement.targets = {target};
  host.judgement.envs = {
      {"torch-fl",
       {EnvVerdict::drift,
        {failing("torch-cpu", "cuda_build"), failing("bkcl", "missing_library"),
         failing("hint", "x", contracts::Severity::advisory), passing("python")}}},
      {"xpu210v", {EnvVerdict::compliant, {passing("python")}}}};
  return host;
}

Report built() {
  const auto host = judged_host();
  return build_report({"kunlunxin", "/etc/envcontract/kunlunxin.yaml", "ab12", "Kunlunxin"},
                      host.judgement, host.facts, 12.5);
}

TEST(Report, IsBuiltFromTheJudgementAndTheFactsItWasJudgedOn) {
  const Report report = built();
  EXPECT_EQ(report.verdict, Verdict::drift);
  EXPECT_EQ(report.host, "xpu-07");
  EXPECT_EQ(report.contract.platform, "Kunlunxin");
  ASSERT_EQ(report.targets.size(), 1U);
  EXPECT_EQ(report.targets[0].checks.at(0).status, CheckStatus::fail);
  ASSERT_EQ(report.envs.size(), 2U);

  const EnvReport& conda = report.envs[0];
  EXPECT_EQ(conda.kind, "conda");
  EXPECT_EQ(conda.verdict, EnvVerdict::drift);
  EXPECT_EQ(conda.target, std::optional<std::string>("ci")) << "the first target when none matches";
  EXPECT_EQ(conda.probed_at, std::optional<std::string>("2026-12-06T07:00:01Z"));
  EXPECT_FALSE(conda.container.has_value());
  ASSERT_TRUE(conda.run_as.has_value());
  EXPECT_FALSE(conda.run_as->as_root);
  ASSERT_TRUE(conda.activation.has_value());
  ASSERT_EQ(conda.activation->changes.size(), 1U);
  EXPECT_EQ(conda.activation->changes[0].name, "XPU_ROOT");
  EXPECT_FALSE(conda.activation->changes[0].bare.has_value()) << "unset before activation";
  EXPECT_EQ(conda.checks.at(0).since, std::nullopt) << "only a store with history can tell";

  const EnvReport& venv = report.envs[1];
  EXPECT_FALSE(venv.probed_at.has_value()) << "its code did not run";
  EXPECT_TRUE(venv.run_as->as_root);
  EXPECT_EQ(report.problems.at(0).path, "/home/bob/envs");
}

TEST(Report, AnEnvsSummaryNamesItsFirstRequiredFailureAndCountsTheRest) {
  const Report report = built();
  EXPECT_EQ(report.envs[0].summary, "torch-cpu: torch-cpu failed (and 1 more)")
      << "the advisory check is not counted";
  EXPECT_EQ(report.envs[1].summary, "complies");
  EnvReport unjudged;
  unjudged.verdict = EnvVerdict::error;
  EXPECT_EQ(env_summary(unjudged), "") << "an env not judged does not comply";
}

TEST(Report, ItsExitStatusFollowsTheVerdict) {
  Report report;
  for (const auto& [verdict, status] :
       std::vector<std::pair<Verdict, int>>{{Verdict::compliant, 0},
                                            {Verdict::drift, 1},
                                            {Verdict::error, 2},
                                            {Verdict::pending, 2}}) {
    report.verdict = verdict;
    EXPECT_EQ(exit_status(report), status) << to_string(verdict);
  }
}

TEST(ReportJson, AReportReadsBackAsItWasWritten) {
  Report report = built();
  report.scan_id = 42;
  report.not_persisted = "disk full";
  report.envs[0].checks[0].since = "2026-12-01T00:00:00Z";
  report.envs[0].checks[0].flapping = true;
  report.partial = PartialScan{1, 2, {"xpu210v"}};
  const Json written = to_json(report);
  const Report read = report_from_json(written);
  EXPECT_EQ(to_json(read), written) << common::json_text(written, 1);
  EXPECT_EQ(read.scan_id, std::optional<std::int64_t>(42));
  EXPECT_EQ(read.envs[0].checks[0].since, std::optional<std::string>("2026-12-01T00:00:00Z"));
  EXPECT_TRUE(read.envs[0].checks[0].flapping);
  EXPECT_EQ(read.envs[0].checks[0].diagnosis->evidence["library"], "libbkcl.so");
  EXPECT_EQ(read.envs[0].run_as->uid, std::optional<std::int64_t>(1000));
}

std::vector<std::string> keys_of(const Json& object) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.items()) {
    keys.push_back(key);
  }
  return keys;
}

TEST(ReportJson, TheEdgeFormKeepsTheDocumentedFieldsInTheirOrder) {
  Report report = built();
  report.containers.push_back(
      {"trainer", "/proc/42/root", {"podman", "exec"}, {}, "not running", {}, {"trainer:app"}});
  report.scan_id = 7;
  report.not_persisted = "disk full";
  const Json written = to_json(report);
  EXPECT_EQ(keys_of(written), (std::vector<std::string>{
                                  "schema_version", "host", "scanned_at", "duration_ms", "contract",
                                  "verdict", "reasons", "compliant_envs", "image", "targets",
                                  "containers", "envs", "problems", "scan_id", "not_persisted"}));
  EXPECT_EQ(keys_of(written["contract"]),
            (std::vector<std::string>{"name", "path", "sha256", "platform"}));
  EXPECT_EQ(
      keys_of(written["containers"][0]),
      (std::vector<std::string>{"name", "root", "exec", "image", "problem", "targets", "envs"}));
  EXPECT_EQ(keys_of(written["envs"][0]),
            (std::vector<std::string>{"name", "prefix", "kind", "python_version", "target",
                                      "container", "probed_at", "verdict", "checks", "summary",
                                      "run_as", "activation"}));
  EXPECT_EQ(keys_of(written["envs"][0]["checks"][0]),
            (std::vector<std::string>{"id", "kind", "severity", "status", "expected", "actual",
                                      "diagnosis", "notes", "since", "flapping"}));
  EXPECT_EQ(keys_of(written["envs"][0]["run_as"]),
            (std::vector<std::string>{"user", "uid", "reason", "as_root"}));
  EXPECT_EQ(keys_of(written["envs"][0]["activation"]),
            (std::vector<std::string>{"scripts", "changes", "more_changes", "problem"}));
  EXPECT_EQ(written["schema_version"], 1);
  EXPECT_TRUE(written["envs"][1]["probed_at"].is_null());
  EXPECT_TRUE(written["envs"][0]["checks"][0]["since"].is_null());
  EXPECT_EQ(written["envs"][0]["activation"]["changes"][0]["bare"], nullptr);
}

// What another agent sends may lack anything or hold anything: nothing read
// from it claims more than it said.
TEST(ReportJson, WhatAReportDoesNotSayNeverReadsAsPassing) {
  const Report read = report_from_json(Json::parse(R"({
    "schema_version": "1", "verdict": "splendid", "duration_ms": "fast",
    "reasons": ["a", 3, null], "targets": "not a list",
    "envs": [null, 3, "x",
      {"name": "quiet", "checks": [7, {"id": "no-status"}, {"id": "odd", "status": "great"},
                                   {"id": "w", "status": "waived", "severity": "advisory"}]},
      {"name": "big-uid", "verdict": "compliant", "run_as": {"uid": 18446744073709551615}},
      {"name": "negative-uid", "run_as": {"uid": -1}},
      {"name": "float-uid", "run_as": {"uid": 1000.5}}],
    "scan_id": 0
  })"));
  EXPECT_EQ(read.schema_version, 0) << "a string is not the schema's version";
  EXPECT_EQ(read.verdict, Verdict::error);
  EXPECT_EQ(read.duration_ms, 0);
  EXPECT_EQ(read.reasons, std::vector<std::string>{"a"});
  EXPECT_TRUE(read.targets.empty());
  ASSERT_EQ(read.envs.size(), 4U) << "entries that are not objects are no envs";
  const EnvReport& quiet = read.envs[0];
  EXPECT_EQ(quiet.verdict, EnvVerdict::error) << "no verdict: not judged, not compliant";
  ASSERT_EQ(quiet.checks.size(), 3U);
  EXPECT_EQ(quiet.checks[0].status, CheckStatus::error) << "no status: not judged, not passed";
  EXPECT_EQ(quiet.checks[0].severity, contracts::Severity::required);
  EXPECT_EQ(quiet.checks[1].status, CheckStatus::error);
  EXPECT_EQ(quiet.checks[2].status, CheckStatus::waived);
  EXPECT_EQ(quiet.checks[2].severity, contracts::Severity::advisory);
  EXPECT_FALSE(quiet.run_as.has_value());
  EXPECT_EQ(read.envs[1].verdict, EnvVerdict::compliant);
  EXPECT_FALSE(read.envs[1].run_as->uid.has_value()) << "beyond any uid: unknown";
  EXPECT_FALSE(read.envs[2].run_as->uid.has_value()) << "below any uid: unknown";
  EXPECT_FALSE(read.envs[3].run_as->uid.has_value()) << "not an integer: unknown";
  EXPECT_FALSE(read.scan_id.has_value()) << "scan ids start at 1";
  EXPECT_EQ(report_from_json(Json::array()).envs.size(), 0U);
  EXPECT_EQ(verdict_from_string("pending"), std::optional<Verdict>(Verdict::pending));
  EXPECT_EQ(verdict_from_string("Compliant"), std::nullopt);
}

TEST(ReportJson, APrintableReportHoldsNoControlCharacter) {
  Report report = built();
  report.envs[0].name = "evil\x1b[2J";
  report.envs[0].checks[0].diagnosis->evidence = {{"stderr_tail", "ok\rwiped\x07"}};
  report.envs[0].checks[0].actual = {{"k\x1b", "v"}};
  const std::string text = common::json_text(to_json(printable_report(report)));
  for (const char c : {'\x1b', '\r', '\x07'}) {
    EXPECT_EQ(text.find(c), std::string::npos) << text;
  }
  EXPECT_EQ(printable_report(report).envs[0].name, "evil\\x1b[2J");
}

}  // namespace
}  // namespace envcontract::report
