#include "report/ci_output.hpp"

#include <gtest/gtest.h>

#include "report/report_json.hpp"

namespace envcontract::report {
namespace {

// A report as build_report writes it, cut to what the CI output reads: one
// env with a failing and a passing check, one target whose image could not
// be read.
Json drifting_report() {
  return Json::parse(R"({
    "host": "vm", "verdict": "drift",
    "contract": {"name": "kunlunxin", "path": "/ws/.github/configs/kunlunxin.yml"},
    "targets": [{"name": "ci", "checks": [
      {"id": "image", "severity": "required", "status": "error",
       "diagnosis": {"cause": "image_unknown",
                     "summary": "the host's image reference could not be read",
                     "remedy": "tell the agent where the image reference is"}}]}],
    "envs": [{"name": "xpu210v", "prefix": "/ws/venvs/xpu210v", "verdict": "drift", "checks": [
      {"id": "torch-contract", "severity": "required", "status": "fail",
       "diagnosis": {"cause": "cuda_build",
                     "summary": "CUDA build of torch (2.10.0+cu129) where the contract requires a CPU build",
                     "remedy": "install the CPU build of torch 2.10.0"}},
      {"id": "python", "severity": "required", "status": "pass", "diagnosis": null},
      {"id": "gpu-hint", "severity": "advisory", "status": "fail",
       "diagnosis": {"cause": "x", "summary": "only a warning", "remedy": ""}}]}]
  })");
}

TEST(CiOutput, WorkflowCommandsEscapeAsTheActionsToolkitDoes) {
  EXPECT_EQ(github_data("100% done\r\nnext"), "100%25 done%0D%0Anext");
  EXPECT_EQ(github_property("envcontract: a, b"), "envcontract%3A a%2C b");
  // A line break in an env's string cannot start a command of its own.
  EXPECT_EQ(github_data("x\n::add-mask::y"), "x%0A::add-mask::y");
}

TEST(CiOutput, MarkdownShowsAnEnvsStringsAsThemselves) {
  EXPECT_EQ(markdown_text("a|b <img src=x> [link](u) *bold*\nnext"),
            "a\\|b \\<img src\\=x\\> \\[link\\]\\(u\\) \\*bold\\* next");
  EXPECT_EQ(markdown_text(std::string("bell\x07") + "é"), "bellé");
}

TEST(CiOutput, TheGateStopsOnAFailingEnvAndGoesWhenOneComplies) {
  const auto drift = gate_decision(report_from_json(drifting_report()));
  EXPECT_EQ(drift.outcome, GateDecision::Outcome::drift);
  EXPECT_EQ(drift.exit_code(), 1);
  EXPECT_EQ(drift.why, "xpu210v breaks kunlunxin");

  Json report = drifting_report();
  report["envs"][0]["verdict"] = "compliant";
  const auto go = gate_decision(report_from_json(report));
  // The image that could not be read is not about the env: the job goes.
  EXPECT_EQ(go.outcome, GateDecision::Outcome::go);
  EXPECT_EQ(go.exit_code(), 0);
  EXPECT_EQ(go.why, "xpu210v complies with kunlunxin");

  // A target check that does not say its severity counts as required.
  Json unsaid = report;
  unsaid["targets"][0]["checks"][0]["status"] = "fail";
  unsaid["targets"][0]["checks"][0].erase("severity");
  EXPECT_EQ(gate_decision(report_from_json(unsaid)).outcome, GateDecision::Outcome::drift);

  // A target known to break the contract stops it.
  report["targets"][0]["checks"][0]["status"] = "fail";
  EXPECT_EQ(gate_decision(report_from_json(report)).outcome, GateDecision::Outcome::drift);
  EXPECT_EQ(gate_decision(report_from_json(report)).why, "ci's image breaks kunlunxin");

  // Every env judged must comply: a compliant one beside one that breaks
  // the contract proves nothing of the env the job will use.
  Json two = report;
  two["envs"].push_back(drifting_report()["envs"][0]);
  two["envs"][1]["name"] = "planted";
  two["targets"][0]["checks"][0]["status"] = "error";
  EXPECT_EQ(gate_decision(report_from_json(two)).outcome, GateDecision::Outcome::drift);
  EXPECT_EQ(gate_decision(report_from_json(two)).why, "planted breaks kunlunxin");
  two["envs"][1]["verdict"] = "compliant";
  EXPECT_EQ(gate_decision(report_from_json(two)).why, "xpu210v, planted comply with kunlunxin");

  Json unjudged = drifting_report();
  unjudged["envs"][0]["verdict"] = "error";
  EXPECT_EQ(gate_decision(report_from_json(unjudged)).exit_code(), 2);
  EXPECT_EQ(gate_decision(report_from_json(unjudged)).why,
            "xpu210v could not be judged against kunlunxin");
  unjudged["envs"] = Json::array();
  EXPECT_EQ(gate_decision(report_from_json(unjudged)).why,
            "no env was found to judge against kunlunxin");
}

TEST(CiOutput, OneAnnotationPerCheckThatStopsTheJob) {
  const Json report = drifting_report();
  const auto decision = gate_decision(report_from_json(report));
  EXPECT_EQ(github_annotations(report_from_json(report), decision, ""),
            "::error title=envcontract%3A xpu210v%3A torch-contract::CUDA build of torch "
            "(2.10.0+cu129) where the contract requires a CPU build%0AWhat to do: install the "
            "CPU build of torch 2.10.0\n"
            "::warning title=envcontract%3A xpu210v%3A gpu-hint (advisory)::only a warning\n"
            "::warning title=envcontract%3A target ci%3A image could not be judged::the host's "
            "image reference could not be read%0AWhat to do: tell the agent where the image "
            "reference is\n");
  // The bypass first: GitHub shows a step's first annotations only.
  EXPECT_EQ(
      github_annotations(report_from_json(report), decision, "hotfix for #12, approved by ops"),
      "::warning title=envcontract gate bypassed::the job starts although xpu210v "
      "breaks kunlunxin: hotfix for #12, approved by ops\n" +
          github_annotations(report_from_json(report), decision, ""));
  Json compliant = report;
  compliant["envs"][0]["verdict"] = "compliant";
  EXPECT_EQ(github_annotations(report_from_json(compliant),
                               gate_decision(report_from_json(compliant)), ""),
            "::notice title=envcontract::xpu210v complies with kunlunxin\n"
            "::warning title=envcontract%3A target ci%3A image could not be judged::the host's "
            "image reference could not be read%0AWhat to do: tell the agent where the image "
            "reference is\n");
}

TEST(CiOutput, TheStepSummaryIsATableOfEachEnvsChecks) {
  const Json report = drifting_report();
  const std::string summary =
      markdown_summary(report_from_json(report), gate_decision(report_from_json(report)), "");
  EXPECT_EQ(
      summary,
      "### envcontract gate: stopped: the env breaks the contract\n\n"
      "xpu210v breaks kunlunxin\n\n"
      "Contract kunlunxin (\\/ws\\/\\.github\\/configs\\/kunlunxin\\.yml), host vm\n\n"
      "| target ci | status | cause | summary | what to do |\n"
      "|---|---|---|---|---|\n"
      "| image | error | image\\_unknown | the host\\'s image reference could not be read | "
      "tell the agent where the image reference is |\n\n"
      "**xpu210v**: drift (\\/ws\\/venvs\\/xpu210v)\n\n"
      "| check | status | cause | summary | what to do |\n"
      "|---|---|---|---|---|\n"
      "| torch\\-contract | fail | cuda\\_build | CUDA build of torch \\(2\\.10\\.0\\+cu129\\) "
      "where the contract requires a CPU build | install the CPU build of torch 2\\.10\\.0 |\n"
      "| python | pass |   |   |   |\n"
      "| gpu\\-hint | fail | x | only a warning |   |\n\n");
  EXPECT_TRUE(
      markdown_summary(report_from_json(report), gate_decision(report_from_json(report)), "hotfix")
          .starts_with("### envcontract gate: bypassed\n\nxpu210v breaks kunlunxin\n\n"
                       "Bypassed: hotfix\n\nContract kunlunxin"));
}

TEST(CiOutput, GitlabSectionsAreCollapsedWithTheirMarkers) {
  EXPECT_EQ(gitlab_section("envcontract_gate", "envcontract: checks", "table\n", 100, 102),
            "\033[0Ksection_start:100:envcontract_gate[collapsed=true]\r\033[0Kenvcontract: "
            "checks\ntable\n\033[0Ksection_end:102:envcontract_gate\r\033[0K\n");
}

}  // namespace
}  // namespace envcontract::report
