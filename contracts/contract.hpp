#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "contracts/check_params.hpp"
#include "contracts/diagnostics.hpp"
#include "contracts/provision_recipe.hpp"

namespace envcontract::contracts {

using Json = nlohmann::ordered_json;

// A required check decides the verdict; an advisory one is reported only.
enum class Severity { required, advisory };

// Which probe stage supplies the facts a check needs. Static checks read files
// only; the others run code in the env, each stage in its own subprocess.
enum class ProbeStage { static_files, imports, devices, smoke };

std::string to_string(Severity severity);
std::string to_string(ProbeStage stage);

struct Check {
  std::string id;
  std::string kind;  // a name from the check-kind registry
  ProbeStage stage = ProbeStage::static_files;
  Severity severity = Severity::required;
  std::string description;
  CheckParams params;     // made by the kind's parser: every parameter, defaults filled in
  std::string section;    // where it came from: checks, environment_check, torch_contract, ...
  SourceLocation origin;  // file:line:column of its definition

  // The parameters of its kind (the registry pairs each kind with its type;
  // asking for another kind's is a bug, and throws std::bad_variant_access).
  template <typename Params>
  const Params& parameters() const {
    return std::get<Params>(params);
  }
  // Its parameters when they are of that type (so of the kind that owns
  // it), or nullptr: how code outside the registry tells kinds apart.
  template <typename Params>
  const Params* parameters_if() const {
    return std::get_if<Params>(&params);
  }
};

// A host-level expectation: the container image the host must run.
struct Target {
  std::string name;
  std::string image;
  SourceLocation origin;
};

// Which of a host's envs must comply for the host to comply.
struct EnvRequirement {
  enum class Mode { any, all, named };
  Mode mode = Mode::any;
  std::vector<std::string> names;  // for Mode::named
};

// Signs that a host carries this contract's accelerator, for `contract: auto`.
struct Detection {
  std::vector<std::string> device_nodes;  // globs such as /dev/xpu*
  std::vector<std::string> tools;         // executables such as xpu-smi
};

// A known failure accepted for a while: the check is reported `waived`, with
// its diagnosis, instead of failing the env. An expired waiver no longer
// applies, and the report says so.
struct Waiver {
  std::string check;              // a check id of this contract
  std::vector<std::string> envs;  // empty: every env
  std::string reason;             // why, e.g. the ticket tracking the fix
  std::string until;              // "2026-12-31" (UTC, inclusive), or "" for no end
  SourceLocation origin;
};

struct Contract {
  std::filesystem::path path;
  std::string name;  // defaults to the file name without extension
  std::string display_name;
  std::string platform;
  std::string description;
  std::vector<std::string> forms;  // native, environment_check, platform_config
  std::vector<Target> targets;
  EnvRequirement envs;
  Detection detect;
  std::vector<Check> checks;
  std::vector<Waiver> waivers;
  std::optional<ProvisionRecipe> provision;  // how to build a complying env (docs/provisioning.md)
  Json kept = Json::object();  // CI-only keys of a platform config, kept verbatim, not judged
};

// The normalised contract as JSON: what `envcontractd validate --print` shows.
Json to_json(const Contract& contract);

// SHA-256 of the contract as judged: its normalised form without where it
// was read from (its path, each entry's file:line). The same text at
// another path is the same contract; the same file with another checkout or
// other integration tests selected is not (a CI gate's question to an agent).
std::string judged_sha256(const Contract& contract);

}  // namespace envcontract::contracts
