#pragma once

#include <chrono>
#include <filesystem>
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
};

// One entry of the check-kind registry: everything the loader, the docs and
// (later) the judge need to know about a kind lives here and nowhere else.
struct CheckKind {
  std::string_view name;
  ProbeStage stage;
  std::string_view summary;  // one line, for `validate --kinds` and error messages
  // Reads the kind's own keys (the common id/kind/severity/description are
  // already consumed) into `params`, filling defaults, reporting every problem.
  void (*parse)(MappingReader& reader, Json& params, const KindContext& context);
  // Adds what a check of this kind needs gathered in every env (modules to
  // import, snippets to run, paths to glob, tools to look up); nullptr when
  // what every scan gathers is enough.
  void (*request)(const Check& check, facts::ProbeRequest& request);
  // Judges a check of this kind against one env's facts; nullptr while the
  // facts it needs are not gathered yet (the check is then an error).
  judges::Judge judge;
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
