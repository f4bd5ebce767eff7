#include "daemon/gate_service.hpp"

#include <chrono>
#include <filesystem>
#include <map>
#include <vector>

#include "common/time_text.hpp"
#include "daemon/agent.hpp"
#include "report/ci_output.hpp"

namespace envcontract::daemon {

namespace {

namespace fs = std::filesystem;

// "/opt/envs/a/" and "/opt/envs/./a" are the same prefix; nothing on disk is
// read to say so (the path comes from any local user).
std::string normal_prefix(const std::string& path) {
  std::string normal = fs::path(path).lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') {
    normal.pop_back();
  }
  return normal;
}

// The host's envs of the agent's last report (a container's are not a
// job's on the host): the prefixes a gate may ask about, with their names.
std::map<fs::path, std::string> host_envs(const report::Report& report) {
  std::map<fs::path, std::string> prefixes;
  for (const auto& env : report.envs) {
    if (!env.container && !env.prefix.empty()) {
      prefixes.emplace(env.prefix, env.name);
    }
  }
  return prefixes;
}

}  // namespace

bool GateService::admit_claimed_record() {
  std::lock_guard lock(m_claimed_mutex);
  const auto now = std::chrono::steady_clock::now();
  if (now - m_claimed_window >= std::chrono::minutes(1)) {
    m_claimed_window = now;
    m_claimed_in_window = 0;
  }
  return ++m_claimed_in_window <= max_claimed_per_minute;
}

GateAnswer GateService::judge(const GateRequest& request, const AgentSnapshot& snapshot,
                              ScanSettings settings) {
  GateAnswer answer;
  const auto refuse = [&answer](GateAnswer::Refusal refusal, std::string message) {
    answer.refusal = refusal;
    answer.message = std::move(message);
    return answer;
  };
  if (!snapshot.contract) {
    return refuse(GateAnswer::Refusal::no_contract,
                  "this agent has no contract in force (GET /api/v1/contract says why)");
  }
  const auto& identity = snapshot.contract->identity;
  if (!request.contract_digest.empty() &&
      request.contract_digest != snapshot.contract->judged_sha256) {
    return refuse(GateAnswer::Refusal::contract_differs,
                  "the job's contract is not this agent's (" + identity.name + " from " +
                      identity.path +
                      " as the agent loads it: another file, checkout or selection of "
                      "integration tests)");
  }
  // Only envs the agent's own scan found: a gate never makes the agent run
  // code from a directory a local user names.
  const auto known =
      snapshot.report ? host_envs(*snapshot.report) : std::map<fs::path, std::string>{};
  std::map<fs::path, std::string> prefixes;
  if (request.env.empty()) {
    prefixes = known;
  } else {
    const std::string wanted = normal_prefix(request.env);
    for (const auto& [prefix, name] : known) {
      if (normal_prefix(prefix.string()) == wanted) {
        prefixes.emplace(prefix, name);
      }
    }
  }
  if (prefixes.empty()) {
    return refuse(
        GateAnswer::Refusal::env_unknown,
        snapshot.report == nullptr ? std::string("this agent has not finished its first scan")
        : request.env.empty()
            ? std::string("this agent's last scan found no env on the host")
            : "this agent's last scan found no env at " + claimed(request.env) + " on the host");
  }
  // Counted before waiting: a local user who opens gates in a loop gets
  // refusals, not a queue of HTTP threads.
  struct InFlight {
    std::atomic<int>& count;
    ~InFlight() { --count; }
  } in_flight{m_in_flight};
  if (++m_in_flight > m_max_in_flight) {
    return refuse(GateAnswer::Refusal::busy,
                  m_max_in_flight == 0
                      ? std::string("this agent answers no gate with fewer than 4 HTTP threads "
                                    "(http_threads)")
                      : std::to_string(m_max_in_flight - 1) + " gates already wait for this agent");
  }

  // Discovery as the agent's scans have it (an env in an image's tree is
  // that image's, run as its rule says), keeping only the env(s) asked
  // about: one that discovery no longer finds there (a prefix swapped for a
  // link, a root no longer configured) is not read. A container's envs are
  // not a job's on the host: containers are not resolved.
  settings.facts.only_envs = prefixes;
  settings.facts.containers.clear();
  settings.facts.container_discovery.reset();
  // Read the env's files every time: what decides the job is never older
  // than the request. Its code runs again when they changed.
  settings.watch_changes = false;
  settings.some_envs_only = true;
  {
    std::lock_guard lock(m_scan_mutex);
    if (m_stopping) {
      return refuse(GateAnswer::Refusal::stopping, "the agent is stopping");
    }
    const auto started = std::chrono::steady_clock::now();
    answer.report = m_scanner.scan(*snapshot.contract, settings);
    answer.elapsed_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    answer.probed = m_scanner.last_probed();
    answer.reused = m_scanner.last_reused();
  }
  // A scan cut short by the agent's stop says nothing of the env.
  if (m_stopping) {
    return refuse(GateAnswer::Refusal::stopping, "the agent is stopping");
  }
  if (answer.report.envs.empty()) {
    return refuse(GateAnswer::Refusal::env_unknown,
                  "this agent's discovery no longer finds " +
                      (request.env.empty() ? std::string("an env on the host")
                                           : "an env at " + claimed(request.env)));
  }

  const auto decision = report::gate_decision(answer.report);
  auto& record = answer.record;
  record.at = common::now_rfc3339();
  record.ci = claimed(request.ci);
  record.job_id = claimed(request.job_id);
  record.job_url = claimed(request.job_url);
  record.env = request.env.empty() ? "" : prefixes.begin()->first.string();
  record.contract_name = identity.name;
  record.contract_sha256 = identity.sha256;
  record.outcome = decision.outcome;
  record.bypass = record.outcome == GateDecisionRecord::Outcome::go ? "" : claimed(request.bypass);
  record.judged_by = GateDecisionRecord::JudgedBy::agent;
  record.why = decision.why;
  return answer;
}

}  // namespace envcontract::daemon
