#include "contracts/judgement.hpp"

#include <algorithm>

#include "common/time_text.hpp"
#include "contracts/check_kind.hpp"
#include "contracts/env_facts.hpp"
#include "contracts/judges.hpp"
#include "contracts/search_path_agreement.hpp"

namespace envcontract::contracts {

std::string to_string(CheckStatus status) {
  switch (status) {
    case CheckStatus::pass:
      return "pass";
    case CheckStatus::fail:
      return "fail";
    case CheckStatus::error:
      return "error";
    case CheckStatus::skip:
      return "skip";
    case CheckStatus::waived:
      break;
  }
  return "waived";
}

std::string to_string(EnvVerdict verdict) {
  switch (verdict) {
    case EnvVerdict::compliant:
      return "compliant";
    case EnvVerdict::drift:
      return "drift";
    case EnvVerdict::error:
      break;
  }
  return "error";
}

namespace judges {

void fail(CheckResult& result, std::string cause, std::string summary, Json evidence,
          std::string remedy) {
  result.status = CheckStatus::fail;
  result.diagnosis =
      Diagnosis{std::move(cause), std::move(summary), std::move(evidence), std::move(remedy)};
}

void not_gathered(CheckResult& result, const std::string& what) {
  result.status = CheckStatus::error;
  result.diagnosis = Diagnosis{"probe_error", what, Json::object(),
                               "scan with the agent and this contract (envcontractd scan)"};
}

void pass(CheckResult& result) {
  result.status = CheckStatus::pass;
  result.diagnosis.reset();
}

}  // namespace judges

namespace {

// The first line of the error a diagnosis was explained from: the loader's
// or the interpreter's own words, the same whichever check ran into them.
std::string error_line(const Diagnosis& diagnosis) {
  const auto error = diagnosis.evidence.find("error");
  if (error == diagnosis.evidence.end() || !error->is_string()) {
    return "";
  }
  const std::string& text = error->get_ref<const std::string&>();
  return text.substr(0, text.find('\n'));
}

// Consequences, not noise: once an `imports` check fails, a device or smoke
// check that failed with the very same error only repeats it. It becomes
// `skip`, naming the check to fix first. A check that failed on its own (an
// AttributeError in the snippet, a hang, a crash, a device count, another
// module's import) keeps its failure: hiding it would leave a second fault
// for after the first is fixed.
void skip_consequences(std::vector<CheckResult>& results) {
  const auto failed_import = std::find_if(results.begin(), results.end(), [](const auto& result) {
    return kind_traits(result.kind).is_import && result.status == CheckStatus::fail &&
           result.severity == Severity::required && result.diagnosis;
  });
  if (failed_import == results.end()) {
    return;
  }
  const std::string blocker = failed_import->id;
  const std::string blocker_summary = failed_import->diagnosis->summary;
  const std::string blocker_error = error_line(*failed_import->diagnosis);
  if (blocker_error.empty()) {
    return;
  }
  for (auto& result : results) {
    if (!kind_traits(result.kind).repeats_import_failure || result.status != CheckStatus::fail ||
        !result.diagnosis || error_line(*result.diagnosis) != blocker_error) {
      continue;
    }
    result.status = CheckStatus::skip;
    result.diagnosis =
        Diagnosis{"blocked",
                  "not judged: check " + blocker + " fails first (" + blocker_summary + ")",
                  {{"blocked_by", blocker}, {"own_failure", result.diagnosis->summary}},
                  "fix " + blocker + " first"};
  }
}

// A failing check with a waiver in force is `waived`; its diagnosis stays, so
// the report still says what is wrong. An expired waiver is only a note.
void apply_waivers(const Contract& contract, const std::string& env,
                   std::vector<CheckResult>& results, std::chrono::system_clock::time_point now) {
  const std::string today = common::rfc3339(now).substr(0, 10);
  for (auto& result : results) {
    if (result.status != CheckStatus::fail && result.status != CheckStatus::error) {
      continue;
    }
    for (const auto& waiver : contract.waivers) {
      if (waiver.check != result.id ||
          (!waiver.envs.empty() &&
           std::find(waiver.envs.begin(), waiver.envs.end(), env) == waiver.envs.end())) {
        continue;
      }
      const Json evidence = {{"reason", waiver.reason},
                             {"until", waiver.until.empty() ? Json(nullptr) : Json(waiver.until)},
                             {"waiver", waiver.origin.to_string()}};
      if (!waiver.until.empty() && today > waiver.until) {
        result.notes.push_back(Diagnosis{
            "waiver_expired", "the waiver expired on " + waiver.until + " (" + waiver.reason + ")",
            evidence, "fix the check, or renew the waiver in the contract"});
        continue;
      }
      result.status = CheckStatus::waived;
      result.notes.push_back(Diagnosis{
          "waived",
          "waived" + (waiver.until.empty() ? "" : " until " + waiver.until) + ": " + waiver.reason,
          evidence, ""});
      break;
    }
  }
}

// Checks whose facts come from running the env's code or its activation.
bool needs_env_code(const Check& check) {
  const auto* kind = find_check_kind(check.kind);
  return check.stage != ProbeStage::static_files || (kind != nullptr && runs_env_code(*kind));
}

// A check the env gets of its own (not one of the contract's): required,
// identified as "scope:name".
CheckResult own_check(std::string id, std::string kind, CheckStatus status) {
  CheckResult result;
  result.id = std::move(id);
  result.kind = std::move(kind);
  result.severity = Severity::required;
  result.status = status;
  return result;
}

// When none of the env's code may run (files that others could write, no
// user to run it as, imports not all checked, root outside a container's
// confinement), the env fails a check of its own naming the cause, and
// every check that needed its code points at it: never a pass, never a
// silent skip.
std::optional<CheckResult> code_refusal_check(const facts::EnvFacts& env_facts) {
  const auto& env = env_facts.env;
  // The env's facts say why, or the probes do when they held its imports to
  // the rule themselves (the scan's reading of them had failed).
  auto refusal = facts::code_refusal(env);
  if (!refusal && env_facts.dynamic) {
    refusal = env_facts.dynamic->refused;
  }
  if (!refusal) {
    return std::nullopt;
  }
  CheckResult result = own_check("env:code-safety", "env_safety", CheckStatus::fail);
  const std::string chmod_remedy =
      "only root and the env's user may be able to write what the env runs: remove the write "
      "bits (chmod go-w PATH) or give the path to its user (chown), then rescan";
  // Others' write access outweighs the rest: it is what someone must mend
  // first, whoever the env's code would run as.
  if (!env.unsafe.empty()) {
    const auto& first = env.unsafe.front();
    auto unsafe = Json::array();
    for (const auto& path : env.unsafe) {
      unsafe.push_back(to_json(path));
    }
    result.actual = unsafe;
    result.diagnosis = Diagnosis{
        "unsafe_permissions",
        first.path.string() + " is " + first.why + " (owner " + first.owner + ", group " +
            first.group + ", mode " + facts::mode_text(first.mode) + ")" +
            (unsafe.size() > 1 ? "; " + std::to_string(unsafe.size() - 1) + " more listed" : "") +
            ": none of this env's code was run",
        {{"unsafe", unsafe}},
        chmod_remedy};
    return result;
  }
  const std::string& why = refusal->text;
  switch (refusal->kind) {
    case facts::CodeRefusal::Kind::run_as_unavailable:
      result.diagnosis = Diagnosis{
          "run_as_unavailable",
          env.run_as.problem.empty() ? why
                                     : env.run_as.problem + ": none of this env's code was run",
          {{"run_as", to_json(env.run_as)}},
          "set run_root_envs_as in the agent's config to an existing unprivileged user"};
      break;
    case facts::CodeRefusal::Kind::unsafe_permissions:
      // Found by the probes' own check: the env's facts list no path.
      result.diagnosis = Diagnosis{"unsafe_permissions", why, {{"why", why}}, chmod_remedy};
      break;
    case facts::CodeRefusal::Kind::imports_unchecked: {
      const std::string& unchecked = env.imports_unchecked;
      const std::string& shown = unchecked.empty() ? why : unchecked;
      result.diagnosis = Diagnosis{
          "imports_unchecked",
          shown + (unchecked.empty() ? "" : ": none of this env's code was run"),
          {{"why", shown}},
          "see why the check could not finish (its notes in `envcontractd facts`); an env "
          "whose imports cannot all be checked is not run"};
      break;
    }
    case facts::CodeRefusal::Kind::unconfined_root:
      result.diagnosis = Diagnosis{
          "unconfined_root",
          why,
          {{"why", why},
           {"exec", env.exec.argv.empty() ? "" : env.exec.argv.front()},
           {"container", env.exec.target}},
          "reach the container through its runtime's own exec (exec: docker or podman), which "
          "keeps its confinement, or set run_root_envs_as to an unprivileged user "
          "(docs/containers.md)"};
      break;
  }
  return result;
}

// Files the agent refused to read (a FIFO, an oversized or absurdly long-lined
// file) and steps of gathering that failed leave the facts incomplete: the
// env gets an `error` check of its own naming them, so it is never
// compliant on what the agent could not see. Its other checks are judged on
// what was gathered: a missing package still fails.
std::optional<CheckResult> incomplete_facts_check(const facts::EnvFacts& env_facts) {
  if (env_facts.refused_files.empty() && env_facts.more_refused_files == 0 &&
      env_facts.errors.empty()) {
    return std::nullopt;
  }
  const Json refused = facts::refused_files_json(env_facts);
  auto errors = Json::array();
  for (const auto& error : env_facts.errors) {
    errors.push_back(to_json(error));
  }
  CheckResult result = own_check("env:facts", "env_facts", CheckStatus::error);
  result.actual = {{"refused_files", refused}, {"fact_errors", errors}};
  const auto more = [](const Json& items) {
    return items.size() > 1 ? "; " + std::to_string(items.size() - 1) + " more listed" : "";
  };
  if (!refused.empty()) {
    const Json& first = refused.front();
    result.diagnosis = Diagnosis{
        "unreadable_file",
        first["path"].get<std::string>() + " " + first["problem"].get<std::string>() +
            more(refused) + ": the facts that depend on it are unknown",
        {{"refused_files", refused}},
        "the agent reads only regular files within size limits (docs/reliability.md): "
        "replace the file with what its package installed (reinstall the package) or remove "
        "it, then rescan"};
  } else if (const auto stalled = std::find_if(
                 env_facts.errors.begin(), env_facts.errors.end(),
                 [](const facts::FactError& error) { return error.stall.has_value(); });
             stalled != env_facts.errors.end()) {
    const std::string& path = stalled->stall->last_path;
    result.diagnosis = Diagnosis{
        "stalled_read",
        stalled->message,
        {{"fact_errors", errors}},
        "find what serves " + (path.empty() ? std::string("the env's files") : path) +
            " (findmnt -T PATH) and mend or unmount it (umount -l; fusermount -u for a user's "
            "FUSE mount); the env is read again once its blocked reader returns"};
  } else {
    const auto& first = env_facts.errors.front();
    result.diagnosis = Diagnosis{
        "facts_error",
        (first.stage == facts::FactError::Stage::reading
             ? std::string("reading the env failed: ")
             : "gathering " + facts::to_string(first.stage) + " failed: ") +
            first.message + more(errors),
        {{"fact_errors", errors}},
        "rescan; if it persists, report it with the agent's log (this is the agent's fault, "
        "not the env's)"};
  }
  return result;
}

// An env whose activation failed (its scripts exited with an error, ran out
// of time, or could not be run) has facts gathered under its bare
// environment in place of the activated one: what activation would give its
// processes is unknown, so the env gets an `error` check of its own and is
// never compliant on facts of the wrong environment. Not when its code was
// refused (that check says why nothing ran), nor when the agent's own
// gathering failed (env:facts says so).
std::optional<CheckResult> activation_check(const facts::EnvFacts& env_facts, bool refused) {
  const std::string& problem = env_facts.activation.problem;
  if (problem.empty() || refused) {
    return std::nullopt;
  }
  CheckResult result = own_check("env:activation", "env_activation", CheckStatus::error);
  result.actual = {{"problem", problem}};
  result.diagnosis = Diagnosis{
      "activation_failed",
      "the env's activation failed (" + problem +
          "): what the activated env gives its processes is unknown, and its facts were "
          "gathered without it",
      {{"problem", problem}, {"scripts", Json::array()}},
      "activate it by hand (conda activate, or source bin/activate) and fix what fails in its "
      "activation scripts; the agent's facts verb shows their output"};
  auto& scripts = result.diagnosis->evidence["scripts"];
  for (const auto& script : env_facts.activation.scripts) {
    scripts.push_back(script.string());
  }
  return result;
}

// An env that is broken as an env (its interpreter is missing, a dangling
// link, or cannot start at all; its prefix unreadable by its user) fails one check naming the path
// and what is wrong, and every other check points at it: "torch is not installed" would send its
// owner looking for the wrong thing.
std::optional<CheckResult> broken_env_check(const EnvFactsView& facts) {
  const auto& env = facts.facts().env;
  std::string summary;
  std::string remedy =
      "recreate the env (its interpreter is gone or cannot run), or remove it (conda env remove "
      "-p PREFIX, or rm -r the venv)";
  Json evidence = {{"python", env.python.string()}};
  // An env its user cannot read is not known to be broken: nothing of it is
  // known at all. It is not judged (error), never called drift.
  bool unknown = false;
  // Discovery's problems with the interpreter itself (an unknown version
  // leaves the interpreter usable); the first one says what is wrong.
  using Problem = facts::EnvProblem::Kind;
  const auto broken = std::find_if(env.problems.begin(), env.problems.end(), [](const auto& p) {
    return p.kind != Problem::unknown_version;
  });
  if (broken != env.problems.end()) {
    summary = broken->text;
    evidence["problems"] = facts::problem_texts(env.problems);
    if (broken->kind == Problem::user_mount) {
      remedy =
          "move the env off the mount, or unmount it (fusermount -u, as the user who mounted "
          "it): the agent judges no env that holds a filesystem served by a user's process";
    } else if (broken->kind == Problem::unreadable) {
      summary += ": nothing of it is known, and it is not judged";
      unknown = true;
      remedy = env.run_as.for_root_owned_env
                   ? "let " + env.run_as.who() +
                         " pass the directories above it (chmod o+x) and read it (chmod "
                         "o+rX), or set run_root_envs_as to a user who may (docs/security.md); "
                         "or remove the env"
                   : "let " + env.run_as.who() +
                         " read it (chmod u+rX, and o+x on the directories above it), or chown "
                         "it to the user who uses it; or remove the env";
    }
  }
  // The env's interpreter as the first Python stage ran it (identity when a
  // check needs torch; otherwise the first check's own).
  const facts::StageResult* identity = nullptr;
  if (summary.empty() && facts.has_dynamic_facts()) {
    for (const auto& stage : facts.facts().dynamic->stages) {
      if (stage.activation == facts::Activation::activated &&
          !stage.stage.starts_with(facts::stage_names::command(""))) {
        identity = &stage;
        break;
      }
    }
  }
  if (identity != nullptr && identity->status == facts::StageStatus::probe_error) {
    // The interpreter did not run at all: the file is not an executable
    // (exec said so), or the loader stopped it before Python began (a
    // missing libpython: exit 127). The agent's own failures to start a
    // process ("envcontract: ...") and a refused exec (permissions) are not
    // the env's, and stay probe errors.
    const std::string& errors = identity->stderr_tail;
    const std::string& stage_summary = identity->summary;
    const bool loader_stopped =
        identity->end.exited_with(127) ||
        errors.find("error while loading shared libraries") != std::string::npos;
    const bool not_executable =
        identity->exec_failure == facts::StageResult::ExecFailure::missing ||
        identity->exec_failure == facts::StageResult::ExecFailure::not_executable;
    if (!errors.starts_with("envcontract: ") && (loader_stopped || not_executable)) {
      const std::string first = errors.substr(0, errors.find('\n'));
      summary = env.python.string() + " cannot start: " + (first.empty() ? stage_summary : first);
      evidence["process"] = identity->process;
      evidence["stderr_tail"] = errors;
    }
  }
  if (summary.empty()) {
    return std::nullopt;
  }
  CheckResult result = own_check("env:interpreter", "env_interpreter",
                                 unknown ? CheckStatus::error : CheckStatus::fail);
  result.actual = evidence;
  result.diagnosis =
      Diagnosis{unknown ? "unreadable_env" : "broken_env", summary, evidence, remedy};
  return result;
}

// Never compliant without evidence: a check skipped because torch does not
// import points at a failing check of the same env. A failing `imports`
// check of the contract is that check; otherwise the env gets one of its
// own, `import:torch`, with the whole diagnosis (the signal and stderr tail
// of a crash, the threads of a hang, the missing library or symbol).
void explain_blocked_skips(const EnvFactsView& facts, std::vector<CheckResult>& results) {
  std::vector<std::size_t> unexplained;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& result = results[i];
    if (result.status == CheckStatus::skip && result.diagnosis &&
        result.diagnosis->cause == "blocked" &&
        !result.diagnosis->evidence.contains("blocked_by")) {
      unexplained.push_back(i);
    }
  }
  if (unexplained.empty()) {
    return;
  }
  std::optional<CheckResult> own;
  std::string blocker;
  std::string blocker_summary;
  // Only a required check can stand for the failure: an advisory one does
  // not make the env drift, and would let it pass on a torch that fails.
  const auto failing_import = std::find_if(results.begin(), results.end(), [](const auto& result) {
    return kind_traits(result.kind).is_import && result.status == CheckStatus::fail &&
           result.severity == Severity::required && result.diagnosis;
  });
  if (failing_import != results.end()) {
    blocker = failing_import->id;
    blocker_summary = failing_import->diagnosis->summary;
  } else {
    const auto* identity = facts.stage(facts::stage_names::identity);
    if (identity == nullptr || identity->status == facts::StageStatus::ok) {
      return;  // skipped for another reason, which its summary gives
    }
    own = own_check("import:torch", "imports", CheckStatus::fail);
    own->expected = {{"modules", {"torch"}}};
    own->actual = {{"stage", to_string(identity->status)}, {"summary", identity->summary}};
    own->diagnosis = judges::torch_import_failure(facts, *identity, own->status);
    blocker = own->id;
    blocker_summary = own->diagnosis->summary;
  }
  for (const auto index : unexplained) {
    auto& result = results[index];
    result.diagnosis =
        Diagnosis{"blocked",
                  "not judged: check " + blocker + " fails first (" + blocker_summary + ")",
                  {{"blocked_by", blocker}, {"own_failure", result.diagnosis->summary}},
                  "fix " + blocker + " first"};
  }
  if (own) {
    // First among the checks: it is the env's root failure.
    const auto first_contract_check =
        std::find_if(results.begin(), results.end(),
                     [](const auto& result) { return result.id.find(':') == std::string::npos; });
    results.insert(first_contract_check, std::move(*own));
  }
}

// A judge that throws fails its own check, never the env's other checks.
void judge_contained(const CheckKind& kind, const Check& check, const EnvFactsView& facts,
                     CheckResult& result) {
  try {
    kind.judge(check, facts, result);
  } catch (const std::exception& e) {
    result.status = CheckStatus::error;
    result.diagnosis = Diagnosis{
        "judge_error", "judging this check failed: " + std::string(e.what()), Json::object(),
        "report it with the env's facts (envcontractd facts --json): "
        "this is the agent's fault, not the env's"};
  }
}

}  // namespace

EnvJudgement judge_env(const Contract& contract, const facts::EnvFacts& env_facts,
                       std::chrono::system_clock::time_point now) {
  const EnvFactsView facts(env_facts);
  EnvJudgement judgement;
  bool failed = false;
  bool errored = false;
  const auto incomplete = incomplete_facts_check(env_facts);
  // An env whose reading blocked, or failed, has no facts to judge: every
  // check points at why (its code is refused too, but that is the cause).
  const bool unread =
      incomplete && (incomplete->diagnosis->cause == "stalled_read" ||
                     std::any_of(env_facts.errors.begin(), env_facts.errors.end(),
                                 [](const facts::FactError& error) {
                                   return error.stage == facts::FactError::Stage::reading;
                                 }));
  const auto refusal = unread ? std::nullopt : code_refusal_check(env_facts);
  if (refusal) {
    judgement.checks.push_back(*refusal);
  }
  if (incomplete) {
    judgement.checks.push_back(*incomplete);
  }
  if (const auto activation = unread ? std::nullopt : activation_check(env_facts, bool(refusal))) {
    judgement.checks.push_back(*activation);
  }
  const auto broken = broken_env_check(facts);
  if (broken) {
    judgement.checks.push_back(*broken);
  } else if (auto disagreement = search_path_agreement(facts)) {
    judgement.checks.push_back(std::move(*disagreement));
  }
  for (const auto& check : contract.checks) {
    CheckResult result;
    result.id = check.id;
    result.kind = check.kind;
    result.severity = check.severity;
    result.expected = to_json(check.params);
    // A broken env blocks every check; an env whose code may not run blocks
    // those that need its code.
    const CheckResult* blocker = broken                             ? &*broken
                                 : unread                           ? &*incomplete
                                 : refusal && needs_env_code(check) ? &*refusal
                                                                    : nullptr;
    if (blocker != nullptr) {
      result.status = CheckStatus::skip;
      result.diagnosis = Diagnosis{
          "blocked",
          "not judged: check " + blocker->id + " fails first (" + blocker->diagnosis->summary + ")",
          {{"blocked_by", blocker->id}},
          "fix " + blocker->id + " first"};
      judgement.checks.push_back(std::move(result));
      continue;
    }
    // Every kind of the registry has a judge (tested); an unknown kind can
    // only come from a contract built in code, not from a loaded file.
    if (const CheckKind* kind = find_check_kind(check.kind)) {
      judge_contained(*kind, check, facts, result);
    } else {
      result.status = CheckStatus::error;
      result.diagnosis = Diagnosis{"unknown_kind", "unknown check kind '" + check.kind + "'",
                                   Json::object(), "see docs/contracts.md for the kinds"};
    }
    judgement.checks.push_back(std::move(result));
  }
  explain_blocked_skips(facts, judgement.checks);
  skip_consequences(judgement.checks);
  apply_waivers(contract, env_facts.env.name, judgement.checks, now);
  for (const auto& result : judgement.checks) {
    if (result.severity == Severity::required) {
      failed = failed || result.status == CheckStatus::fail;
      errored = errored || result.status == CheckStatus::error;
    }
  }
  judgement.verdict = failed    ? EnvVerdict::drift
                      : errored ? EnvVerdict::error
                                : EnvVerdict::compliant;
  return judgement;
}

namespace {

Json diagnosis_json(const Diagnosis& diagnosis) {
  return {{"cause", diagnosis.cause},
          {"summary", diagnosis.summary},
          {"evidence", diagnosis.evidence},
          {"remedy", diagnosis.remedy}};
}

}  // namespace

Json to_json(const CheckResult& result) {
  Json json = {{"id", result.id},
               {"kind", result.kind},
               {"severity", to_string(result.severity)},
               {"status", to_string(result.status)},
               {"expected", result.expected},
               {"actual", result.actual}};
  json["diagnosis"] = result.diagnosis ? diagnosis_json(*result.diagnosis) : Json(nullptr);
  auto notes = Json::array();
  for (const auto& note : result.notes) {
    notes.push_back(diagnosis_json(note));
  }
  json["notes"] = notes;
  return json;
}

Json to_json(const EnvJudgement& judgement) {
  auto checks = Json::array();
  for (const auto& check : judgement.checks) {
    checks.push_back(to_json(check));
  }
  return {{"verdict", to_string(judgement.verdict)}, {"checks", checks}};
}

}  // namespace envcontract::contracts
