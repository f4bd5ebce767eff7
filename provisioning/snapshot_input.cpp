#include "provisioning/snapshot_input.hpp"

#include <algorithm>
#include <set>

#include "common/time_text.hpp"
#include "contracts/values.hpp"
#include "facts/stage_names.hpp"

namespace envcontract::provisioning {
namespace {

// Distributions that make an env work, not what it is for.
bool tooling(const std::string& normalized) {
  static const std::set<std::string> names = {"pip", "setuptools", "wheel", "distribute",
                                              "pkg-resources"};
  return names.count(normalized) != 0;
}

// Variables activation sets that say something about the platform: not the
// shell's own, nor the env manager's bookkeeping.
bool bookkeeping(const std::string& name) {
  static const std::set<std::string> names = {"PATH", "PS1",    "_",           "SHLVL",
                                              "PWD",  "OLDPWD", "VIRTUAL_ENV", "LD_LIBRARY_PATH"};
  return names.count(name) != 0 || name.starts_with("CONDA_") || name.starts_with("VIRTUAL_ENV_") ||
         name.starts_with("_CE_") || name.starts_with("BASH");
}

const facts::StageResult* stage_named(const facts::DynamicFacts& facts, const std::string& name) {
  for (const auto& stage : facts.stages) {
    if (stage.stage == name) {
      return &stage;
    }
  }
  return nullptr;
}

// What the imports stage reported, module by module; the modules it did not
// reach fail with its summary.
void add_imports(SnapshotInput& input, const facts::DynamicFacts& dynamic,
                 const std::vector<std::string>& asked) {
  const auto* imports = stage_named(dynamic, std::string(facts::stage_names::imports));
  if (imports == nullptr) {
    return;
  }
  std::set<std::string> reported;
  // Records come from a process the env's code ran in: each field is read
  // only with the type it must have.
  for (const auto& record : imports->records) {
    const std::string& module = record.module;
    if (record.type != "import" || module.empty() || !contracts::is_module_name(module)) {
      continue;
    }
    reported.insert(module);
    if (record.ok) {
      input.imported.push_back(module);
    } else {
      input.import_failures.emplace_back(module, record.error_type + ": " + record.error);
    }
  }
  for (const auto& module : asked) {
    if (reported.count(module) == 0) {
      input.import_failures.emplace_back(module, "not reached: " + imports->summary);
    }
  }
}

// What activation sets that says something about the platform, and where
// the loader looks first.
void add_activation(SnapshotInput& input, const facts::EnvFacts& env) {
  for (const auto& [name, value] : env.activation.activated) {
    const auto bare = env.activation.bare.find(name);
    if (!bookkeeping(name) && contracts::is_environment_variable_name(name) &&
        (bare == env.activation.bare.end() || bare->second != value)) {
      // A path into the env itself: every env has its own.
      if (value.find(env.env.prefix.string()) != std::string::npos) {
        input.variables_set.push_back(name);
      } else {
        input.variables.emplace_back(name, value);
      }
    }
  }
  const auto path = env.activation.activated.find("LD_LIBRARY_PATH");
  if (path == env.activation.activated.end()) {
    return;
  }
  const auto bare = env.activation.bare.find("LD_LIBRARY_PATH");
  if (bare == env.activation.bare.end() || bare->second != path->second) {
    input.library_path_first = path->second.substr(0, path->second.find(':'));
    const std::string own = env.env.prefix.string();
    if (input.library_path_first == own || input.library_path_first.starts_with(own + "/")) {
      input.library_path_first = "{prefix}" + input.library_path_first.substr(own.size());
    }
  }
}

// The base contract's device counts and smoke snippets, with what they gave here.
void add_base_checks(SnapshotInput& input, const contracts::Contract& base,
                     const facts::DynamicFacts& dynamic) {
  for (const auto& check : base.checks) {
    if (const auto* devices_params = check.parameters_if<contracts::DevicesParams>()) {
      const auto& params = *devices_params;
      SnapshotDevices devices{
          check.id,           params.expression, params.imports,
          params.timeout,     std::nullopt,      params.count.op,
          params.count.value, "not run",         check.severity == contracts::Severity::advisory};
      if (const auto* stage = stage_named(dynamic, facts::stage_names::devices(check.id))) {
        devices.problem = stage->summary;
        for (const auto& record : stage->records) {
          if (record.type == "devices" && record.value && *record.value <= 1'000'000) {
            devices.observed = *record.value;
          }
        }
      }
      input.devices.push_back(std::move(devices));
    } else if (const auto* smoke_params = check.parameters_if<contracts::SmokeParams>()) {
      const auto& params = *smoke_params;
      std::string outcome = "was not run";
      if (const auto* stage = stage_named(dynamic, facts::stage_names::smoke(check.id))) {
        outcome = stage->status == facts::StageStatus::ok ? "passed"
                                                          : "did not pass (" + stage->summary + ")";
      }
      input.smokes.push_back({check.id, check.description, params.code, params.expect_output,
                              params.timeout, outcome,
                              check.severity == contracts::Severity::advisory});
    }
  }
}

}  // namespace

std::vector<std::string> candidate_imports(const facts::StaticFacts& facts) {
  std::set<std::string> middle;
  for (const auto& distribution : facts.distributions) {
    if (tooling(distribution.normalized)) {
      continue;
    }
    for (const auto& module : distribution.top_level) {
      if (!module.empty() && module.front() != '_' && module != "torch" && module != "triton" &&
          contracts::is_module_name(module)) {
        middle.insert(module);
      }
    }
  }
  std::vector<std::string> modules;
  if (facts.torch.present) {
    modules.emplace_back("torch");
  }
  for (const auto& module : middle) {
    if (modules.size() >= 40) {
      break;
    }
    modules.push_back(module);
  }
  if (facts.triton.present) {
    modules.emplace_back("triton");
  }
  return modules;
}

SnapshotInput snapshot_input(const facts::EnvFacts& env, const facts::DynamicFacts& dynamic,
                             const SnapshotSource& source) {
  const auto& facts = env.static_facts;
  SnapshotInput input;
  input.contract_name = source.name.empty() ? env.env.name + "-snapshot" : source.name;
  input.platform = source.base != nullptr ? source.base->platform : "";
  input.env = env.env.name;
  input.prefix = env.env.prefix.string();
  input.host = source.host;
  input.taken_at = common::now_rfc3339();
  input.python_version = env.env.python_version;
  if (facts.torch.present) {
    const auto& libraries = facts.torch.libraries;
    input.torch = SnapshotTorch{
        facts.torch.version,
        facts.torch.base,
        facts.torch.local,
        facts.torch.cuda,
        facts.torch.hip,
        std::find(libraries.begin(), libraries.end(), "libtorch_cuda.so") != libraries.end()};
  }
  if (facts.triton.present && !facts.triton.provider.empty()) {
    input.triton =
        SnapshotTriton{facts.triton.provider, facts.triton.provider_version, facts.triton.backends};
  }
  add_imports(input, dynamic, source.imports);
  for (const auto& distribution : facts.distributions) {
    if (!tooling(distribution.normalized)) {
      input.distributions.emplace_back(distribution.normalized, distribution.version);
    }
  }
  input.pin = source.pin;
  add_activation(input, env);
  input.image = source.image;
  if (source.base != nullptr) {
    add_base_checks(input, *source.base, dynamic);
  }
  return input;
}

}  // namespace envcontract::provisioning
