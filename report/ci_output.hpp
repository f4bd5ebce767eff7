#pragma once

#include <string>
#include <string_view>

#include "report/report.hpp"

// What a CI job shows of a gate's report (docs/ci.md): the decision, GitHub
// Actions' workflow commands and step summary, GitLab's collapsible section.
// Everything shown comes from the report, which already follows the
// reports' policy on secrets (docs/report.md): nothing else of an env is
// printed.
namespace envcontract::report {

// Whether the job may start on the env(s) a gate judged.
struct GateDecision {
  enum class Outcome { go, drift, unknown };
  Outcome outcome = Outcome::unknown;
  std::string why;  // one line: "xpu210v complies with kunlunxin", "..."

  // 0 go, 1 the env breaks the contract, 2 the agent cannot tell.
  int exit_code() const { return outcome == Outcome::go ? 0 : outcome == Outcome::drift ? 1 : 2; }
};

// "go", "drift", "unknown".
const char* to_string(GateDecision::Outcome outcome);

// The gate's rule: go when every env judged complies and no target (the
// job's image) is known to break the contract; drift when an env or a
// target breaks it; otherwise (no env, an env that could not be judged)
// unknown. A target that could not be judged (no image reference here) is
// shown, and does not stop the job: it is not about the env.
GateDecision gate_decision(const Report& report);

// One GitHub Actions workflow command per check that stops the job: `::error`
// for a failing required check (its summary and remedy), `::warning` for
// one that could not be judged, then a `::warning` per failing advisory
// check; `::notice` for a go. With `bypass` ("" for none) a job stopped by
// the gate starts anyway, and a warning, first, says so and why.
std::string github_annotations(const Report& report, const GateDecision& decision,
                               const std::string& bypass);

// Markdown for $GITHUB_STEP_SUMMARY: the decision, then a table of each
// judged env's checks and of the targets' checks.
std::string markdown_summary(const Report& report, const GateDecision& decision,
                             const std::string& bypass);

// `body` in a GitLab CI collapsible section named `name` whose header line is
// `header` (started and ended at the given Unix times).
std::string gitlab_section(const std::string& name, const std::string& header,
                           const std::string& body, long long started, long long ended);

// A token no env can guess: between `::stop-commands::TOKEN` and
// `::TOKEN::` the runner takes no line for a workflow command, so nothing
// an env's strings put in a table can become one.
std::string stop_commands_token();

// Workflow command escaping (the Actions toolkit's): a message's data, and a
// property's value (title=...), which also escapes ':' and ','.
std::string github_data(std::string_view text);
std::string github_property(std::string_view text);

// Text shown as itself in Markdown: every ASCII punctuation character
// backslash-escaped (CommonMark allows it for all of them), line breaks made
// spaces, so an env's strings can neither format nor break the table.
std::string markdown_text(std::string_view text);

}  // namespace envcontract::report
