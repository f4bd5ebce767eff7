#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string_view>
#include <vector>

#include "contracts/contract.hpp"
#include "contracts/judges.hpp"
#include "contracts/mapping_reader.hpp"
#include "facts/probe_request.hpp"

namespace envcontract::contracts {

// What a kind's parser may need beyond the check's own keys.
struct KindContext {
  std::filesystem::path contract_dir;  // relative `from:` paths resolve here
  std::filesystem::path checkout;      // "{checkout}/..." paths resolve here ("": none configured)
};

// What the rest of the product needs to know of a kind beyond parsing,
// requesting and judging it. Code outside the registry asks these, never a
// kind's name: a new kind states them once, here, or gets the defaults.
struct KindTraits {
  // Its facts come from the env's activation (the variables it sets, the
  // PATH it builds), though they are gathered with the static files: judging
  // it runs the env's activation scripts. Every kind of a later stage runs
  // env code anyway (runs_env_code).
  bool reads_activation = false;
  // A required check of the kind that fails is an import failure that other
  // checks may only repeat (`imports`).
  bool is_import = false;
  // A failure of a check of the kind that repeats a failed import's error is
  // that import's consequence, shown as skipped (`devices`, `smoke`).
  bool repeats_import_failure = false;
  // What a plan installs or removes for a package cause of the kind: the
  // distribution its evidence names, or one the kind itself decides.
  enum class PlanPackage {
    from_evidence,  // the distribution named in the finding's evidence
    torch,          // torch itself (a new env: every extension was built against the old one)
    triton,         // the contract's triton provider
    interpreter,    // Python itself: only a new env changes it
  };
  PlanPackage plan_package = PlanPackage::from_evidence;
};

// One entry of the check-kind registry: everything the loader, the probe plan
// and the judgement need to know about a kind lives here and nowhere else.
// Each entry pairs its functions with one parameter type of CheckParams
// (check_kind.cpp builds them with make_kind, which checks that they agree).
struct CheckKind {
  std::string_view name;
  ProbeStage stage;
  std::string_view summary;  // one line, for `validate --kinds` and error messages
  // Reads the kind's own keys (the common id/kind/severity/description are
  // already consumed) into its parameters, filling defaults, reporting every problem.
  std::function<CheckParams(MappingReader& reader, const KindContext& context)> parse;
  // Adds what a check of this kind needs gathered in every env (modules to
  // import, snippets to run, paths to glob, tools to look up); empty when
  // what every scan gathers is enough.
  std::function<void(const Check& check, facts::ProbeRequest& request)> request;
  // Judges a check of this kind against one env's facts.
  std::function<void(const Check& check, const EnvFactsView& facts, CheckResult& result)> judge;
  KindTraits traits;
};

// Whether judging a check of the kind runs the env's code or its activation.
bool runs_env_code(const CheckKind& kind);

// Every kind, in the order the docs present them.
const std::vector<CheckKind>& check_kinds();

// The kind of that name, or nullptr.
const CheckKind* find_check_kind(std::string_view name);
// The traits of the kind of that name; the defaults for a name the registry
// does not know (a check of a report from a newer agent).
const KindTraits& kind_traits(std::string_view name);

// What the checks ask probes to gather, from each kind's `request`.
facts::ProbeRequest probe_request(const std::vector<Check>& checks);

// The names of all kinds, for "did you mean" and listings.
std::vector<std::string> check_kind_names();

}  // namespace envcontract::contracts
