#include "daemon/scanner.hpp"

#include <set>

#include "common/json_text.hpp"
#include "common/sha256.hpp"
#include "common/time_text.hpp"
#include "contracts/host_judgement.hpp"
#include "daemon/probe_plan.hpp"

namespace envcontract::daemon {

std::string env_fingerprint(const report::Json& env_facts, const std::string& contract_sha256) {
  std::string material = contract_sha256;
  for (const char* key :
       {"prefix", "python", "python_version", "static", "activation", "linkage"}) {
    material += '\0';
    material += env_facts.contains(key) ? common::json_text(env_facts.at(key)) : "";
  }
  return common::sha256_hex(material);
}

report::Json Scanner::scan(const LoadedContract& contract, const ScanSettings& settings,
                           const ScanObserver& observer) {
  std::lock_guard scan_lock(m_scan_mutex);
  const auto started = std::chrono::steady_clock::now();
  auto options = settings.facts;
  options.library_names = library_names_from_contract(contract.contract);
  const auto facts = probes::gather_host_facts(options, m_activations, m_elf_files);
  auto host_json = probes::to_json(facts);
  auto& envs = host_json["envs"];
  auto plan = plan_from_contract(&contract.contract);
  plan.resources = settings.probe_limits;
  if (observer.started) {
    observer.started(facts.envs.size());
  }

  std::mutex progress_mutex;
  std::size_t done = 0;
  std::size_t probed = 0;
  std::set<std::string> seen;
  probes::run_concurrently(facts.envs.size(), settings.concurrency, [&](std::size_t index) {
    const auto& env = facts.envs[index];
    const auto env_started = std::chrono::steady_clock::now();
    const std::string fingerprint = env_fingerprint(envs[index], contract.identity.sha256);
    std::optional<CachedProbe> reusable;
    {
      std::lock_guard lock(progress_mutex);
      seen.insert(env.env.prefix.string());
      const auto cached = m_probes.find(env.env.prefix.string());
      if (settings.reprobe_interval.count() > 0 && cached != m_probes.end() &&
          cached->second.fingerprint == fingerprint &&
          env_started - cached->second.when < settings.reprobe_interval) {
        reusable = cached->second;
      }
    }
    if (observer.env_started) {
      observer.env_started(env.env.name, reusable.has_value());
    }
    CachedProbe result;
    if (reusable) {
      result = std::move(*reusable);
    } else {
      const auto dynamic = probes::probe_env(env.env, env.activation, plan);
      result = {fingerprint, probes::to_json(dynamic), common::now_rfc3339(), env_started};
    }
    std::lock_guard lock(progress_mutex);
    envs[index]["dynamic"] = result.dynamic;
    envs[index]["probed_at"] = result.probed_at;
    probed += reusable ? 0 : 1;
    m_probes[env.env.prefix.string()] = std::move(result);
    ++done;
    if (observer.env_finished) {
      const auto judged = contracts::judge_env(contract.contract, envs[index]);
      observer.env_finished(env.env.name, contracts::to_string(judged.verdict),
                            std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - env_started),
                            done, facts.envs.size());
    }
  });
  std::erase_if(m_probes, [&](const auto& entry) { return !seen.contains(entry.first); });
  m_last_probed = probed;
  m_last_reused = facts.envs.size() - probed;

  const auto judgement = contracts::judge_host(contract.contract, host_json);
  const auto elapsed =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started);
  return report::build_report(contract.identity, judgement, host_json, elapsed.count());
}

}  // namespace envcontract::daemon
