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
};

// Every kind, in the order the docs present them.
const std::vector<CheckKind>& check_kinds();

// The kind of that name, or nullptr.
const CheckKind* find_check_kind(std::string_view name);

// What the checks ask probes to gather, from each kind's `request`.
facts::ProbeRequest probe_request(const std::vector<Check>& checks);

// The names of all kinds, for "did you mean" and listings.
std::vector<std::string> check_kind_names();

}  // namespace envcontract::contracts
