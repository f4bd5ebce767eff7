#include "daemon/snapshot_command.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <ostream>

#include "common/shown_path.hpp"
#include "common/spelling.hpp"
#include "contracts/contract_loader.hpp"
#include "daemon/contract_source.hpp"
#include "daemon/probe_plan.hpp"
#include "discovery/exec_session.hpp"
#include "probes/dynamic_probe.hpp"
#include "probes/host_facts.hpp"
#include "provisioning/snapshot.hpp"
#include "provisioning/snapshot_input.hpp"

namespace envcontract::daemon {
namespace {

namespace fs = std::filesystem;

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
  if (const auto refusal = discovery::code_refusal(env.env)) {
    return env.env.name + ": " + refusal->text;
  }
  if (env.errors.empty() && env.refused_files.empty() && env.activation.problem.empty()) {
    return "";
  }
  return "the facts of " + env.env.name + " are incomplete (" +
         (!env.errors.empty() ? facts::to_string(env.errors[0].stage) + ": " + env.errors[0].message
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
  plan.imports = provisioning::candidate_imports(facts);
  plan.torch_after_imports = false;
  plan.commands.clear();
  plan.compare_bare = false;
  plan.lanes = std::make_shared<const probes::ProbeLanes>(0, 1);  // one env: every core
  return plan;
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
  // A container's envs share one engine exec per user (discovery/exec_session.hpp).
  const discovery::ExecSessionScope exec_sessions;
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
  if (dynamic.refused) {
    err << "envcontractd snapshot: " << env.env.name << ": " << dynamic.refused->text << "\n";
    return 2;
  }
  const auto input = provisioning::snapshot_input(env, dynamic,
                                                  {.name = options.name,
                                                   .host = host.host,
                                                   .image = host.image.value,
                                                   .pin = options.pin,
                                                   .base = base ? &(*base)->contract : nullptr,
                                                   .imports = plan.imports});
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
