#include "daemon/snapshot_command.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <ostream>
#include <set>

#include "common/python_names.hpp"
#include "common/shown_path.hpp"
#include "common/spelling.hpp"
#include "common/time_text.hpp"
#include "contracts/contract_loader.hpp"
#include "contracts/values.hpp"
#include "daemon/contract_source.hpp"
#include "daemon/probe_plan.hpp"
#include "facts/stage_names.hpp"
#include "probes/dynamic_probe.hpp"
#include "probes/exec_session.hpp"
#include "probes/host_facts.hpp"
#include "provisioning/snapshot.hpp"

namespace envcontract::daemon {
namespace {

namespace fs = std::filesystem;

// Distributions that make an env work, not what it is for.
bool tooling(const std::string& normalized) {
  static const std::set<std::string> names = {"pip", "setuptools", "wheel", "distribute",
                                              "pkg-resources"};
  return names.count(normalized) != 0;
}

// What to import in the env, in the order a user would: torch first, what
// builds on it, triton last; the packaging tools and private names left out.
std::vector<std::string> candidate_imports(const probes::StaticFacts& facts) {
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

// Variables activation sets that say something about the platform: not the
// shell's own, nor the env manager's bookkeeping.
bool bookkeeping(const std::string& name) {
  static const std::set<std::string> names = {"PATH", "PS1",    "_",           "SHLVL",
                                              "PWD",  "OLDPWD", "VIRTUAL_ENV", "LD_LIBRARY_PATH"};
  return names.count(name) != 0 || name.starts_with("CONDA_") || name.starts_with("VIRTUAL_ENV_") ||
         name.starts_with("_CE_") || name.starts_with("BASH");
}

const probes::StageResult* stage_named(const probes::DynamicFacts& facts, const std::string& name) {
  for (const auto& stage : facts.stages) {
    if (stage.stage == name) {
      return &stage;
    }
  }
  return nullptr;
}

// The env the snapshot is of: the one named, or the only one found; null
// (with the names found said on `err`) when there is none.
const probes::EnvFacts* chosen_env(const probes::HostFacts& host, const std::string& wanted,
                                   std::ostream& err) {
  std::vector<std::string> names;
  const probes::EnvFacts* chosen = nullptr;
  for (const auto& env : host.envs) {
    names.push_back(env.env.name);
    if (env.env.name == wanted || (wanted.empty() && host.envs.size() == 1)) {
      chosen = &env;
    }
  }
  if (chosen != nullptr) {
    return chosen;
  }
  std::string listing;
  for (const auto& name : names) {
    listing += (listing.empty() ? "" : ", ") + name;
  }
  err << "envcontractd snapshot: "
      << (wanted.empty() ? "name the env to snapshot (--env); the envs found are: "
                         : "no env named '" + wanted + "'" + common::did_you_mean(wanted, names) +
                               "; the envs found are: ")
      << (listing.empty() ? std::string("none (name its --prefix or --root)") : listing) << "\n";
  return nullptr;
}

// Why no snapshot is taken of `env` ("" when one is): a snapshot is evidence
// of what an env is, not of one whose code may not run or whose facts are
// partial.
std::string snapshot_refusal(const probes::EnvFacts& env) {
  if (auto refusal = probes::code_refusal(env.env); !refusal.empty()) {
    return env.env.name + ": " + refusal;
  }
  if (env.errors.empty() && env.refused_files.empty() && env.activation.problem.empty()) {
    return "";
  }
  return "the facts of " + env.env.name + " are incomplete (" +
         (!env.errors.empty() ? env.errors[0].stage + ": " + env.errors[0].message
          : !env.activation.problem.empty()
              ? "activation: " + env.activation.problem +
                    (env.activation.problem_output.empty() ? std::string()
                                                           : ": " + env.activation.problem_output)
              : "a file was refused: " + env.refused_files[0].path.string()) +
         "); a snapshot would state less than the env is";
}

// What the env's probe runs: every import a user would try, the base
// contract's device counts and snippets, no command, no bare comparison.
probes::ProbePlan snapshot_plan(const std::optional<ContractHandle>& base,
                                const probes::StaticFacts& facts) {
  probes::ProbePlan plan = plan_from_contract(base ? &(*base)->contract : nullptr);
  plan.imports = candidate_imports(facts);
  plan.torch_after_imports = false;
  plan.commands.clear();
  plan.compare_bare = false;
  plan.lanes = std::make_shared<const probes::ProbeLanes>(0, 1);  // one env: every core
  return plan;
}

// What the imports stage reported, module by module; the modules it did not
// reach fail with its summary.
void add_imports(provisioning::SnapshotInput& input, const probes::DynamicFacts& dynamic,
                 const probes::ProbePlan& plan) {
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
  for (const auto& module : plan.imports) {
    if (reported.count(module) == 0) {
      input.import_failures.emplace_back(module, "not reached: " + imports->summary);
    }
  }
}

// What activation sets that says something about the platform, and where
// the loader looks first.
void add_activation(provisioning::SnapshotInput& input, const probes::EnvFacts& env) {
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
void add_base_checks(provisioning::SnapshotInput& input, const contracts::Contract& base,
                     const probes::DynamicFacts& dynamic) {
  for (const auto& check : base.checks) {
    if (const auto* devices_params = check.parameters_if<contracts::DevicesParams>()) {
      const auto& params = *devices_params;
      provisioning::SnapshotDevices devices{
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
        outcome = stage->status == probes::StageStatus::ok
                      ? "passed"
                      : "did not pass (" + stage->summary + ")";
      }
      input.smokes.push_back({check.id, check.description, params.code, params.expect_output,
                              params.timeout, outcome,
                              check.severity == contracts::Severity::advisory});
    }
  }
}

// Everything the contract is written from: the env's static facts, what
// its probe gave, what activation sets, the base contract's checks.
provisioning::SnapshotInput snapshot_input(const SnapshotOptions& options,
                                           const probes::HostFacts& host,
                                           const probes::EnvFacts& env,
                                           const std::optional<ContractHandle>& base,
                                           const probes::ProbePlan& plan,
                                           const probes::DynamicFacts& dynamic) {
  const auto& facts = env.static_facts;
  provisioning::SnapshotInput input;
  input.contract_name = options.name.empty() ? env.env.name + "-snapshot" : options.name;
  input.platform = base ? (*base)->contract.platform : "";
  input.env = env.env.name;
  input.prefix = env.env.prefix.string();
  input.host = host.host;
  input.taken_at = common::now_rfc3339();
  input.python_version = env.env.python_version;
  if (facts.torch.present) {
    const auto& libraries = facts.torch.libraries;
    input.torch = provisioning::SnapshotTorch{
        facts.torch.version,
        facts.torch.base,
        facts.torch.local,
        facts.torch.cuda,
        facts.torch.hip,
        std::find(libraries.begin(), libraries.end(), "libtorch_cuda.so") != libraries.end()};
  }
  if (facts.triton.present && !facts.triton.provider.empty()) {
    input.triton = provisioning::SnapshotTriton{
        facts.triton.provider, facts.triton.provider_version, facts.triton.backends};
  }
  add_imports(input, dynamic, plan);
  for (const auto& distribution : facts.distributions) {
    if (!tooling(distribution.normalized)) {
      input.distributions.emplace_back(distribution.normalized, distribution.version);
    }
  }
  input.pin = options.pin;
  add_activation(input, env);
  input.image = host.image.value;
  if (base) {
    add_base_checks(input, (*base)->contract, dynamic);
  }
  return input;
}

// `text` written to `output` whole or not at all: a new file beside it,
// renamed over it, so never written through a link planted where the output
// goes, never half written.
bool write_whole(const fs::path& output, const std::string& text) {
  const fs::path temporary = output.string() + ".tmp-" + std::to_string(::getpid());
  const int fd =
      ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  bool written = fd >= 0;
  if (fd >= 0) {
    std::size_t done = 0;
    while (written && done < text.size()) {
      const auto n = ::write(fd, text.data() + done, text.size() - done);
      written = n > 0;
      done += n > 0 ? static_cast<std::size_t>(n) : 0;
    }
    written = ::close(fd) == 0 && written;
  }
  std::error_code rename_error;
  if (written) {
    fs::rename(temporary, output, rename_error);
  }
  if (!written || rename_error) {
    ::unlink(temporary.c_str());
    return false;
  }
  return true;
}

}  // namespace

int run_snapshot(const SnapshotOptions& options, std::ostream& out, std::ostream& err) {
  // A container's envs share one engine exec per user (probes/exec_session.hpp).
  const probes::ExecSessionScope exec_sessions;
  std::optional<ContractHandle> base;
  if (!options.base_contract.empty()) {
    auto loaded = load_contract(options.base_contract);
    if (!loaded) {
      err << loaded.error();
      return 2;
    }
    base = loaded.value();
  }
  probes::HostFactsOptions facts_options;
  facts_options.discovery = options.discovery;
  facts_options.image = options.image;
  const auto host =
      probes::gather_host_facts(facts_options, std::make_shared<probes::FactCaches>());
  const auto* chosen = chosen_env(host, options.env, err);
  if (chosen == nullptr) {
    return 2;
  }
  const auto& env = *chosen;
  if (const auto refusal = snapshot_refusal(env); !refusal.empty()) {
    err << "envcontractd snapshot: " << refusal << "\n";
    return 2;
  }
  const auto plan = snapshot_plan(base, env.static_facts);
  const auto dynamic = probes::probe_env(env.env, env.activation, plan);
  if (!dynamic.refused.empty()) {
    err << "envcontractd snapshot: " << env.env.name << ": " << dynamic.refused << "\n";
    return 2;
  }
  const auto input = snapshot_input(options, host, env, base, plan, dynamic);
  const std::string yaml = provisioning::snapshot_yaml(input);
  // Never write a contract that does not load.
  const bool to_stdout = options.output.empty() || options.output == "-";
  const auto check =
      contracts::load_contract_text(yaml, to_stdout ? "snapshot.yaml" : options.output);
  if (!check.contract) {
    err << "envcontractd snapshot: the contract written from " << env.env.name
        << " does not load (a bug; please report it):\n";
    for (const auto& diagnostic : check.diagnostics.sorted()) {
      err << diagnostic.to_string() << "\n";
    }
    return 2;
  }
  if (to_stdout) {
    out << yaml;
  } else if (!write_whole(options.output, yaml)) {
    err << "envcontractd snapshot: cannot write " << common::shown_path(options.output) << "\n";
    return 2;
  } else {
    err << "wrote " << common::shown_path(options.output) << ": " << input.imported.size()
        << " imports, " << input.devices.size() << " device and " << input.smokes.size()
        << " smoke checks from " << env.env.name << "\n";
  }
  for (const auto& smoke : input.smokes) {
    if (smoke.outcome != "passed") {
      err << "warning: " << smoke.id << " " << smoke.outcome
          << ": is this env really the one to copy?\n";
    }
  }
  return 0;
}

}  // namespace envcontract::daemon
