#include "daemon/metrics.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "common/json_fields.hpp"

namespace envcontract::daemon {
namespace {

std::string escape_label(const std::string& value) {
  std::string escaped;
  for (const char c : value) {
    if (c == '\\' || c == '"') {
      escaped += '\\';
      escaped += c;
    } else if (c == '\n') {
      escaped += "\\n";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

// Integers as integers, anything else with full precision (a Unix time in
// seconds needs more than the stream's default six digits).
std::string number(double value) {
  char text[32];
  if (value == static_cast<double>(static_cast<long long>(value)) && value < 1e15 &&
      value > -1e15) {
    std::snprintf(text, sizeof text, "%lld", static_cast<long long>(value));
  } else {
    std::snprintf(text, sizeof text, "%.17g", value);
  }
  return text;
}

// The agent's own footprint, from /proc/self (the names of Prometheus'
// process collector, so dashboards made for other exporters work).
ProcessStats read_process_stats() {
  ProcessStats stats;
  std::ifstream file("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  // The command name in parentheses may hold spaces: the fields start after its ')'.
  const auto close = text.rfind(')');
  if (close == std::string::npos) {
    return stats;
  }
  std::istringstream fields(text.substr(close + 2));
  std::vector<std::string> field;
  for (std::string word; fields >> word;) {
    field.push_back(word);
  }
  // Fields 3.. of proc(5): state is [0], utime [11], stime [12],
  // num_threads [17], starttime [19], vsize [20], rss [21].
  if (field.size() < 22) {
    return stats;
  }
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  stats.cpu_seconds = (std::stod(field[11]) + std::stod(field[12])) / ticks;
  stats.threads = std::stod(field[17]);
  stats.virtual_bytes = std::stod(field[20]);
  stats.resident_bytes = std::stod(field[21]) * page;
  // The boot time (btime) plus the start in ticks since boot: the same
  // value at every scrape, so changes() over it counts restarts. Read once:
  // /proc/stat's interrupt line is long.
  static const double boot_time = [] {
    std::ifstream boot_file("/proc/stat");
    for (std::string line; std::getline(boot_file, line);) {
      if (line.starts_with("btime ")) {
        return std::stod(line.substr(6));
      }
    }
    return 0.0;
  }();
  stats.start_time = boot_time + std::stod(field[19]) / ticks;
  std::error_code error;
  for (std::filesystem::directory_iterator it("/proc/self/fd", error), end; !error && it != end;
       it.increment(error)) {
    ++stats.open_fds;
  }
  stats.read = true;
  return stats;
}

// The footprint at most a second old: reading /proc/self for every scrape
// of a busy endpoint would cost more than answering it.
ProcessStats process_stats() {
  static std::mutex mutex;
  static ProcessStats cached;
  static std::chrono::steady_clock::time_point read_at;
  std::lock_guard lock(mutex);
  const auto now = std::chrono::steady_clock::now();
  if (!cached.read || now - read_at >= std::chrono::seconds(1)) {
    cached = read_process_stats();
    read_at = now;
  }
  return cached;
}

class Exposition {
 public:
  void family(const std::string& name, const std::string& type, const std::string& help) {
    m_out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  }
  void sample(const std::string& name, const std::map<std::string, std::string>& labels,
              double value) {
    m_out << name;
    if (!labels.empty()) {
      m_out << "{";
      bool first = true;
      for (const auto& [key, label] : labels) {
        m_out << (first ? "" : ",") << key << "=\"" << escape_label(label) << "\"";
        first = false;
      }
      m_out << "}";
    }
    m_out << " " << number(value) << "\n";
  }
  // A family of one unlabelled sample.
  void single(const std::string& name, const std::string& type, const std::string& help,
              double value) {
    family(name, type, help);
    sample(name, {}, value);
  }
  std::string text() const { return m_out.str(); }

 private:
  std::ostringstream m_out;
};

}  // namespace

std::string render_report_metrics(const AgentSnapshot& snapshot, const std::string& version) {
  using contracts::CheckStatus;
  Exposition out;
  const report::Report none;
  const report::Report& report = snapshot.report ? *snapshot.report : none;
  out.family("envcontract_info", "gauge",
             "The agent's version, the contract in force and the host's image reference.");
  out.sample("envcontract_info",
             {{"version", version},
              {"contract", snapshot.contract ? snapshot.contract->identity.name : ""},
              {"contract_sha256", snapshot.contract ? snapshot.contract->identity.sha256 : ""},
              {"platform", snapshot.contract ? snapshot.contract->identity.platform : ""},
              {"image", report.image.value}},
             1);
  // No report yet: no verdict is 1.
  const std::string verdict = snapshot.report ? to_string(report.verdict) : "";
  out.family("envcontract_host_verdict", "gauge",
             "1 for the host's verdict of the latest scan (compliant, drift, error).");
  for (const char* each : {"compliant", "drift", "error"}) {
    out.sample("envcontract_host_verdict", {{"verdict", each}}, verdict == each ? 1 : 0);
  }
  out.single("envcontract_host_compliant", "gauge", "1 when the host complies with its contract.",
             verdict == "compliant" ? 1 : 0);

  std::map<std::string, int> by_verdict = {{"compliant", 0}, {"drift", 0}, {"error", 0}};
  out.family("envcontract_env_compliant", "gauge", "1 when the env complies, per env.");
  // An env of a container target also carries its container's name.
  const auto env_labels = [](const report::EnvReport& env) {
    std::map<std::string, std::string> labels = {{"env", env.name}};
    if (env.container && !env.container->empty()) {
      labels["container"] = *env.container;
    }
    return labels;
  };
  for (const auto& env : report.envs) {
    ++by_verdict[contracts::to_string(env.verdict)];
    out.sample("envcontract_env_compliant", env_labels(env),
               env.verdict == contracts::EnvVerdict::compliant ? 1 : 0);
  }
  if (!report.containers.empty()) {
    out.family("envcontract_container_info", "gauge",
               "Each container target (docs/containers.md) with the image reference it runs.");
    for (const auto& container : report.containers) {
      out.sample("envcontract_container_info",
                 {{"container", container.name}, {"image", container.image.value}}, 1);
    }
    out.family("envcontract_container_up", "gauge",
               "1 when the container target could be scanned (running, its runtime answered).");
    for (const auto& container : report.containers) {
      out.sample("envcontract_container_up", {{"container", container.name}},
                 container.problem ? 0 : 1);
    }
  }
  out.family("envcontract_envs", "gauge", "Envs found by the latest scan, by verdict.");
  for (const auto& [each, count] : by_verdict) {
    out.sample("envcontract_envs", {{"verdict", each}}, count);
  }

  out.family("envcontract_check_failing", "gauge",
             "1 per required or advisory check that fails or cannot be judged, with its cause.");
  const auto failing = [&](std::map<std::string, std::string> scope,
                           const std::vector<report::CheckReport>& checks) {
    for (const auto& check : checks) {
      if (check.status != CheckStatus::fail && check.status != CheckStatus::error) {
        continue;
      }
      auto labels = scope;
      labels.insert({{"check", check.id},
                     {"status", contracts::to_string(check.status)},
                     {"cause", check.diagnosis ? check.diagnosis->cause : ""},
                     {"severity", contracts::to_string(check.severity)}});
      out.sample("envcontract_check_failing", labels, 1);
    }
  };
  for (const auto& target : report.targets) {
    failing({{"target", target.name}}, target.checks);
  }
  for (const auto& container : report.containers) {
    for (const auto& target : container.targets) {
      failing({{"container", container.name}, {"target", target.name}}, target.checks);
    }
  }
  for (const auto& env : report.envs) {
    failing(env_labels(env), env.checks);
  }
  return out.text();
}

AgentFigures agent_figures(const AgentSnapshot& snapshot, const Agent& agent) {
  const AgentCounters& counters = agent.counters();
  const WebhookCounters* webhooks = agent.webhook_counters();
  AgentFigures figures;
  figures.scans = static_cast<double>(counters.scans.load());
  figures.scan_failures = static_cast<double>(counters.scan_failures.load());
  figures.scanning = snapshot.scanning;
  figures.last_scan_seconds = counters.last_scan_seconds.load();
  figures.last_scan_finished = counters.last_scan_finished.load();
  figures.envs_probed = static_cast<double>(counters.envs_probed.load());
  figures.envs_reused = static_cast<double>(counters.envs_reused.load());
  figures.reloads = static_cast<double>(counters.reloads.load());
  figures.reload_failures = static_cast<double>(counters.reload_failures.load());
  figures.store_failures = static_cast<double>(counters.store_failures.load());
  figures.reload_error = !snapshot.reload_error.empty();
  if (webhooks != nullptr) {
    figures.webhooks = true;
    figures.webhooks_delivered = static_cast<double>(webhooks->delivered.load());
    figures.webhooks_failed = static_cast<double>(webhooks->failed.load());
    figures.webhooks_dropped = static_cast<double>(webhooks->dropped.load());
  }
  for (std::size_t i = 0; i < figures.gate_decisions.size(); ++i) {
    figures.gate_decisions[i] = static_cast<double>(counters.gate_decisions[i].load());
  }
  const auto seconds = [](std::chrono::milliseconds span) {
    return std::chrono::duration<double>(span).count();
  };
  figures.scan_interval_seconds = seconds(agent.config().interval);
  figures.scan_deadline_seconds = seconds(agent.config().scan_deadline);
  figures.process = process_stats();
  return figures;
}

std::string render_agent_metrics(const AgentFigures& figures) {
  Exposition out;
  out.single("envcontract_scans_total", "counter", "Scans finished since the agent started.",
             figures.scans);
  out.single("envcontract_scan_failures_total", "counter", "Scans that failed to finish.",
             figures.scan_failures);
  out.single("envcontract_scan_in_progress", "gauge", "1 while a scan runs.",
             figures.scanning ? 1 : 0);
  out.single("envcontract_last_scan_duration_seconds", "gauge", "How long the last scan took.",
             figures.last_scan_seconds);
  out.single("envcontract_last_scan_timestamp_seconds", "gauge",
             "When the last scan finished (Unix time); 0 before the first.",
             figures.last_scan_finished);
  out.single("envcontract_scan_interval_seconds", "gauge",
             "How often the agent scans unasked (its `interval`).", figures.scan_interval_seconds);
  out.single("envcontract_scan_deadline_seconds", "gauge",
             "The longest a scan may run before the agent's watchdog stops it (`scan_deadline`).",
             figures.scan_deadline_seconds);
  out.single("envcontract_envs_probed_total", "counter",
             "Envs whose dynamic probes ran (their files or the reprobe interval said so).",
             figures.envs_probed);
  out.single("envcontract_envs_reused_total", "counter",
             "Envs whose dynamic facts were reused because nothing about them changed.",
             figures.envs_reused);
  out.single("envcontract_contract_reloads_total", "counter", "Contract reloads that took effect.",
             figures.reloads);
  out.single("envcontract_contract_reload_failures_total", "counter",
             "Contract reloads rejected because the new contract was invalid.",
             figures.reload_failures);
  out.single("envcontract_store_failures_total", "counter",
             "Scans the agent could not record in its database (served, not kept).",
             figures.store_failures);
  out.single("envcontract_contract_reload_error", "gauge",
             "1 while the latest contract file is invalid (the last good one is in force).",
             figures.reload_error ? 1 : 0);

  if (figures.webhooks) {
    out.family("envcontract_webhook_deliveries_total", "counter",
               "Webhook deliveries by outcome: delivered (2xx), failed (every attempt, or a "
               "refusal), dropped (pushed out of a full queue).");
    out.sample("envcontract_webhook_deliveries_total", {{"outcome", "delivered"}},
               figures.webhooks_delivered);
    out.sample("envcontract_webhook_deliveries_total", {{"outcome", "failed"}},
               figures.webhooks_failed);
    out.sample("envcontract_webhook_deliveries_total", {{"outcome", "dropped"}},
               figures.webhooks_dropped);
  }

  // Every combination that can happen, from zero: a rate of stopped jobs
  // needs the series before the first one.
  out.family("envcontract_gate_decisions_total", "counter",
             "CI gate decisions (docs/ci.md) by outcome (go, drift, unknown), whether a stopped "
             "job was let start anyway (bypassed), and who judged the env (the agent, or the "
             "job's gate under a contract the agent does not hold).");
  using Outcome = GateDecisionRecord::Outcome;
  using JudgedBy = GateDecisionRecord::JudgedBy;
  for (const auto outcome : {Outcome::go, Outcome::drift, Outcome::unknown}) {
    for (const bool bypassed : {false, true}) {
      if (outcome == Outcome::go && bypassed) {
        continue;
      }
      for (const auto judged_by : {JudgedBy::agent, JudgedBy::job}) {
        out.sample("envcontract_gate_decisions_total",
                   {{"outcome", to_string(outcome)},
                    {"bypassed", bypassed ? "true" : "false"},
                    {"judged_by", to_string(judged_by)}},
                   figures.gate_decisions[gate_counter_index(outcome, bypassed, judged_by)]);
      }
    }
  }

  if (const auto& process = figures.process; process.read) {
    out.family("process_cpu_seconds_total", "counter",
               "The agent's user and system CPU time in seconds (its probes not included).");
    out.sample("process_cpu_seconds_total", {}, process.cpu_seconds);
    out.family("process_resident_memory_bytes", "gauge", "The agent's resident memory in bytes.");
    out.sample("process_resident_memory_bytes", {}, process.resident_bytes);
    out.family("process_virtual_memory_bytes", "gauge", "The agent's virtual memory in bytes.");
    out.sample("process_virtual_memory_bytes", {}, process.virtual_bytes);
    out.family("process_threads", "gauge", "The agent's threads.");
    out.sample("process_threads", {}, process.threads);
    out.family("process_open_fds", "gauge", "The agent's open file descriptors.");
    out.sample("process_open_fds", {}, process.open_fds);
    out.family("process_start_time_seconds", "gauge",
               "When the agent started, in seconds since the Unix epoch.");
    out.sample("process_start_time_seconds", {}, process.start_time);
  }
  return out.text();
}

std::string render_metrics(const Agent& agent, const std::string& version) {
  const auto snapshot = agent.snapshot();
  return render_report_metrics(*snapshot, version) +
         render_agent_metrics(agent_figures(*snapshot, agent));
}

}  // namespace envcontract::daemon
