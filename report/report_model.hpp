#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "contracts/judgement.hpp"
#include "facts/host.hpp"

// The report as data: what a host's judgement says, in typed records, from
// the moment it is built until it leaves the process. JSON is its edge form
// only (report_json.hpp: one to_json, one tolerant report_from_json for the
// reports of other agents); docs/report.md and docs/report.schema.json
// describe that form field by field.
namespace envcontract::report {

using Json = contracts::Json;

// The report format's version; docs/report.schema.json describes it.
inline constexpr int schema_version = 1;

// A host's verdict: an env's three, and `pending` for the partial report
// served while the agent's first scan runs.
enum class Verdict { compliant, drift, error, pending };
std::string to_string(Verdict verdict);
Verdict host_verdict(contracts::EnvVerdict verdict);

struct ContractIdentity {
  std::string name;
  std::string path;
  std::string sha256;    // of the contract file's bytes
  std::string platform;  // the contract's `platform:`, "" when it names none
};

// A check's diagnosis, or an empty one (a check that passed has none): a
// reference, never a copy of its evidence.
const contracts::Diagnosis& diagnosis_of(const contracts::CheckResult& check);

// A check as judged (id, kind, severity, status, expected, actual, diagnosis,
// notes), and what only a store that keeps history can tell of it.
struct CheckReport : contracts::CheckResult {
  std::optional<std::string>
      since;              // RFC 3339: when it last changed status; unknown without history
  bool flapping = false;  // its status changed often of late (daemon/store.hpp)
};

struct TargetReport {
  std::string name;
  std::string image;                // the image the target names
  std::vector<CheckReport> checks;  // one, id "image"
};

struct ContainerReport {
  std::string name;
  std::string root;               // where its files are read
  std::vector<std::string> exec;  // how its envs' code runs
  facts::ImageTag image;
  std::optional<std::string> problem;  // why it could not be scanned
  std::vector<TargetReport> targets;
  std::vector<std::string> envs;  // the names of its envs
};

struct RunAsReport {
  std::string user;
  std::optional<std::int64_t> uid;  // unknown in a report that did not say
  std::string reason;
  bool as_root = false;
};

// A variable activation changes: its value before and after (null where it
// is unset), both as shown to people (common/shown_values.hpp).
struct VariableChange {
  std::string name;
  std::optional<std::string> bare;
  std::optional<std::string> activated;
};

struct ActivationReport {
  std::vector<std::string> scripts;
  std::vector<VariableChange> changes;  // the first 64
  std::size_t more_changes = 0;
  std::string problem;
};

struct EnvReport {
  std::string name;
  std::string prefix;
  std::string kind;  // conda, venv, system, ... (facts::to_string(EnvKind))
  std::string python_version;
  std::optional<std::string> target;     // the target its machine's image matches
  std::optional<std::string> container;  // the container target it lives in
  std::optional<std::string> probed_at;  // RFC 3339, when its code last ran
  contracts::EnvVerdict verdict = contracts::EnvVerdict::error;
  std::vector<CheckReport> checks;
  std::string summary;                // env_summary (report.hpp)
  std::optional<RunAsReport> run_as;  // absent in reports that did not say
  std::optional<ActivationReport> activation;
};

// While the first scan runs: how far it got.
struct PartialScan {
  std::size_t done = 0;
  std::size_t total = 0;
  std::vector<std::string> pending_envs;
};

struct PathProblem {
  std::string path;
  std::string problem;
};

struct Report {
  int schema_version = report::schema_version;
  std::string host;
  std::string scanned_at;  // RFC 3339
  double duration_ms = 0;
  std::optional<std::int64_t> scan_id;       // once stored
  std::optional<std::string> not_persisted;  // why the store could not keep it
  ContractIdentity contract;
  Verdict verdict = Verdict::error;
  std::optional<PartialScan> partial;
  std::vector<std::string> reasons;
  std::vector<std::string> compliant_envs;
  facts::ImageTag image;
  std::vector<TargetReport> targets;
  std::vector<ContainerReport> containers;
  std::vector<EnvReport> envs;
  std::vector<PathProblem> problems;
  // A report the fleet view made of Prometheus' series rather than an
  // agent's scan: where it came from ("prometheus URL"), and the agent
  // version its series named. Agents never set them.
  std::optional<std::string> source;
  std::optional<std::string> agent_version;
};

}  // namespace envcontract::report
