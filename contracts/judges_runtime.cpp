// Judges of what happened when env code ran: imports, device counts, smoke
// snippets. A failure is explained from the linkage facts when they know why.
#include <algorithm>
#include <set>

#include "common/json_text.hpp"
#include "contracts/integration_tests.hpp"
#include "contracts/judges.hpp"
#include "contracts/output_pattern.hpp"
#include "contracts/values.hpp"

namespace envcontract::contracts::judges {
namespace {

namespace stage_names = facts::stage_names;

const std::string k_not_found = ": cannot open shared object file";
const std::string k_undefined = "undefined symbol: ";

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

using facts::Activation;

// The linkage facts' entry for a missing library, with who needs it.
const facts::MissingLibrary* missing_library_evidence(const EnvFactsView& facts,
                                                      const std::string& name,
                                                      Activation activation) {
  for (const auto& library : facts.libraries(activation)) {
    for (const auto& missing : library.missing) {
      if (missing.name == name) {
        return &missing;
      }
    }
  }
  return nullptr;
}

const facts::UnresolvedSymbol* unresolved_evidence(const EnvFactsView& facts,
                                                   const std::string& symbol,
                                                   Activation activation) {
  for (const auto& library : facts.libraries(activation)) {
    for (const auto& unresolved : library.symbols.unresolved) {
      if (unresolved.mangled == symbol) {
        return &unresolved;
      }
    }
  }
  return nullptr;
}

// The symbol a loader error cannot bind: "undefined symbol: NAME" (glibc
// adds ", version V" for a versioned reference) or "symbol NAME version V not
// defined in file F with link time reference" (the version node exists, the
// symbol is not in it).
std::optional<std::string> unbound_symbol(const std::string& text) {
  if (const auto at = text.find(k_undefined); at != std::string::npos) {
    const std::string symbol = text.substr(at + k_undefined.size());
    return symbol.substr(0, symbol.find(", version "));
  }
  const std::string marker = "with link time reference";
  // "PATH: symbol NAME version ...": the last "symbol " before " version ".
  const auto version = text.rfind(" version ", text.find(marker));
  const auto start = version == std::string::npos ? version : text.rfind("symbol ", version);
  if (text.find(marker) != std::string::npos && start != std::string::npos) {
    const auto name = start + 7;
    const auto end = text.find(' ', name);
    return end == std::string::npos ? std::nullopt
                                    : std::optional<std::string>(text.substr(name, end - name));
  }
  return std::nullopt;
}

std::string file_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

// The loader names only the first symbol it cannot bind; the linkage facts
// know every one. The others needed by the same library, and its missing
// version nodes, join the diagnosis, so that fixing the first does not
// uncover the next one by one.
void add_other_unresolved(const EnvFactsView& facts, const facts::UnresolvedSymbol& unbound,
                          Activation activation, Diagnosis& diagnosis) {
  constexpr std::size_t k_listed = 50;
  const auto& needed_by = unbound.needed_by;
  if (needed_by.empty()) {
    return;
  }
  // From the one library entry whose closure the loader's symbol belongs
  // to: other entries resolve in other closures.
  const facts::LibraryLinkage* entry = nullptr;
  for (const auto& library : facts.libraries(activation)) {
    for (const auto& unresolved : library.symbols.unresolved) {
      if (entry == nullptr && unresolved.mangled == unbound.mangled &&
          unresolved.needed_by == needed_by) {
        entry = &library;
      }
    }
  }
  if (entry == nullptr) {
    return;
  }
  auto others = Json::array();
  std::vector<std::string> names_listed;
  std::set<std::string> seen;
  std::size_t count = 0;
  for (const auto& unresolved : entry->symbols.unresolved) {
    const std::string key = unresolved.mangled + "@" + unresolved.version;
    if (unresolved.needed_by != needed_by || unresolved.mangled == unbound.mangled ||
        !seen.insert(key).second) {
      continue;
    }
    ++count;
    if (others.size() < k_listed) {
      others.push_back(to_json(unresolved));
      names_listed.push_back(unresolved.demangled);
    }
  }
  auto versions = Json::array();
  for (const auto& version : entry->symbols.missing_versions) {
    if (version.needed_by == needed_by && versions.size() < k_listed) {
      versions.push_back(to_json(version));
    }
  }
  if (count > 0) {
    std::string names;
    for (std::size_t i = 0; i < names_listed.size() && i < 3; ++i) {
      names += (i == 0 ? "" : ", ") + names_listed[i];
    }
    diagnosis.summary += "; " + file_name(needed_by.string()) + " also needs " +
                         std::to_string(count) + " more that nothing defines: " + names +
                         (count > 3 ? ", ..." : "");
    diagnosis.evidence["also_unresolved"] = others;
  }
  if (!versions.empty()) {
    diagnosis.evidence["missing_versions"] = versions;
  }
}

// torch's own libraries (libtorch*.so, libc10*.so, or anything under a
// torch/lib directory): a near miss against one of them is a build made
// for another torch.
bool is_torchs_own(const std::string& library_path) {
  const std::string name = file_name(library_path);
  return name.starts_with("libtorch") || name.starts_with("libc10") ||
         library_path.find("/torch/lib/") != std::string::npos;
}

// What the two libraries of a near miss must agree on: torch, when the
// defining one is torch's; otherwise the defining library itself (a vendor
// runtime), whose interface `wanted` the other was built against.
std::string near_miss_remedy(const std::string& wanting, const std::string& defining,
                             const std::string& defining_path, const std::string& wanted) {
  if (is_torchs_own(defining_path)) {
    return "use builds of " + wanting + " and " + defining + " made against the same torch";
  }
  return "use a build of " + wanting + " made against this " + defining + ", or the " + defining +
         " it was built against: they disagree on " + wanted;
}

// `library` cannot be found (the loader said so in `error`): who needs it,
// from the linkage facts.
Diagnosis missing_library_diagnosis(const std::string& subject, const std::string& library,
                                    const std::string& error, const EnvFactsView& facts,
                                    Activation activation) {
  Diagnosis diagnosis{"missing_library",
                      subject + " fails: " + library + " cannot be found",
                      {{"error", error}},
                      ""};
  if (const auto* evidence = missing_library_evidence(facts, library, activation)) {
    diagnosis.summary += " (needed by " + file_name(evidence->needed_by.string()) + ")";
    diagnosis.evidence["missing"] = to_json(*evidence);
    if (!evidence->other_versions.empty()) {
      diagnosis.summary +=
          "; a different version exists: " + evidence->other_versions.front().string();
    }
  }
  diagnosis.remedy = "install the package that provides " + library +
                     ", or put its directory on LD_LIBRARY_PATH in the env's activate.d";
  return diagnosis;
}

// `symbol` (mangled) cannot be bound (the loader said so in `error`): a near
// miss with both signatures, or a symbol nothing defines, from the linkage
// facts.
Diagnosis unbound_symbol_diagnosis(const std::string& subject, const std::string& symbol,
                                   const std::string& error, const EnvFactsView& facts,
                                   Activation activation) {
  const auto* evidence = unresolved_evidence(facts, symbol, activation);
  if (evidence != nullptr && !evidence->near_misses.empty()) {
    const auto& near = evidence->near_misses.front();
    std::string differences;
    for (const auto& difference : near.differences) {
      differences += (differences.empty() ? "" : "; ") + difference;
    }
    const std::string wanting = file_name(evidence->needed_by.string());
    const std::string defining = file_name(near.library.string());
    Diagnosis mismatch{
        "abi_signature_mismatch",
        wanting + " wants " + evidence->demangled + " but " + defining + " defines " +
            near.demangled + " (" + differences + ")",
        to_json(*evidence),
        near_miss_remedy(wanting, defining, near.library.string(), evidence->demangled)};
    mismatch.evidence["error"] = error;
    add_other_unresolved(facts, *evidence, activation, mismatch);
    return mismatch;
  }
  Diagnosis diagnosis{"undefined_symbol",
                      subject + " fails: undefined symbol " + symbol,
                      {{"error", error}},
                      "install the builds made for this torch version"};
  if (evidence != nullptr) {
    diagnosis.summary = file_name(evidence->needed_by.string()) + " needs " + evidence->demangled +
                        ", which nothing it loads defines";
    diagnosis.evidence = to_json(*evidence);
    diagnosis.evidence["error"] = error;
    add_other_unresolved(facts, *evidence, activation, diagnosis);
  }
  return diagnosis;
}

// Why an import (or a snippet) raised, from its error text (Python's words,
// parsed only here) and the linkage facts.
Diagnosis explain_error(const std::string& subject, const std::string& error_type,
                        const std::string& error, const EnvFactsView& facts,
                        Activation activation) {
  const std::string text = first_line(error);
  if (const auto at = text.find(k_not_found); at != std::string::npos) {
    return missing_library_diagnosis(subject, file_name(text.substr(0, at)), text, facts,
                                     activation);
  }
  if (const auto unbound = unbound_symbol(text)) {
    return unbound_symbol_diagnosis(subject, *unbound, text, facts, activation);
  }
  return {"import_error",
          subject + " fails: " + error_type + ": " + text,
          {{"error", error}},
          "fix the import error above in this env"};
}

// A stage that did not finish: hang, crash or a probe error.
std::optional<Diagnosis> unfinished_stage(const facts::StageResult& stage) {
  using facts::StageStatus;
  const StageStatus status = stage.status;
  const std::string& summary = stage.summary;
  if (status == StageStatus::hung) {
    return Diagnosis{"hang", summary, stage.hang ? to_json(*stage.hang) : Json(nullptr),
                     "the operation never completes: check the vendor runtime and driver versions; "
                     "the native stack shows where it waits"};
  }
  if (status == StageStatus::crashed && stage.end.exited()) {
    // No signal, no exception: the env's code ended its own process (a
    // library's constructor calling exit(), os._exit in a module) while the
    // step it was in ran.
    const std::string& step = stage.interrupted_step;
    return Diagnosis{
        "ended_process",
        summary,
        {{"step", step},
         {"process", stage.process},
         {"stdout_tail", stage.stdout_tail},
         {"stderr_tail", stage.stderr_tail}},
        "code the env runs during " + step + " ends the process without an error: " +
            (step.starts_with("import ")
                 ? "in the activated env, python -X importtime -c '" + step +
                       "' names the last module it reached, and LD_DEBUG=libs the last "
                       "library loaded; "
                 : "") +
            "fix or remove the module or library that exits"};
  }
  if (status == StageStatus::crashed) {
    return Diagnosis{"crash",
                     summary,
                     {{"process", stage.process}, {"stderr_tail", stage.stderr_tail}},
                     "the process died in the env's own code; the stderr tail shows where"};
  }
  if (status == StageStatus::probe_error) {
    return Diagnosis{"probe_error", summary, Json::object(),
                     "the probe could not report; see the agent's log"};
  }
  if (status == StageStatus::stopped) {
    // What it was doing when stopped, if it was sampled: the time-out it
    // ran out of was the env's, so the stacks may show why it was slow.
    return Diagnosis{"stopped", summary, stage.hang ? to_json(*stage.hang) : Json::object(),
                     "the env's probes ran out of the time the agent gives them: raise "
                     "env_deadline or scan_deadline in the agent's config, or find what makes "
                     "this env slow (docs/reliability.md)"};
  }
  return std::nullopt;
}

}  // namespace

Diagnosis torch_import_failure(const EnvFactsView& facts, const facts::StageResult& identity,
                               CheckStatus& status) {
  status = CheckStatus::fail;
  if (auto unfinished = unfinished_stage(identity)) {
    if (unfinished->cause == "probe_error" || unfinished->cause == "stopped") {
      status = CheckStatus::error;
    }
    return *unfinished;
  }
  for (const auto& record : identity.records) {
    if (record.type == "import" && record.module == "torch" && !record.ok) {
      return explain_error("import torch", record.error_type, record.error, facts,
                           identity.activation);
    }
  }
  return Diagnosis{"import_error", identity.summary, Json::object(),
                   "make torch import in this env: run python -c 'import torch' in it"};
}

namespace {

// Finds the stage, or marks the result as not judgeable.
const facts::StageResult* require_stage(const EnvFactsView& facts, std::string_view name,
                                        CheckResult& result) {
  const facts::StageResult* stage = facts.stage(name);
  if (stage == nullptr) {
    result.status = CheckStatus::error;
    result.diagnosis =
        Diagnosis{"probe_error",
                  facts.has_dynamic_facts() ? "the " + std::string(name) + " stage did not run"
                                            : "dynamic probes did not run",
                  Json::object(), "run the dynamic probes (envcontractd probe)"};
    return nullptr;
  }
  if (stage->status == facts::StageStatus::skipped) {
    result.status = CheckStatus::skip;
    result.diagnosis = Diagnosis{"blocked", stage->summary, Json::object(),
                                 "fix the failures that keep torch from importing first"};
    return nullptr;
  }
  if (auto problem = unfinished_stage(*stage)) {
    result.status = problem->cause == "probe_error" || problem->cause == "stopped"
                        ? CheckStatus::error
                        : CheckStatus::fail;
    result.diagnosis = std::move(*problem);
    return nullptr;
  }
  return stage;
}

}  // namespace

std::vector<Diagnosis> linkage_problems_under(const EnvFactsView& facts,
                                              const std::string& directory) {
  std::vector<Diagnosis> problems;
  for (const auto& library : facts.libraries()) {
    const std::string path = library.path.string();
    if (!path.starts_with(directory + "/")) {
      continue;
    }
    // From the facts themselves; the error evidence in the words the
    // loader would use.
    const std::string subject = "loading " + file_name(path);
    if (!library.missing.empty()) {
      const std::string& missing = library.missing.front().name;
      problems.push_back(missing_library_diagnosis(
          subject, file_name(missing), missing + k_not_found, facts, Activation::activated));
    } else if (!library.symbols.unresolved.empty()) {
      const std::string& symbol = library.symbols.unresolved.front().mangled;
      problems.push_back(unbound_symbol_diagnosis(subject, symbol, k_undefined + symbol, facts,
                                                  Activation::activated));
    }
  }
  return problems;
}

void imports(const Check&, const ImportsParams& params, const EnvFactsView& facts,
             CheckResult& result) {
  if (const auto* artifact = facts.activation_artifact(stage_names::imports)) {
    result.notes.push_back({"activation_required", artifact->summary, to_json(*artifact),
                            "run this env activated (conda activate), as its users do"});
  }
  const auto* stage = require_stage(facts, stage_names::imports, result);
  if (stage == nullptr) {
    return;
  }
  Json actual = Json::object();
  for (const auto& name : params.modules) {
    const auto* record = find_record(*stage, "import", name);
    if (record == nullptr) {
      result.status = CheckStatus::error;
      result.diagnosis =
          Diagnosis{"probe_error", "no import of " + name + " was recorded", Json::object(), ""};
      return;
    }
    actual[name] = record->ok;
    for (const auto& warning : record->warnings) {
      if (warning.find(k_undefined) != std::string::npos) {
        result.notes.push_back(explain_error("import " + name + " (warning only)", "Warning",
                                             warning, facts, Activation::activated));
      }
    }
    if (!record->ok) {
      result.actual = actual;
      result.status = CheckStatus::fail;
      result.diagnosis = explain_error("import " + name, record->error_type, record->error, facts,
                                       Activation::activated);
      return;
    }
  }
  result.actual = actual;
  pass(result);
}

void devices(const Check& check, const DevicesParams& params, const EnvFactsView& facts,
             CheckResult& result) {
  const auto* stage = require_stage(facts, stage_names::devices(check.id), result);
  if (stage == nullptr) {
    return;
  }
  for (const auto& record : stage->records) {
    if (record.type == "import" && !record.ok) {
      result.status = CheckStatus::fail;
      result.diagnosis = explain_error("import " + record.module, record.error_type, record.error,
                                       facts, Activation::activated);
      return;
    }
  }
  const auto* record = find_record(*stage, "devices");
  const std::optional<std::int64_t> count = record ? record->value : std::nullopt;
  const Json value = count ? Json(*count) : Json(nullptr);
  result.actual = value;
  if (!count) {
    result.status = CheckStatus::fail;
    result.diagnosis =
        explain_error(params.expression, record ? record->error_type : "",
                      record ? record->error : "no value", facts, Activation::activated);
    return;
  }
  const Comparison& comparison = params.count;
  if (!comparison.holds_for(*count)) {
    fail(result, "too_few_devices",
         params.expression + " is " + common::json_text(value) + ", the contract wants " +
             comparison.op + " " + std::to_string(comparison.value),
         {{"expression", params.expression}, {"value", value}},
         "check that the devices are visible to this env (driver, device nodes, *_VISIBLE_DEVICES) "
         "and that its torch_fl is the build for this platform");
    return;
  }
  pass(result);
}

void smoke(const Check& check, const SmokeParams& params, const EnvFactsView& facts,
           CheckResult& result) {
  const auto* stage = require_stage(facts, stage_names::smoke(check.id), result);
  if (stage == nullptr) {
    return;
  }
  const auto* record = find_record(*stage, "smoke");
  if (record == nullptr) {
    result.status = CheckStatus::error;
    result.diagnosis = Diagnosis{"probe_error", "the snippet left no record", Json::object(), ""};
    return;
  }
  const std::string& output = record->output;
  result.actual = {{"output", output}};
  if (!record->ok) {
    result.status = CheckStatus::fail;
    result.diagnosis = explain_error("the snippet", record->error_type, record->error, facts,
                                     Activation::activated);
    if (result.diagnosis->cause == "import_error") {
      result.diagnosis->cause = "smoke_failed";
    }
    return;
  }
  const std::string& pattern = params.expect_output;
  if (!pattern.empty() && !output_matches(output, pattern)) {
    fail(result, "smoke_failed",
         "the snippet printed " + common::json_text(first_line(output)) +
             ", which does not match " + pattern,
         {{"output", output}}, "see what the snippet printed");
    return;
  }
  pass(result);
}

namespace {

// Judges a command stage's exit status and output; `what` names the command
// in summaries ("`xpu-smi -L`", "integration test preflight-devices").
void judge_command_stage(const Check& check, const EnvFactsView& facts, const std::string& what,
                         int expect_exit, const std::string& pattern, const std::string& cause,
                         CheckResult& result) {
  const auto* stage = require_stage(facts, stage_names::command(check.id), result);
  if (stage == nullptr) {
    return;
  }
  const auto* record = find_record(*stage, "command");
  if (record == nullptr || !record->exit_code) {
    result.status = CheckStatus::error;
    result.diagnosis = Diagnosis{"probe_error", what + " left no exit status", Json::object(), ""};
    return;
  }
  const int exit_code = *record->exit_code;
  const std::string& output = record->output;
  const std::string& errors = stage->stderr_tail;
  result.actual = {{"exit_code", exit_code}, {"output", output}};
  const Json evidence = {{"run", record->run},
                         {"exit_code", exit_code},
                         {"stdout", stage->stdout_tail},
                         {"stderr", errors}};
  if (exit_code != expect_exit) {
    const std::string why = first_line(errors.empty() ? output : errors);
    fail(result, cause,
         what + " exited " + std::to_string(exit_code) + " (wanted " + std::to_string(expect_exit) +
             ")" + (why.empty() ? "" : ": " + why),
         evidence, "run it by hand in the activated env to see why: " + record->run);
    return;
  }
  if (!pattern.empty() && !output_matches(output, pattern)) {
    fail(result, cause,
         what + " printed " + common::json_text(first_line(output)) + ", which does not match " +
             pattern,
         evidence, "see what it printed");
    return;
  }
  pass(result);
}

}  // namespace

void command(const Check& check, const CommandParams& params, const EnvFactsView& facts,
             CheckResult& result) {
  judge_command_stage(check, facts, "`" + first_line(params.run) + "`", params.expect_exit,
                      params.expect_output, "command_failed", result);
}

void integration_test(const Check& check, const IntegrationTestParams& params,
                      const EnvFactsView& facts, CheckResult& result) {
  if (!params.needs_checkout.empty()) {
    result.status = CheckStatus::skip;
    result.diagnosis = Diagnosis{
        "needs_checkout",
        "not run: " + params.needs_checkout,
        {{"from", params.from}},
        "point the agent at a checkout of the repository (checkout in its config, --checkout), "
        "or leave this test to CI"};
    return;
  }
  if (params.workdir.empty()) {
    if (const auto paths = repository_paths(params.entry.command); !paths.empty()) {
      // Never a false drift: CI runs it in a checkout, which this host lacks.
      result.status = CheckStatus::skip;
      result.diagnosis = Diagnosis{
          "needs_checkout",
          "not run: it uses paths of the repository (" + paths.front() +
              "), and no checkout of it is configured",
          {{"paths", paths}},
          "give the integration_test check a 'workdir' naming a checkout of the repository, or "
          "leave it to CI"};
      return;
    }
  }
  if (const auto* stage = facts.stage(stage_names::command(check.id))) {
    if (const auto* stop = find_record(*stage, stage_names::fail_fast_stop)) {
      // The failing entry is a check of this env, so the env drifts on it.
      const std::string& blocker = stop->blocked_by;
      result.status = CheckStatus::skip;
      result.diagnosis = Diagnosis{
          "blocked",
          stage->summary,
          {{"blocked_by", blocker}},
          "fix " + blocker + " first; the CI runner runs nothing after a fail-fast failure"};
      return;
    }
  }
  judge_command_stage(check, facts,
                      "integration test " + (params.test.empty() ? check.id : params.test), 0, "",
                      "integration_test_failed", result);
}

}  // namespace envcontract::contracts::judges
