// Judges of what happened when env code ran: imports, device counts, smoke
// snippets. A failure is explained from the linkage facts when they know why.
#include <algorithm>
#include <regex>
#include <set>

#include "common/json_text.hpp"
#include "contracts/integration_tests.hpp"
#include "contracts/judges.hpp"
#include "contracts/values.hpp"

namespace envcontract::contracts::judges {
namespace {

namespace stage_names = facts::stage_names;

const std::string k_not_found = ": cannot open shared object file";
const std::string k_undefined = "undefined symbol: ";

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// A contract's output pattern searched in what env code printed. libstdc++'s
// regex recurses once per character a repetition consumes, so the output
// searched is bounded: a megabyte line must not overflow the agent's stack.
constexpr std::size_t k_searched_output_bytes = 4096;

bool output_matches(const std::string& output, const std::string& pattern) {
  return std::regex_search(output.substr(0, k_searched_output_bytes), std::regex(pattern));
}

// The linkage facts' entry for a missing library, with who needs it.
std::optional<Json> missing_library_evidence(const EnvFactsView& facts, const std::string& name,
                                             const std::string& activation) {
  for (const auto& library : facts.libraries(activation)) {
    for (const auto& missing : array_field(library, "missing")) {
      if (string_field(missing, "name") == name) {
        return missing;
      }
    }
  }
  return std::nullopt;
}

std::optional<Json> unresolved_evidence(const EnvFactsView& facts, const std::string& symbol,
                                        const std::string& activation) {
  for (const auto& library : facts.libraries(activation)) {
    for (const auto& unresolved : array_field(library, "unresolved")) {
      if (string_field(unresolved, "mangled") == symbol) {
        return unresolved;
      }
    }
  }
  return std::nullopt;
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
void add_other_unresolved(const EnvFactsView& facts, const std::string& symbol,
                          const std::string& activation, Diagnosis& diagnosis) {
  constexpr std::size_t k_listed = 50;
  const std::string needed_by = string_field(diagnosis.evidence, "needed_by");
  if (needed_by.empty()) {
    return;
  }
  // From the one library entry whose closure the loader's symbol belongs
  // to: other entries resolve in other closures.
  const Json* entry = nullptr;
  for (const auto& library : facts.libraries(activation)) {
    for (const auto& unresolved : array_field(library, "unresolved")) {
      if (entry == nullptr && string_field(unresolved, "mangled") == symbol &&
          string_field(unresolved, "needed_by") == needed_by) {
        entry = &library;
      }
    }
  }
  if (entry == nullptr) {
    return;
  }
  auto others = Json::array();
  std::set<std::string> seen;
  std::size_t count = 0;
  for (const auto& unresolved : array_field(*entry, "unresolved")) {
    const std::string key =
        string_field(unresolved, "mangled") + "@" + string_field(unresolved, "version");
    if (string_field(unresolved, "needed_by") != needed_by ||
        string_field(unresolved, "mangled") == symbol || !seen.insert(key).second) {
      continue;
    }
    ++count;
    if (others.size() < k_listed) {
      others.push_back(unresolved);
    }
  }
  auto versions = Json::array();
  for (const auto& version : array_field(*entry, "missing_versions")) {
    if (string_field(version, "needed_by") == needed_by && versions.size() < k_listed) {
      versions.push_back(version);
    }
  }
  if (count > 0) {
    std::string names;
    for (std::size_t i = 0; i < others.size() && i < 3; ++i) {
      names += (i == 0 ? "" : ", ") + string_field(others[i], "demangled");
    }
    diagnosis.summary += "; " + file_name(needed_by) + " also needs " + std::to_string(count) +
                         " more that nothing defines: " + names + (count > 3 ? ", ..." : "");
    diagnosis.evidence["also_unresolved"] = others;
  }
  if (!versions.empty()) {
    diagnosis.evidence["missing_versions"] = versions;
  }
}

// Why an import (or a snippet) raised, from its error text and the linkage facts.
Diagnosis explain_error(const std::string& subject, const std::string& error_type,
                        const std::string& error, const EnvFactsView& facts,
                        const std::string& activation) {
  const std::string text = first_line(error);
  if (const auto at = text.find(k_not_found); at != std::string::npos) {
    const std::string library = file_name(text.substr(0, at));
    Diagnosis diagnosis{"missing_library",
                        subject + " fails: " + library + " cannot be found",
                        {{"error", text}},
                        ""};
    if (auto evidence = missing_library_evidence(facts, library, activation)) {
      diagnosis.summary += " (needed by " + file_name(string_field(*evidence, "needed_by")) + ")";
      diagnosis.evidence["missing"] = *evidence;
      const auto& others = array_field(*evidence, "other_versions");
      if (!others.empty()) {
        diagnosis.summary += "; a different version exists: " + others.front().get<std::string>();
      }
    }
    diagnosis.remedy = "install the package that provides " + library +
                       ", or put its directory on LD_LIBRARY_PATH in the env's activate.d";
    return diagnosis;
  }
  if (const auto unbound = unbound_symbol(text)) {
    const std::string& symbol = *unbound;
    auto evidence = unresolved_evidence(facts, symbol, activation);
    if (evidence && evidence->contains("near_miss") && (*evidence)["near_miss"].is_object()) {
      const Json& near = (*evidence)["near_miss"];
      std::string differences;
      for (const auto& difference : array_field(near, "differences")) {
        differences += (differences.empty() ? "" : "; ") + difference.get<std::string>();
      }
      Diagnosis mismatch{"abi_signature_mismatch",
                         file_name(string_field(*evidence, "needed_by")) + " wants " +
                             string_field(*evidence, "demangled") + " but " +
                             file_name(string_field(near, "library")) + " defines " +
                             string_field(near, "demangled") + " (" + differences + ")",
                         *evidence,
                         "use builds of " + file_name(string_field(*evidence, "needed_by")) +
                             " and " + file_name(string_field(near, "library")) +
                             " made against the same torch"};
      mismatch.evidence["error"] = text;
      add_other_unresolved(facts, symbol, activation, mismatch);
      return mismatch;
    }
    Diagnosis diagnosis{"undefined_symbol",
                        subject + " fails: undefined symbol " + symbol,
                        {{"error", text}},
                        "install the builds made for this torch version"};
    if (evidence) {
      diagnosis.summary = file_name(string_field(*evidence, "needed_by")) + " needs " +
                          string_field(*evidence, "demangled") + ", which nothing it loads defines";
      diagnosis.evidence = *evidence;
      diagnosis.evidence["error"] = text;
      add_other_unresolved(facts, symbol, activation, diagnosis);
    }
    return diagnosis;
  }
  return {"import_error",
          subject + " fails: " + error_type + ": " + text,
          {{"error", error}},
          "fix the import error above in this env"};
}

// A stage that did not finish: hang, crash or a probe error.
std::optional<Diagnosis> unfinished_stage(const Json& stage) {
  const std::string status = string_field(stage, "status");
  const std::string summary = string_field(stage, "summary");
  if (status == "hung") {
    return Diagnosis{"hang", summary, stage.value("hang", Json(nullptr)),
                     "the operation never completes: check the vendor runtime and driver versions; "
                     "the native stack shows where it waits"};
  }
  if (status == "crashed") {
    return Diagnosis{"crash",
                     summary,
                     {{"process", stage.value("process", Json(""))},
                      {"stderr_tail", stage.value("stderr_tail", Json(""))}},
                     "the process died in the env's own code; the stderr tail shows where"};
  }
  if (status == "probe_error") {
    return Diagnosis{"probe_error", summary, Json::object(),
                     "the probe could not report; see the agent's log"};
  }
  if (status == "stopped") {
    return Diagnosis{"stopped", summary, Json::object(),
                     "the env's probes ran out of the time the agent gives them: raise "
                     "env_deadline or scan_deadline in the agent's config, or find what makes "
                     "this env slow (docs/reliability.md)"};
  }
  return std::nullopt;
}

}  // namespace

Diagnosis torch_import_failure(const EnvFactsView& facts, const Json& identity,
                               CheckStatus& status) {
  status = CheckStatus::fail;
  if (auto unfinished = unfinished_stage(identity)) {
    if (unfinished->cause == "probe_error" || unfinished->cause == "stopped") {
      status = CheckStatus::error;
    }
    return *unfinished;
  }
  for (const auto& record : array_field(identity, "records")) {
    if (string_field(record, "type") == "import" && string_field(record, "module") == "torch" &&
        record.value("ok", Json(false)) != true) {
      return explain_error("import torch", string_field(record, "error_type"),
                           string_field(record, "error"), facts,
                           string_field(identity, "activation"));
    }
  }
  return Diagnosis{"import_error", string_field(identity, "summary"), Json::object(),
                   "make torch import in this env: run python -c 'import torch' in it"};
}

namespace {

// Finds the stage, or marks the result as not judgeable.
const Json* require_stage(const EnvFactsView& facts, std::string_view name, CheckResult& result) {
  const Json* stage = facts.stage(name);
  if (stage == nullptr) {
    result.status = CheckStatus::error;
    result.diagnosis =
        Diagnosis{"probe_error",
                  facts.has_dynamic_facts() ? "the " + std::string(name) + " stage did not run"
                                            : "dynamic probes did not run",
                  Json::object(), "run the dynamic probes (envcontractd probe)"};
    return nullptr;
  }
  if (string_field(*stage, "status") == "skipped") {
    result.status = CheckStatus::skip;
    result.diagnosis = Diagnosis{"blocked", string_field(*stage, "summary"), Json::object(),
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

const Json* find_record(const Json& stage, const std::string& type, const std::string& module) {
  for (const auto& record : array_field(stage, "records")) {
    if (string_field(record, "type") == type &&
        (module.empty() || string_field(record, "module") == module)) {
      return &record;
    }
  }
  return nullptr;
}

}  // namespace

std::vector<Diagnosis> linkage_problems_under(const EnvFactsView& facts,
                                              const std::string& directory) {
  std::vector<Diagnosis> problems;
  for (const auto& library : facts.libraries()) {
    const std::string path = string_field(library, "path");
    if (!path.starts_with(directory + "/")) {
      continue;
    }
    const std::string subject = "loading " + file_name(path);
    if (const auto& missing = array_field(library, "missing"); !missing.empty()) {
      problems.push_back(explain_error(subject, "", string_field(missing[0], "name") + k_not_found,
                                       facts, "activated"));
    } else if (const auto& unresolved = array_field(library, "unresolved"); !unresolved.empty()) {
      problems.push_back(explain_error(
          subject, "", k_undefined + string_field(unresolved[0], "mangled"), facts, "activated"));
    }
  }
  return problems;
}

void imports(const Check&, const ImportsParams& params, const EnvFactsView& facts,
             CheckResult& result) {
  if (const Json* artifact = facts.activation_artifact(stage_names::imports)) {
    result.notes.push_back({"activation_required", string_field(*artifact, "summary"), *artifact,
                            "run this env activated (conda activate), as its users do"});
  }
  const Json* stage = require_stage(facts, stage_names::imports, result);
  if (stage == nullptr) {
    return;
  }
  Json actual = Json::object();
  for (const auto& name : params.modules) {
    const Json* record = find_record(*stage, "import", name);
    if (record == nullptr) {
      result.status = CheckStatus::error;
      result.diagnosis =
          Diagnosis{"probe_error", "no import of " + name + " was recorded", Json::object(), ""};
      return;
    }
    actual[name] = record->value("ok", Json(false));
    for (const auto& warning : array_field(*record, "warnings")) {
      if (warning.is_string() &&
          warning.get<std::string>().find(k_undefined) != std::string::npos) {
        result.notes.push_back(explain_error("import " + name + " (warning only)", "Warning",
                                             warning.get<std::string>(), facts, "activated"));
      }
    }
    if (record->value("ok", Json(false)) != true) {
      result.actual = actual;
      result.status = CheckStatus::fail;
      result.diagnosis = explain_error("import " + name, string_field(*record, "error_type"),
                                       string_field(*record, "error"), facts, "activated");
      return;
    }
  }
  result.actual = actual;
  pass(result);
}

void devices(const Check& check, const DevicesParams& params, const EnvFactsView& facts,
             CheckResult& result) {
  const Json* stage = require_stage(facts, stage_names::devices(check.id), result);
  if (stage == nullptr) {
    return;
  }
  for (const auto& record : array_field(*stage, "records")) {
    if (string_field(record, "type") == "import" && record.value("ok", Json(false)) != true) {
      result.status = CheckStatus::fail;
      result.diagnosis = explain_error("import " + string_field(record, "module"),
                                       string_field(record, "error_type"),
                                       string_field(record, "error"), facts, "activated");
      return;
    }
  }
  const Json* record = find_record(*stage, "devices", "");
  const Json value = record ? record->value("value", Json(nullptr)) : Json(nullptr);
  result.actual = value;
  if (!value.is_number_integer()) {
    result.status = CheckStatus::fail;
    result.diagnosis =
        explain_error(params.expression, record ? string_field(*record, "error_type") : "",
                      record ? string_field(*record, "error") : "no value", facts, "activated");
    return;
  }
  const Comparison& comparison = params.count;
  if (!comparison.holds_for(value.get<std::int64_t>())) {
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
  const Json* stage = require_stage(facts, stage_names::smoke(check.id), result);
  if (stage == nullptr) {
    return;
  }
  const Json* record = find_record(*stage, "smoke", "");
  if (record == nullptr) {
    result.status = CheckStatus::error;
    result.diagnosis = Diagnosis{"probe_error", "the snippet left no record", Json::object(), ""};
    return;
  }
  const std::string output = string_field(*record, "output");
  result.actual = {{"output", output}};
  if (record->value("ok", Json(false)) != true) {
    result.status = CheckStatus::fail;
    result.diagnosis = explain_error("the snippet", string_field(*record, "error_type"),
                                     string_field(*record, "error"), facts, "activated");
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
  const Json* stage = require_stage(facts, stage_names::command(check.id), result);
  if (stage == nullptr) {
    return;
  }
  const Json* record = find_record(*stage, "command", "");
  if (record == nullptr || !record->contains("exit_code") || !record->at("exit_code").is_number()) {
    result.status = CheckStatus::error;
    result.diagnosis = Diagnosis{"probe_error", what + " left no exit status", Json::object(), ""};
    return;
  }
  const int exit_code = record->at("exit_code").get<int>();
  const std::string output = string_field(*record, "output");
  const std::string errors = string_field(*stage, "stderr_tail");
  result.actual = {{"exit_code", exit_code}, {"output", output}};
  const Json evidence = {{"run", string_field(*record, "run")},
                         {"exit_code", exit_code},
                         {"stdout", string_field(*stage, "stdout_tail")},
                         {"stderr", errors}};
  if (exit_code != expect_exit) {
    const std::string why = first_line(errors.empty() ? output : errors);
    fail(result, cause,
         what + " exited " + std::to_string(exit_code) + " (wanted " + std::to_string(expect_exit) +
             ")" + (why.empty() ? "" : ": " + why),
         evidence,
         "run it by hand in the activated env to see why: " + string_field(*record, "run"));
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
  if (const Json* stage = facts.stage(stage_names::command(check.id))) {
    if (const Json* stop = find_record(*stage, std::string(stage_names::fail_fast_stop), "")) {
      // The failing entry is a check of this env, so the env drifts on it.
      const std::string blocker = string_field(*stop, "blocked_by");
      result.status = CheckStatus::skip;
      result.diagnosis = Diagnosis{
          "blocked",
          string_field(*stage, "summary"),
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
