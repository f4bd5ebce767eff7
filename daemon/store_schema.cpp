#include "daemon/store_schema.hpp"

namespace envcontract::daemon {

// One list over 120 lines, on purpose: it is data, the SQL of each schema
// version in the order a database goes through them, read top to bottom
// like a changelog. Split, the order would be spread over functions.
const std::vector<std::string_view>& store_migrations() {
  static const std::vector<std::string_view> migrations = {
      // 1: scans, the differential check history, the latest report.
      R"sql(
CREATE TABLE scans (
  id INTEGER PRIMARY KEY,
  started_at TEXT NOT NULL,
  duration_ms REAL NOT NULL,
  contract_name TEXT NOT NULL,
  contract_sha256 TEXT NOT NULL,
  verdict TEXT NOT NULL,
  env_count INTEGER NOT NULL,
  compliant_count INTEGER NOT NULL
);
CREATE TABLE transitions (
  id INTEGER PRIMARY KEY,
  scan_id INTEGER NOT NULL REFERENCES scans(id),
  at TEXT NOT NULL,
  subject TEXT NOT NULL,
  check_id TEXT NOT NULL,
  status TEXT NOT NULL,
  previous_status TEXT,
  cause TEXT NOT NULL,
  summary TEXT NOT NULL,
  actual TEXT NOT NULL,
  since TEXT NOT NULL
);
CREATE INDEX transitions_by_check ON transitions(subject, check_id, id);
CREATE TABLE latest_report (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  scan_id INTEGER NOT NULL REFERENCES scans(id),
  report TEXT NOT NULL
);
)sql",
      // 2: each check's current state by key, so a scan finds it without
      // scanning its history; history by time for the since= filter.
      R"sql(
CREATE TABLE current_states (
  subject TEXT NOT NULL,
  check_id TEXT NOT NULL,
  transition_id INTEGER NOT NULL REFERENCES transitions(id),
  PRIMARY KEY (subject, check_id)
) WITHOUT ROWID;
INSERT INTO current_states (subject, check_id, transition_id)
  SELECT subject, check_id, MAX(id) FROM transitions GROUP BY subject, check_id;
CREATE INDEX transitions_by_time ON transitions(at);
)sql",
      // 3: a scan row small enough that years of scans of an unchanged host
      // stay small: the contract by reference, times as integers. Transitions
      // by scan, for retention. (Run with foreign keys off: the table is
      // rebuilt under transitions' references.)
      R"sql(
CREATE TABLE contracts (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  UNIQUE (name, sha256)
);
INSERT OR IGNORE INTO contracts (name, sha256)
  SELECT DISTINCT contract_name, contract_sha256 FROM scans;
CREATE TABLE scans_v3 (
  id INTEGER PRIMARY KEY,
  started_at INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL,
  contract_id INTEGER NOT NULL REFERENCES contracts(id),
  verdict TEXT NOT NULL,
  env_count INTEGER NOT NULL,
  compliant_count INTEGER NOT NULL
);
INSERT INTO scans_v3 (id, started_at, duration_ms, contract_id, verdict, env_count,
                      compliant_count)
  SELECT s.id, COALESCE(CAST(strftime('%s', s.started_at) AS INTEGER), 0),
         CAST(s.duration_ms AS INTEGER), c.id, s.verdict, s.env_count, s.compliant_count
  FROM scans s JOIN contracts c ON c.name = s.contract_name AND c.sha256 = s.contract_sha256;
DROP TABLE scans;
ALTER TABLE scans_v3 RENAME TO scans;
CREATE INDEX transitions_by_scan ON transitions(scan_id);
)sql",
      // 4: provisions, promotions and rollbacks: who asked, when, the steps
      // and each one's outcome (docs/provisioning.md).
      R"sql(
CREATE TABLE provisions (
  id INTEGER PRIMARY KEY,
  action TEXT NOT NULL,
  name TEXT NOT NULL,
  requested_by TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT NOT NULL,
  outcome TEXT NOT NULL,
  detail TEXT NOT NULL
);
)sql",
      // 5: a check's transitions by time, so that each scan's flapping count
      // reads the window's transitions, not the check's whole history (a
      // check whose value changes at every scan has thousands in a year);
      // an env's (or target's) in order, so that its history read up to the
      // limit stops there rather than reading and sorting all of it.
      R"sql(
CREATE INDEX transitions_by_check_time ON transitions(subject, check_id, at);
CREATE INDEX transitions_by_subject ON transitions(subject, id);
)sql",
      // 6: CI gate decisions (docs/ci.md): which job was stopped, and why.
      R"sql(
CREATE TABLE gate_decisions (
  id INTEGER PRIMARY KEY,
  at TEXT NOT NULL,
  ci TEXT NOT NULL,
  job_id TEXT NOT NULL,
  job_url TEXT NOT NULL,
  env TEXT NOT NULL,
  contract_name TEXT NOT NULL,
  contract_sha256 TEXT NOT NULL,
  outcome TEXT NOT NULL,
  bypass TEXT NOT NULL,
  judged_by TEXT NOT NULL,
  why TEXT NOT NULL
);
CREATE INDEX gate_decisions_by_judge ON gate_decisions(judged_by, id);
)sql",
  };
  return migrations;
}

}  // namespace envcontract::daemon
