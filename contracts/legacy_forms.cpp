#include "contracts/legacy_forms.hpp"

#include <map>

#include "common/spelling.hpp"
#include "contracts/integration_tests.hpp"
#include "contracts/mapping_reader.hpp"
#include "contracts/values.hpp"

namespace envcontract::contracts {
namespace {

// A native check mapping whose values are the original nodes, so messages
// about them still point at the user's file and line.
YAML::Node native_check(const std::string& kind, const std::string& id,
                        const std::string& description) {
  YAML::Node check(YAML::NodeType::Map);
  check["kind"] = kind;
  check["id"] = id;
  check["description"] = description;
  return check;
}

// The expression the FlagOS preflights use to count devices.
constexpr const char* k_flagos_device_count = "torch_fl.flagos.device_count()";

}  // namespace

void translate_environment_check(const YAML::Node& section, CheckParser& parser) {
  auto& ctx = parser.ctx();
  FallbackScope fallback(ctx, section.Mark());
  MappingReader reader(section, "'environment_check'", ctx);
  if (!reader.is_mapping()) {
    return;
  }
  YAML::Node torch =
      native_check("torch", "torch-build", "environment_check: torch_version_base, cuda_version");
  bool has_torch = false;
  if (const auto base = reader.get("torch_version_base")) {
    torch["base"] = *base;
    has_torch = true;
  }
  if (const auto cuda = reader.get("cuda_version")) {
    torch["cuda"] = *cuda;
    has_torch = true;
  }
  if (has_torch) {
    parser.parse(torch, "environment_check");
  }
  if (const auto devices = reader.get("flagos_devices")) {
    MappingReader device_reader(*devices, "'flagos_devices'", ctx);
    const auto at_least =
        device_reader.integer("at_least", Need::required, 0, std::numeric_limits<int>::max());
    device_reader.reject_unknown_keys();
    if (at_least) {
      YAML::Node check =
          native_check("devices", "flagos-devices", "environment_check: flagos_devices");
      check["expression"] = k_flagos_device_count;
      check["count"] = ">= " + std::to_string(*at_least);
      FallbackScope at(ctx, devices->Mark());
      parser.parse(check, "environment_check");
    }
  }
  if (const auto backend = reader.get("triton_backend")) {
    // The form's meaning: the vendor triton (FlagTree) carrying this backend.
    YAML::Node check =
        native_check("triton", "triton-backend",
                     "environment_check: triton_backend (FlagTree, not stock triton)");
    check["provider"] = "flagtree";
    YAML::Node backends(YAML::NodeType::Sequence);
    backends.push_back(*backend);
    check["backends"] = backends;
    FallbackScope at(ctx, backend->Mark());
    parser.parse(check, "environment_check");
  }
  reader.reject_unknown_keys();
}

void translate_torch_contract(const YAML::Node& section, CheckParser& parser) {
  auto& ctx = parser.ctx();
  FallbackScope fallback(ctx, section.Mark());
  MappingReader reader(section, "'torch_contract'", ctx);
  if (!reader.is_mapping()) {
    return;
  }
  YAML::Node torch =
      native_check("torch", "torch-contract", "torch_contract of the platform config");
  // Their check_torch_contract.py refuses a contract without a base version.
  if (const auto base = reader.get("base_version", Need::required)) {
    torch["base"] = *base;
  }
  if (const auto local = reader.get("local_version")) {
    torch["local"] = *local;
  }
  if (const auto cuda = reader.get("cuda")) {
    torch["cuda"] = *cuda;
  }
  if (const auto paths = reader.get("forbidden_torch_paths")) {
    // Upstream's check reads them as `part in torch.__file__`, not prefixes.
    torch["forbidden_path_parts"] = *paths;
  }
  reader.reject_unknown_keys();
  if (torch["base"]) {
    parser.parse(torch, "torch_contract");
  }
}

void translate_integration_tests(const YAML::Node& section, const std::string& config_name,
                                 const NamedList<std::string>& runner_environment,
                                 const std::vector<std::string>& run_tests, CheckParser& parser) {
  auto& ctx = parser.ctx();
  if (!section.IsSequence()) {
    ctx.error(section, "'integration_tests' must be a list of {name, command}, got " +
                           describe_node_type(section));
    return;
  }
  // Ids name tests in waivers, history and links: two entries may not share one.
  std::map<std::string, int> first_line;
  std::vector<std::string> kept;
  std::vector<std::string> named_preflights;  // kept, but preflights by their names
  std::vector<std::string> known;
  bool any_fail_fast = false;
  std::vector<bool> selected(run_tests.size(), false);
  int run = 0;
  for (const auto& item : section) {
    auto entry = parse_integration_entry(item, runner_environment, ctx);
    if (!entry) {
      continue;
    }
    const std::string id = integration_check_id(*entry);
    const auto [seen, inserted] = first_line.emplace(id, item.Mark().line + 1);
    if (!inserted) {
      ctx.error(item, "two integration tests have the id '" + id + "' (the first at line " +
                          std::to_string(seen->second) + ")" +
                          (entry->id.empty() ? ": give them distinct names or an 'id' each"
                                             : ": ids must be unique"));
      continue;
    }
    // Only preflights are host checks. An entry without a phase may be a CI
    // suite needing the repository and an hour: kept, run when selected.
    bool chosen = false;
    for (std::size_t i = 0; i < run_tests.size(); ++i) {
      if (run_tests[i] == id || run_tests[i] == entry->name || run_tests[i] == entry->id) {
        selected[i] = true;
        chosen = true;
      }
    }
    known.push_back(id);
    any_fail_fast = any_fail_fast || runner_failure_policy(*entry) == "fail-fast";
    if (!is_preflight_phase(entry->phase) && !chosen) {
      kept.push_back(id);
      if (entry->phase.empty() && runner_phase(*entry) == "preflight") {
        named_preflights.push_back(id);
      }
      continue;
    }
    ++run;
    Check check;
    check.id = id;
    check.kind = "integration_test";
    check.stage = ProbeStage::smoke;
    check.description = entry->name;
    check.section = "integration_tests";
    check.origin = ctx.locate(item);
    // Every failure fails the CI job, whatever the policy: the policy only
    // says whether later entries still run.
    check.severity = Severity::required;
    IntegrationTestParams params;
    params.from = config_name;
    params.test = entry->id.empty() ? entry->name : entry->id;
    params.entry = std::move(*entry);
    check.params = std::move(params);
    parser.add(std::move(check), item);
  }
  for (std::size_t i = 0; i < run_tests.size(); ++i) {
    if (!selected[i]) {
      ctx.error(section, "the agent's run_integration_tests names '" + run_tests[i] +
                             "', which this config does not have" +
                             common::did_you_mean(run_tests[i], known));
    }
  }
  const auto listing = [](const std::vector<std::string>& ids) {
    std::string text;
    for (const auto& id : ids) {
      text += (text.empty() ? "" : ", ") + id;
    }
    return text;
  };
  const std::string kept_ids = listing(kept);
  if (!known.empty() && !any_fail_fast) {
    ctx.warning(section,
                "every integration test continues after a failure, and the CI runner refuses "
                "such a config: give the preflights 'failure_policy: fail-fast'");
  }
  ctx.note(section,
           std::to_string(run) +
               (run == 1 ? " integration test runs as a host check"
                         : " integration tests run as host checks") +
               (run_tests.empty() ? " (phase: preflight)"
                                  : " (phase: preflight, or named by the agent's "
                                    "run_integration_tests)") +
               (kept.empty() ? std::string()
                             : "; " + std::to_string(kept.size()) +
                                   " kept, not run (no phase, or a suite's): " + kept_ids +
                                   (named_preflights.empty()
                                        ? std::string()
                                        : "; the CI runner reads " + listing(named_preflights) +
                                              " as preflight by name") +
                                   "; select one with an integration_test check "
                                   "(docs/contracts.md)"));
}

}  // namespace envcontract::contracts
