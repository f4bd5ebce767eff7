#include "daemon/agent.hpp"

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/json_text.hpp"
#include "common/shown_path.hpp"
#include "common/time_text.hpp"
#include "daemon/contract_detection.hpp"
#include "daemon/provision_command.hpp"
#include "daemon/secret_file.hpp"
#include "daemon/shared_flags.hpp"
#include "daemon/transitions.hpp"
#include "provisioning/plan.hpp"
#include "provisioning/provisioner.hpp"
#include "report/report_json.hpp"

namespace envcontract::daemon {

namespace {

// The plan of a report, or null when it cannot be made (a report of an
// older schema, say): the plan is an extra, never a reason to fail a scan.
std::shared_ptr<const report::Json> plan_of(const report::Report& report,
                                            const ContractHandle& contract) {
  if (!contract) {
    return nullptr;
  }
  try {
    return std::make_shared<const report::Json>(
        provisioning::to_json(provisioning::build_plan(report, contract->contract)));
  } catch (const std::exception& e) {
    spdlog::warn("no plan for this report: {}", e.what());
    return nullptr;
  }
}

using Clock = std::chrono::steady_clock;

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

constexpr std::size_t k_kept_tickets = 200;

ScanSettings settings_from(const AgentConfig& config) {
  ScanSettings settings;
  settings.facts = host_facts_options(config);
  settings.probe_limits = config.probe_limits;
  settings.concurrency = config.concurrency;
  settings.reprobe_interval =
      std::chrono::duration_cast<std::chrono::seconds>(config.reprobe_interval);
  settings.watch_changes = config.watch_file_changes;
  settings.env_deadline = config.env_deadline;
  settings.scan_deadline = config.scan_deadline;
  settings.facts.reading_deadline = config.reading_deadline;
  return settings;
}

}  // namespace

Agent::Agent(AgentConfig config) : m_config(std::move(config)) {
  m_snapshot = std::make_shared<const AgentSnapshot>();
  m_gate.limit_in_flight(m_config.http_threads);
}

Agent::~Agent() {
  stop();
}

std::string Agent::start() {
  std::string source;
  if (m_config.contract == "auto") {
    auto detected = detect_contract(m_config.contracts_dir, m_config.detect_root);
    if (!detected) {
      return detected.error();
    }
    const auto& chosen = detected.value();
    m_contract_file = chosen.file;
    source = "auto: " + chosen.file.string() + " (" + chosen.why + ")";
  } else {
    m_contract_file = m_config.contract;
    source = m_contract_file.string();
  }
  m_contract_signature = contract_signature();
  auto loaded = load_contract(m_contract_file, m_config.run_integration_tests, m_config.checkout);
  if (!loaded) {
    return "the contract is invalid:\n" + loaded.error();
  }
  if (!m_config.token_file.empty()) {
    auto token = read_secret_file(m_config.token_file, "token file");
    if (!token) {
      return token.error();
    }
    m_token = std::move(token.value());
  }
  if (!m_config.webhooks.empty()) {
    auto webhooks =
        Webhooks::start(m_config.webhooks, std::string("envcontractd/") + ENVCONTRACT_VERSION);
    if (!webhooks) {
      return webhooks.error();
    }
    m_webhooks = std::move(webhooks.value());
  }
  auto opened = Store::open(m_config.database, m_config.flapping, m_config.store);
  if (!opened) {
    return opened.error();
  }
  m_store = std::move(opened.value());

  auto contract = loaded.value();
  spdlog::info("contract {} ({}), sha256 {}", contract->identity.name, source,
               contract->identity.sha256.substr(0, 12));
  std::shared_ptr<const report::Report> previous;
  std::shared_ptr<const std::string> previous_text;
  if (auto stored = m_store->latest_report()) {
    spdlog::info("serving the stored report of scan {} until the first scan finishes",
                 stored->scan_id.value_or(0));
    previous_text =
        std::make_shared<const std::string>(common::json_text(report::to_json(*stored)));
    previous = std::make_shared<const report::Report>(std::move(*stored));
    // The last scan's time survives a restart, so that "no scan for an
    // hour" alerts see an agent that restarts before each scan ends.
    if (const auto at = common::parse_rfc3339(previous->scanned_at)) {
      m_counters.last_scan_finished = std::chrono::duration<double>(at->time_since_epoch()).count();
    }
  }
  publish([&](AgentSnapshot& snapshot) {
    snapshot.contract = contract;
    snapshot.contract_loaded_at = common::now_rfc3339();
    snapshot.contract_source = source;
    snapshot.report = previous;
    snapshot.report_text = previous_text;
    snapshot.plan = previous ? plan_of(*previous, contract) : nullptr;
  });
  if (m_config.provisioning.enabled) {
    m_provision_jobs = std::make_unique<ProvisionJobs>(
        [this](const ProvisionJob& job, const process::Cancellation& cancel,
               const std::function<void(const std::string&)>& print) {
          return run_provision_job(job, cancel, print);
        });
  }
  request_scan("startup");
  m_last_turn = steady_ns();
  m_running = true;
  m_thread = std::thread([this] { run(); });
  return "";
}

void Agent::stop() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  // A running scan ends within a poll: its probes are killed, and what it
  // returns is neither stored nor served (it is a partial picture).
  m_scanner.cancel("the agent is stopping");
  m_gate.stop("the agent is stopping");
  if (m_provision_jobs) {
    m_provision_jobs->stop();  // kills a running step or scan, and waits
  }
  m_wake.notify_all();
  if (m_thread.joinable()) {
    m_thread.join();
  }
}

common::Result<std::int64_t> Agent::request_provision(const std::string& action,
                                                      const std::string& name,
                                                      const std::string& env,
                                                      const std::string& requested_by) {
  if (!m_provision_jobs) {
    return common::Error{"provisioning is not enabled on this agent (provisioning.enabled)"};
  }
  ProvisionJob job;
  job.action = action;
  job.name = name;
  job.env = env;
  job.requested_by = requested_by;
  return m_provision_jobs->submit(std::move(job));
}

std::string Agent::provisioning_problem() const {
  const auto& provisioning = m_config.provisioning;
  if (provisioning.envs_dir.empty()) {
    return "the agent's config names no provisioning.envs_dir: new envs have nowhere to go";
  }
  if (::geteuid() == 0 && provisioning.user.empty()) {
    return "the agent's config names no provisioning.user: provisioning never runs as root";
  }
  if (::geteuid() == 0) {
    const auto user = process::run_as_user(provisioning.user);
    if (!user.problem.empty()) {
      return "provisioning.user: " + user.problem;
    }
    return provisioning::provisioning_user_problem(user);
  }
  return "";
}

std::optional<ProvisionJob> Agent::provision_job(std::int64_t id) const {
  return m_provision_jobs ? m_provision_jobs->get(id) : std::nullopt;
}

// A provision or promotion asked for over HTTP: the same verb as on the
// command line, with the contract in force and the agent's settings, its
// printing turned into the job's lines.
int Agent::run_provision_job(const ProvisionJob& job, const process::Cancellation& cancel,
                             const std::function<void(const std::string&)>& print) {
  const auto current = snapshot();
  if (!current->contract) {
    print("no contract is loaded");
    return 2;
  }
  ProvisioningCommandOptions options;
  options.contract = current->contract->identity.path;
  // The contract in force, as the agent judges with it (its selected CI
  // entries included), not the file as it may be now.
  options.loaded = current->contract;
  options.recorder = [this](const report::Json& record) { m_store->record_provision(record); };
  options.scan = settings_from(m_config);
  options.provisioning = m_config.provisioning;
  options.database = m_config.database;
  options.requested_by = job.requested_by;
  options.cancellation = &cancel;
  spdlog::info("{} {} asked by {}", job.action, job.name, job.requested_by);
  LineStream out(print);
  const int status = job.action == "promote"
                         ? run_promote(options, job.env, job.name, out, out)
                         : run_provision_command(options, job.name, true, out, out);
  spdlog::info("{} {}: exit {}", job.action, job.name, status);
  return status;
}

std::int64_t Agent::request_scan(const std::string& reason) {
  std::int64_t id = 0;
  {
    std::lock_guard lock(m_mutex);
    if (!m_queued.empty()) {
      return m_queued.back();  // a queued scan will see whatever prompted this one too
    }
    id = queue_ticket_locked(reason);
  }
  m_wake.notify_all();
  return id;
}

std::int64_t Agent::queue_ticket_locked(const std::string& reason) {
  // The one place tickets are made, so the one place they are trimmed: an
  // agent scanning every 5 minutes for a year keeps 200, not 100,000.
  const std::int64_t id = m_next_ticket++;
  m_tickets[id] = ScanTicket{id, "queued", reason, common::now_rfc3339(), "", std::nullopt, ""};
  m_queued.push_back(id);
  while (m_tickets.size() > k_kept_tickets) {
    m_tickets.erase(m_tickets.begin());
  }
  return id;
}

std::size_t Agent::ticket_count() const {
  std::lock_guard lock(m_mutex);
  return m_tickets.size();
}

std::optional<ScanTicket> Agent::ticket(std::int64_t id) const {
  std::lock_guard lock(m_mutex);
  const auto found = m_tickets.find(id);
  return found == m_tickets.end() ? std::nullopt : std::optional(found->second);
}

void Agent::request_reload() {
  {
    std::lock_guard lock(m_mutex);
    m_reload_requested = true;
  }
  m_wake.notify_all();
}

std::shared_ptr<const AgentSnapshot> Agent::snapshot() const {
  std::lock_guard lock(m_snapshot_mutex);
  return m_snapshot;
}

report::Json Agent::provisions(std::size_t limit) {
  return m_store->provisions(limit);
}

report::Json Agent::history(const HistoryQuery& query) {
  return m_store->history(query);
}

std::size_t gate_counter_index(GateDecisionRecord::Outcome outcome, bool bypassed,
                               GateDecisionRecord::JudgedBy judged_by) {
  return static_cast<std::size_t>(outcome) * 4 + (bypassed ? 2 : 0) +
         (judged_by == GateDecisionRecord::JudgedBy::job ? 1 : 0);
}

namespace {

// What a stored decision is counted as, and logged as.
void counted(AgentCounters& counters, const GateDecisionRecord& record) {
  const auto index = gate_counter_index(record.outcome, !record.bypass.empty(), record.judged_by);
  ++counters.gate_decisions[index];
  spdlog::info("gate: {} for {} (job {} {}, judged by the {}){}", to_string(record.outcome),
               record.env.empty() ? "every env" : record.env, record.ci, record.job_id,
               to_string(record.judged_by),
               record.bypass.empty() ? "" : ", bypassed: " + record.bypass);
}

}  // namespace

GateAnswer Agent::gate(const GateRequest& request) {
  auto answer = m_gate.judge(request, *snapshot(), settings_from(m_config));
  if (answer.refusal != GateAnswer::Refusal::none) {
    return answer;
  }
  try {
    answer.record.id = m_store->record_gate_decision(answer.record);
  } catch (const std::exception& e) {
    ++m_counters.store_failures;
    spdlog::warn("the gate decision for {} was not recorded: {}", answer.record.env, e.what());
  }
  counted(m_counters, answer.record);
  return answer;
}

common::Result<std::int64_t> Agent::record_job_gate_decision(GateDecisionRecord record) {
  record.judged_by = GateDecisionRecord::JudgedBy::job;
  record.at = common::now_rfc3339();
  try {
    record.id = m_store->record_gate_decision(record);
  } catch (const std::exception& e) {
    ++m_counters.store_failures;
    return common::Error{std::string("the decision was not recorded: ") + e.what()};
  }
  counted(m_counters, record);
  return record.id;
}

std::vector<GateDecisionRecord> Agent::gate_decisions(const GateDecisionQuery& query) {
  return m_store->gate_decisions(query);
}

std::vector<std::string> Agent::history_names(const std::string& scope) {
  return m_store->history_names(scope);
}

bool Agent::stopping() const {
  std::lock_guard lock(m_mutex);
  return m_stopping;
}

bool Agent::token_matches(const std::string& presented) const {
  if (presented.size() != m_token.size()) {
    return false;
  }
  unsigned char difference = 0;
  for (std::size_t i = 0; i < presented.size(); ++i) {
    difference |= static_cast<unsigned char>(presented[i] ^ m_token[i]);
  }
  return difference == 0;
}

void Agent::publish(const std::function<void(AgentSnapshot&)>& change) {
  std::lock_guard lock(m_snapshot_mutex);
  auto next = std::make_shared<AgentSnapshot>(*m_snapshot);
  change(*next);
  m_snapshot = std::move(next);
}

std::optional<Agent::FileSignature> Agent::contract_signature() const {
  struct stat info {};
  if (::stat(m_contract_file.c_str(), &info) != 0) {
    return std::nullopt;
  }
  return FileSignature{
      static_cast<std::uintmax_t>(info.st_ino), static_cast<std::uintmax_t>(info.st_size),
      static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec};
}

void Agent::reload_contract(const std::string& why) {
  auto loaded = load_contract(m_contract_file, m_config.run_integration_tests, m_config.checkout);
  if (!loaded) {
    ++m_counters.reload_failures;
    spdlog::error("{}: the new contract is invalid; the last good one stays in force:\n{}", why,
                  loaded.error());
    publish([&](AgentSnapshot& snapshot) { snapshot.reload_error = loaded.error(); });
    return;
  }
  auto contract = loaded.value();
  const auto current = snapshot()->contract;
  publish([&](AgentSnapshot& snapshot) { snapshot.reload_error.clear(); });
  if (current && current->identity.sha256 == contract->identity.sha256) {
    spdlog::debug("{}: the contract is unchanged", why);
    return;
  }
  ++m_counters.reloads;
  spdlog::info("{}: contract {} reloaded, sha256 {}", why, contract->identity.name,
               contract->identity.sha256.substr(0, 12));
  publish([&](AgentSnapshot& snapshot) {
    snapshot.contract = contract;
    snapshot.contract_loaded_at = common::now_rfc3339();
  });
  request_scan("contract reloaded");
}

std::string Agent::liveness_problem() const {
  using std::chrono::duration_cast;
  using std::chrono::nanoseconds;
  using std::chrono::seconds;
  if (!m_running) {
    return "the scheduler is not running";
  }
  const auto now = steady_ns();
  if (const auto started = m_scan_started.load(); started != 0) {
    const auto bound = duration_cast<nanoseconds>(m_config.scan_deadline + std::chrono::minutes(1));
    if (now - started > bound.count()) {
      return "a scan has run for " + std::to_string((now - started) / 1'000'000'000) +
             " s, a minute past scan_deadline: the scheduler is stuck";
    }
    return "";
  }
  const auto bound = duration_cast<nanoseconds>(3 * m_config.contract_poll + seconds(5));
  if (const auto idle = now - m_last_turn.load(); idle > bound.count()) {
    return "the scheduler's loop has not turned for " + std::to_string(idle / 1'000'000'000) +
           " s (it turns every contract_poll): it is stuck";
  }
  return "";
}

void Agent::run() {
  std::unique_lock lock(m_mutex);
  auto next_due = Clock::now() + m_config.interval;  // the startup scan is queued already
  while (!m_stopping) {
    m_last_turn = steady_ns();
    const auto wake_at = std::min(next_due, Clock::now() + m_config.contract_poll);
    m_wake.wait_until(lock, wake_at,
                      [&] { return m_stopping || m_reload_requested || !m_queued.empty(); });
    if (m_stopping) {
      break;
    }
    const auto signature = contract_signature();
    const bool file_changed = signature != m_contract_signature;
    if (m_reload_requested || file_changed) {
      const std::string why = m_reload_requested ? "SIGHUP" : "contract file changed";
      m_reload_requested = false;
      m_contract_signature = signature;
      lock.unlock();
      reload_contract(why);
      lock.lock();
    }
    if (Clock::now() >= next_due) {
      next_due = Clock::now() + m_config.interval;
      if (m_queued.empty()) {
        queue_ticket_locked("interval");
      }
    }
    if (!m_queued.empty()) {
      m_scan_started = steady_ns();
      run_scan(lock);
      // The turn first: a reader between the two must not see an idle loop
      // whose last turn is from before the scan.
      m_last_turn = steady_ns();
      m_scan_started = 0;
    }
  }
  m_running = false;
}

void Agent::run_scan(std::unique_lock<std::mutex>& lock) {
  const std::vector<std::int64_t> batch(m_queued.begin(), m_queued.end());
  m_queued.clear();
  for (const auto id : batch) {
    m_tickets[id].state = "running";
  }
  lock.unlock();

  const auto started = Clock::now();
  const auto contract = snapshot()->contract;
  auto previous = snapshot()->report;
  publish([&](AgentSnapshot& snapshot) {
    snapshot.scanning = true;
    snapshot.scan_started_at = common::now_rfc3339();
  });
  std::optional<std::int64_t> scan_id;
  std::string failure;
  try {
    ScanObserver observer;
    if (!previous) {
      // Nothing to serve yet: people see each env as it is judged.
      observer.partial_report = [this](std::string partial) {
        auto text = std::make_shared<const std::string>(std::move(partial));
        publish([&](AgentSnapshot& snapshot) { snapshot.partial_text = text; });
      };
    }
    auto report = m_scanner.scan(*contract, settings_from(m_config), observer);
    if (stopping()) {
      spdlog::info("scan cut short by shutdown: not recorded");
      publish([&](AgentSnapshot& snapshot) {
        snapshot.scanning = false;
        snapshot.partial_text.reset();
      });
      lock.lock();
      return;
    }
    // The report's text as the store wrote it; made here only when the
    // store could not record it (the report then says so).
    std::shared_ptr<const std::string> text;
    try {
      scan_id = m_store->record_scan(report, &text);
    } catch (const std::exception& e) {
      // The report is still served, saying it was not recorded; the next
      // scan writes again (a full disk may have room by then).
      ++m_counters.store_failures;
      spdlog::error("cannot record the scan in {}: {}", m_config.database.string(), e.what());
      report.not_persisted = std::string("the agent could not record this scan in ") +
                             m_config.database.string() + ": " + e.what();
      // Its id was never committed: the next recorded scan takes it.
      report.scan_id.reset();
      text.reset();
    }
    const auto seconds = std::chrono::duration<double>(Clock::now() - started).count();
    m_counters.last_scan_seconds = seconds;
    m_counters.last_scan_finished =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    m_counters.envs_probed += static_cast<std::int64_t>(m_scanner.last_probed());
    m_counters.envs_reused += static_cast<std::int64_t>(m_scanner.last_reused());
    ++m_counters.scans;
    spdlog::info("scan {}: {}, {} envs ({} probed, {} unchanged) in {:.1f} s", scan_id.value_or(0),
                 to_string(report.verdict), report.envs.size(), m_scanner.last_probed(),
                 m_scanner.last_reused(), seconds);
    if (m_webhooks) {
      // Queued, never waited for: a slow receiver cannot hold up scanning.
      if (auto events = transitions(previous.get(), report); !events.empty()) {
        m_webhooks->post({{"host", report.host},
                          {"scan_id", report.scan_id ? report::Json(*report.scan_id) : nullptr},
                          {"contract", contract->identity.name},
                          {"at", common::now_rfc3339()},
                          {"events", std::move(events)}});
      }
    }
    if (!text) {
      text = std::make_shared<const std::string>(common::json_text(report::to_json(report)));
    }
    auto plan = plan_of(report, contract);
    auto shared = std::make_shared<const report::Report>(std::move(report));
    publish([&](AgentSnapshot& snapshot) {
      snapshot.report = shared;
      snapshot.plan = plan;
      snapshot.report_text = text;
      snapshot.partial_text.reset();
      snapshot.scanning = false;
    });
  } catch (const std::exception& e) {
    failure = e.what();
    ++m_counters.scan_failures;
    spdlog::error("scan failed: {}", failure);
    // A partial report of a scan that failed would say "running" forever.
    publish([&](AgentSnapshot& snapshot) {
      snapshot.scanning = false;
      snapshot.partial_text.reset();
    });
  }
  // What the scan held (every env's facts, the JSON built from them) was
  // freed into malloc's arenas, one per thread that worked: give it back,
  // so that the idle agent's resident memory is what it keeps. The report
  // it replaced goes first (unless a request still reads it).
  previous.reset();
  ::malloc_trim(0);

  lock.lock();
  for (const auto id : batch) {
    const auto found = m_tickets.find(id);
    if (found == m_tickets.end()) {
      continue;
    }
    found->second.state = failure.empty() ? "done" : "failed";
    found->second.error = failure;
    found->second.scan_id = scan_id;
    found->second.finished_at = common::now_rfc3339();
  }
}

}  // namespace envcontract::daemon
