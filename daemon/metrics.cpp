#include "daemon/metrics.hpp"

#include <cstdio>
#include <map>
#include <sstream>

#include "contracts/env_facts.hpp"

namespace envcontract::daemon {
namespace {

using contracts::array_field;
using contracts::string_field;

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
  std::string text() const { return m_out.str(); }

 private:
  std::ostringstream m_out;
};

}  // namespace

std::string render_metrics(const AgentSnapshot& snapshot, const AgentCounters& counters,
                           const std::string& version) {
  Exposition out;
  out.family("envcontract_info", "gauge", "The agent's version and the contract in force.");
  out.sample("envcontract_info",
             {{"version", version},
              {"contract", snapshot.contract ? snapshot.contract->identity.name : ""},
              {"contract_sha256", snapshot.contract ? snapshot.contract->identity.sha256 : ""}},
             1);

  const report::Json empty = report::Json::object();
  const report::Json& report = snapshot.report ? *snapshot.report : empty;
  const std::string verdict = string_field(report, "verdict");
  out.family("envcontract_host_verdict", "gauge",
             "1 for the host's verdict of the latest scan (compliant, drift, error).");
  for (const char* each : {"compliant", "drift", "error"}) {
    out.sample("envcontract_host_verdict", {{"verdict", each}}, verdict == each ? 1 : 0);
  }
  out.family("envcontract_host_compliant", "gauge", "1 when the host complies with its contract.");
  out.sample("envcontract_host_compliant", {}, verdict == "compliant" ? 1 : 0);

  std::map<std::string, int> by_verdict = {{"compliant", 0}, {"drift", 0}, {"error", 0}};
  out.family("envcontract_env_compliant", "gauge", "1 when the env complies, per env.");
  for (const auto& env : array_field(report, "envs")) {
    const std::string env_verdict = string_field(env, "verdict");
    ++by_verdict[env_verdict];
    out.sample("envcontract_env_compliant", {{"env", string_field(env, "name")}},
               env_verdict == "compliant" ? 1 : 0);
  }
  out.family("envcontract_envs", "gauge", "Envs found by the latest scan, by verdict.");
  for (const auto& [each, count] : by_verdict) {
    out.sample("envcontract_envs", {{"verdict", each}}, count);
  }

  out.family("envcontract_check_failing", "gauge",
             "1 per required or advisory check that fails or cannot be judged, with its cause.");
  const auto failing = [&](const std::string& scope, const std::string& name,
                           const report::Json& checks) {
    for (const auto& check : checks) {
      const std::string status = string_field(check, "status");
      if (status != "fail" && status != "error") {
        continue;
      }
      const auto& diagnosis = check.contains("diagnosis") ? check.at("diagnosis") : empty;
      out.sample("envcontract_check_failing",
                 {{scope, name},
                  {"check", string_field(check, "id")},
                  {"status", status},
                  {"cause", string_field(diagnosis, "cause")},
                  {"severity", string_field(check, "severity")}},
                 1);
    }
  };
  for (const auto& target : array_field(report, "targets")) {
    failing("target", string_field(target, "name"), array_field(target, "checks"));
  }
  for (const auto& env : array_field(report, "envs")) {
    failing("env", string_field(env, "name"), array_field(env, "checks"));
  }

  out.family("envcontract_scans_total", "counter", "Scans finished since the agent started.");
  out.sample("envcontract_scans_total", {}, static_cast<double>(counters.scans.load()));
  out.family("envcontract_scan_failures_total", "counter", "Scans that failed to finish.");
  out.sample("envcontract_scan_failures_total", {},
             static_cast<double>(counters.scan_failures.load()));
  out.family("envcontract_scan_in_progress", "gauge", "1 while a scan runs.");
  out.sample("envcontract_scan_in_progress", {}, snapshot.scanning ? 1 : 0);
  out.family("envcontract_last_scan_duration_seconds", "gauge", "How long the last scan took.");
  out.sample("envcontract_last_scan_duration_seconds", {}, counters.last_scan_seconds.load());
  out.family("envcontract_last_scan_timestamp_seconds", "gauge",
             "When the last scan finished (Unix time); 0 before the first.");
  out.sample("envcontract_last_scan_timestamp_seconds", {}, counters.last_scan_finished.load());
  out.family("envcontract_envs_probed_total", "counter",
             "Envs whose dynamic probes ran (their files or the reprobe interval said so).");
  out.sample("envcontract_envs_probed_total", {}, static_cast<double>(counters.envs_probed.load()));
  out.family("envcontract_envs_reused_total", "counter",
             "Envs whose dynamic facts were reused because nothing about them changed.");
  out.sample("envcontract_envs_reused_total", {}, static_cast<double>(counters.envs_reused.load()));
  out.family("envcontract_contract_reloads_total", "counter", "Contract reloads that took effect.");
  out.sample("envcontract_contract_reloads_total", {},
             static_cast<double>(counters.reloads.load()));
  out.family("envcontract_contract_reload_failures_total", "counter",
             "Contract reloads rejected because the new contract was invalid.");
  out.sample("envcontract_contract_reload_failures_total", {},
             static_cast<double>(counters.reload_failures.load()));
  out.family("envcontract_store_failures_total", "counter",
             "Scans the agent could not record in its database (served, not kept).");
  out.sample("envcontract_store_failures_total", {},
             static_cast<double>(counters.store_failures.load()));
  out.family("envcontract_contract_reload_error", "gauge",
             "1 while the latest contract file is invalid (the last good one is in force).");
  out.sample("envcontract_contract_reload_error", {}, snapshot.reload_error.empty() ? 0 : 1);
  return out.text();
}

}  // namespace envcontract::daemon
