#include "daemon/probe_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <ostream>

#include "common/json_text.hpp"
#include "common/spelling.hpp"
#include "contracts/contract_loader.hpp"
#include "daemon/probe_plan.hpp"
#include "discovery/exec_session.hpp"
#include "probes/activation.hpp"
#include "probes/dynamic_probe.hpp"

namespace envcontract::daemon {

int run_probe(const ProbeOptions& options, std::ostream& out, std::ostream& err) {
  // A container's envs share one engine exec per user (discovery/exec_session.hpp).
  const discovery::ExecSessionScope exec_sessions;
  std::optional<contracts::Contract> contract;
  if (options.contract) {
    auto loaded = contracts::load_contract_file(*options.contract);
    for (const auto& diagnostic : loaded.diagnostics.sorted()) {
      err << diagnostic.to_string() << "\n";
    }
    if (!loaded.contract) {
      return 2;
    }
    contract = std::move(loaded.contract);
  }
  auto plan = plan_from_contract(contract ? &*contract : nullptr);

  auto discovery = discovery::discover_envs(options.discovery);
  std::vector<std::string> names;
  for (const auto& env : discovery.envs) {
    names.push_back(env.name);
  }
  if (names.empty()) {
    err << "envcontractd probe: no Python environment was found; name the roots or prefixes "
           "that hold the envs (--root, --prefix)\n";
    return 2;
  }
  // A name that matches nothing is a mistake to name, not an empty probe.
  for (const auto& wanted : options.only_envs) {
    if (std::find(names.begin(), names.end(), wanted) == names.end()) {
      std::string listing;
      for (const auto& name : names) {
        listing += (listing.empty() ? "" : ", ") + name;
      }
      err << "envcontractd probe: no env named '" << wanted << "'"
          << common::did_you_mean(wanted, names) << "; the envs found are: " << listing << "\n";
      return 2;
    }
  }
  std::vector<probes::PythonEnv> envs;
  for (auto& env : discovery.envs) {
    if (options.only_envs.empty() || std::find(options.only_envs.begin(), options.only_envs.end(),
                                               env.name) != options.only_envs.end()) {
      envs.push_back(std::move(env));
    }
  }

  const bool progress = ::isatty(STDERR_FILENO) != 0;
  probes::ActivationCache activations;
  std::mutex output_mutex;
  std::size_t done = 0;
  const auto lanes = std::make_shared<const probes::ProbeLanes>(options.concurrency, envs.size());
  plan.lanes = lanes;
  probes::run_concurrently(envs.size(), options.concurrency, [&](std::size_t index) {
    const probes::ProbeLanes::EnvTurn turn(*lanes);
    const auto& env = envs[index];
    const auto activation = activations.get(env, nullptr, plan.resources);
    const auto facts = probes::probe_env(env, activation, plan);
    probes::Json line = {{"name", env.name}, {"prefix", env.prefix.string()}};
    line["activation_problem"] = activation.problem;
    line["activation_output"] = activation.problem_output;
    line["dynamic"] = probes::to_json(facts);
    std::lock_guard lock(output_mutex);
    out << common::json_text(line) << "\n" << std::flush;
    ++done;
    if (progress) {
      err << "[" << done << "/" << envs.size() << "] " << env.name << " probed\n";
    }
  });
  return 0;
}

}  // namespace envcontract::daemon
