#include "daemon/store.hpp"

#include <sqlite3.h>

#include <set>

#include "common/json_fields.hpp"
#include "common/json_text.hpp"
#include "common/sha256.hpp"
#include "common/shown_path.hpp"
#include "common/time_text.hpp"
#include "daemon/store_schema.hpp"
#include "report/report_json.hpp"

namespace envcontract::daemon {
namespace {

using common::array_field;
using common::string_field;
using report::Json;

constexpr std::string_view k_verdict = "@verdict";  // '@' is never part of a check id

std::string leave_alone() {
  return " The file was left untouched: move it away, or name another file with --database, "
         "and the agent starts a new database.";
}

// Checks that the file is ours and sound, then brings its schema up to date.
// Returns what is wrong, or "".
std::string prepare(sqlite::Database& db, const std::filesystem::path& path) {
  // Reading the header tells a non-database (SQLITE_NOTADB) at once.
  std::int64_t application_id = 0;
  std::int64_t version = 0;
  std::int64_t tables = 0;
  try {
    application_id = db.query_int("PRAGMA application_id");
    version = db.query_int("PRAGMA user_version");
    tables = db.query_int("SELECT COUNT(*) FROM sqlite_master");
  } catch (const sqlite::Error& error) {
    return common::shown_path(path) + " is not an envcontract database (" + error.what() + ")." +
           leave_alone();
  }
  const bool fresh = application_id == 0 && version == 0 && tables == 0;
  if (!fresh && application_id != store_application_id) {
    return path.string() + " is an SQLite database of another application (application_id " +
           std::to_string(application_id) + ")." + leave_alone();
  }
  const auto latest = static_cast<std::int64_t>(store_migrations().size());
  if (version < 0) {
    // No envcontract writes one: a damaged header, or another writer's.
    return path.string() + " has a schema version below zero (" + std::to_string(version) +
           "): it is damaged or not ours." + leave_alone();
  }
  if (version > latest) {
    return path.string() + " was written by a newer envcontract (schema version " +
           std::to_string(version) + "; this agent knows up to " + std::to_string(latest) +
           "). Upgrade the agent, or name another file with --database.";
  }
  if (!fresh) {
    const auto check = db.query_text("PRAGMA quick_check");
    if (check.value_or("") != "ok") {
      return path.string() + " is corrupt (quick_check: " + check.value_or("no answer") + ")." +
             leave_alone();
    }
  }
  // Pages freed by retention go back to the file system (incremental
  // vacuum). A new file takes the mode at once; an older one is rebuilt once.
  const bool incremental = db.query_int("PRAGMA auto_vacuum") == 2;
  if (!incremental) {
    db.exec("PRAGMA auto_vacuum=INCREMENTAL");
    if (!fresh) {
      // Best effort: VACUUM needs the file's size free again and time; on a
      // nearly full disk the agent starts without giving space back.
      try {
        db.exec("VACUUM");
      } catch (const sqlite::Error&) {
      }
    }
  }
  // WAL: readers never wait for a scan, and a crash mid-scan loses only the
  // scan's own transaction. NORMAL is durable enough in WAL mode. The WAL is
  // checkpointed every 256 pages and cut back to 1 MiB after.
  const auto mode = db.query_text("PRAGMA journal_mode=WAL");
  if (mode.value_or("") != "wal") {
    return common::shown_path(path) + ": cannot switch to WAL mode (journal_mode is " +
           mode.value_or("unknown") + "); is the directory writable and on a local disk?";
  }
  db.exec(
      "PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000; PRAGMA wal_autocheckpoint=256; "
      "PRAGMA journal_size_limit=1048576; "
      // SQLite's own page cache, per connection (2 MiB by default), fills as
      // the history grows and stays in the idle agent's memory; the kernel
      // caches the file anyway (history_bench times the history queries).
      "PRAGMA cache_size=-512");
  // Migrations rebuild tables that others reference: foreign keys are
  // checked once they are done (SQLite's documented procedure).
  db.exec("PRAGMA foreign_keys=OFF");
  for (auto next = version; next < latest; ++next) {
    sqlite::Transaction transaction(db);
    db.exec(store_migrations()[static_cast<std::size_t>(next)]);
    db.exec("PRAGMA application_id=" + std::to_string(store_application_id) +
            "; PRAGMA user_version=" + std::to_string(next + 1));
    if (db.query_text("PRAGMA foreign_key_check").has_value()) {
      return path.string() + ": upgrading to schema version " + std::to_string(next + 1) +
             " broke a reference; the file was left at version " + std::to_string(next) +
             ". Report this with the file.";
    }
    transaction.commit();
  }
  db.exec("PRAGMA foreign_keys=ON");
  return "";
}

std::string window_start(const std::string& at, std::chrono::seconds window) {
  const auto time = common::parse_rfc3339(at);
  return time ? common::rfc3339(*time - window) : at;
}

}  // namespace

Store::Store(const std::filesystem::path& path, FlappingRule flapping, StoreLimits limits)
    : m_db(path), m_flapping(flapping), m_limits(limits) {}

std::string Store::directory_problem(const std::filesystem::path& path) {
  if (!path.has_parent_path()) {
    return "";
  }
  const auto directory = path.parent_path();
  std::error_code error;
  const auto status = std::filesystem::status(directory, error);
  if (status.type() == std::filesystem::file_type::not_found) {
    return path == default_path
               ? ""
               : "the database's directory " + common::shown_path(directory) +
                     " does not exist; create it, or name a database in a directory that "
                     "exists (--database, database:)";
  }
  if (!std::filesystem::is_directory(status)) {
    return "the database's directory " + common::shown_path(directory) +
           " is not a directory (--database, database:)";
  }
  return "";
}

common::Result<std::unique_ptr<Store>> Store::open(const std::filesystem::path& path,
                                                   FlappingRule flapping, StoreLimits limits) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return common::Error{common::shown_path(path) +
                         " is a directory; --database names the database file"};
  }
  if (auto problem = directory_problem(path); !problem.empty()) {
    return common::Error{std::move(problem)};
  }
  if (path == default_path && !std::filesystem::exists(path.parent_path(), error)) {
    std::filesystem::create_directories(path.parent_path(), error);
    if (error) {
      return common::Error{"cannot create " + common::shown_path(path.parent_path()) +
                           " for the database: " + error.message()};
    }
  }
  try {
    std::unique_ptr<Store> store(new Store(path, flapping, limits));
    if (auto problem = prepare(store->m_db, path); !problem.empty()) {
      return common::Error{problem};
    }
    return store;
  } catch (const sqlite::Error& e) {
    return common::Error{common::shown_path(path) + ": " + e.what()};
  }
}

void Store::record_state(std::int64_t scan_id, const std::string& at, const std::string& subject,
                         const std::string& check_id, const std::string& status,
                         const std::string& cause, const std::string& summary,
                         const std::string& actual, std::string& since, bool& flapping) {
  sqlite::Statement current(
      m_db,
      "SELECT t.id, t.status, t.cause, t.actual, t.since FROM current_states c "
      "JOIN transitions t ON t.id = c.transition_id "
      "WHERE c.subject = ?1 AND c.check_id = ?2");
  current.bind(1, subject).bind(2, check_id);
  const bool known = current.step();
  if (known && current.text(1) == status && current.text(2) == cause && current.text(3) == actual) {
    since = current.text(4);
  } else {
    sqlite::Statement insert(m_db,
                             "INSERT INTO transitions (scan_id, at, subject, check_id, status, "
                             "previous_status, cause, summary, actual, since) "
                             "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    // `since` is when the check entered its status: a new value under the
    // same status (another missing library, say) keeps it.
    since = known && current.text(1) == status ? current.text(4) : at;
    insert.bind(1, scan_id).bind(2, at).bind(3, subject).bind(4, check_id).bind(5, status);
    if (known) {
      insert.bind(6, current.text(1));
    } else {
      insert.bind_null(6);
    }
    insert.bind(7, cause).bind(8, summary).bind(9, actual).bind(10, since);
    insert.run();
    sqlite::Statement upsert(m_db,
                             "INSERT INTO current_states (subject, check_id, transition_id) "
                             "VALUES (?1, ?2, ?3) ON CONFLICT (subject, check_id) "
                             "DO UPDATE SET transition_id = excluded.transition_id");
    upsert.bind(1, subject).bind(2, check_id).bind(3, m_db.last_insert_rowid());
    upsert.run();
  }
  sqlite::Statement changes(m_db,
                            "SELECT COUNT(*) FROM transitions WHERE subject = ?1 AND "
                            "check_id = ?2 AND at >= ?3 AND previous_status IS NOT NULL AND "
                            "previous_status != status");
  changes.bind(1, subject).bind(2, check_id).bind(3, window_start(at, m_flapping.window));
  flapping = changes.step() && changes.integer(0) > m_flapping.changes;
}

void Store::record_checks(std::int64_t scan_id, const std::string& at, const std::string& subject,
                          std::vector<report::CheckReport>& checks) {
  for (auto& check : checks) {
    const auto& diagnosis = report::diagnosis_of(check);
    std::string since;
    bool flapping = false;
    record_state(scan_id, at, subject, check.id, contracts::to_string(check.status),
                 diagnosis.cause, diagnosis.summary, stored_actual(check.actual), since, flapping);
    check.since = since;
    check.flapping = flapping;
  }
}

std::int64_t Store::record_scan(report::Report& report, std::shared_ptr<const std::string>* text) {
  std::lock_guard lock(m_mutex);
  sqlite::Transaction transaction(m_db);
  std::string at = report.scanned_at;
  if (!common::parse_rfc3339(at)) {
    at = common::now_rfc3339();
  }
  sqlite::Statement known_contract(
      m_db, "INSERT INTO contracts (name, sha256) VALUES (?1, ?2) ON CONFLICT DO NOTHING");
  known_contract.bind(1, report.contract.name).bind(2, report.contract.sha256);
  known_contract.run();
  std::int64_t contract_row = 0;
  {
    // Read and let go: a statement left on a row keeps a read transaction
    // open past COMMIT, and the WAL could then never be reset.
    sqlite::Statement contract_id(m_db, "SELECT id FROM contracts WHERE name = ?1 AND sha256 = ?2");
    contract_id.bind(1, report.contract.name).bind(2, report.contract.sha256);
    contract_row = contract_id.step() ? contract_id.integer(0) : 0;
  }
  sqlite::Statement scan(m_db,
                         "INSERT INTO scans (started_at, duration_ms, contract_id, verdict, "
                         "env_count, compliant_count) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  const auto started = common::parse_rfc3339(at).value_or(std::chrono::system_clock::now());
  scan.bind(
          1,
          static_cast<std::int64_t>(
              std::chrono::duration_cast<std::chrono::seconds>(started.time_since_epoch()).count()))
      .bind(2, static_cast<std::int64_t>(report.duration_ms))
      .bind(3, contract_row)
      .bind(4, to_string(report.verdict))
      .bind(5, static_cast<std::int64_t>(report.envs.size()))
      .bind(6, static_cast<std::int64_t>(report.compliant_envs.size()));
  scan.run();
  const std::int64_t scan_id = m_db.last_insert_rowid();

  std::string since;
  bool flapping = false;
  std::string reasons;
  for (const auto& reason : report.reasons) {
    reasons += (reasons.empty() ? "" : "; ") + reason;
  }
  record_state(scan_id, at, "host", std::string(k_verdict), to_string(report.verdict), "", reasons,
               "null", since, flapping);
  for (auto& target : report.targets) {
    record_checks(scan_id, at, "target:" + target.name, target.checks);
  }
  std::set<std::string> present;
  for (auto& env : report.envs) {
    const std::string subject = "env:" + env.name;
    present.insert(subject);
    record_state(scan_id, at, subject, std::string(k_verdict), contracts::to_string(env.verdict),
                 "", env.summary, "null", since, flapping);
    record_checks(scan_id, at, subject, env.checks);
  }
  // An env that has disappeared gets a last transition, so its timeline ends.
  sqlite::Statement vanished(m_db,
                             "SELECT c.subject FROM current_states c JOIN transitions t ON "
                             "t.id = c.transition_id WHERE c.check_id = ?1 AND "
                             "c.subject LIKE 'env:%' AND t.status != 'gone'");
  vanished.bind(1, k_verdict);
  std::vector<std::string> gone;
  while (vanished.step()) {
    if (!present.contains(vanished.text(0))) {
      gone.push_back(vanished.text(0));
    }
  }
  for (const auto& subject : gone) {
    record_state(scan_id, at, subject, std::string(k_verdict), "gone", "",
                 "the env is no longer on the host", "null", since, flapping);
  }

  report.scan_id = scan_id;
  sqlite::Statement latest(m_db,
                           "INSERT INTO latest_report (id, scan_id, report) VALUES (1, ?1, ?2) "
                           "ON CONFLICT (id) DO UPDATE SET scan_id = excluded.scan_id, "
                           "report = excluded.report");
  auto stored = std::make_shared<const std::string>(common::json_text(report::to_json(report)));
  latest.bind(1, scan_id).bind(2, *stored);
  latest.run();
  transaction.commit();
  if (text != nullptr) {
    *text = std::move(stored);
  }
  // The scan is recorded; what follows is housekeeping, whose failure (a
  // full disk) must not make the scan look unrecorded. It is tried again
  // at the next scan.
  try {
    // A large report replaced by another leaves its pages free: give them
    // back now rather than at the next prune.
    if (m_db.query_int("PRAGMA freelist_count") > 256) {
      m_db.exec("PRAGMA incremental_vacuum");
    }
    if (m_scans_since_prune < 0 || ++m_scans_since_prune >= m_limits.prune_every) {
      prune_locked(std::chrono::system_clock::now());
      m_scans_since_prune = 0;
    }
  } catch (const sqlite::Error&) {
  }
  return scan_id;
}

std::string Store::stored_actual(const Json& actual) const {
  std::string text = common::json_text(actual);
  if (text.size() <= m_limits.max_actual_bytes) {
    return text;
  }
  // Valid JSON that says what was cut: readers of the history see the head
  // and the marker, and a change anywhere changes the hash.
  const std::size_t kept = m_limits.max_actual_bytes / 2;
  return common::json_text(Json{{"truncated", true},
                                {"bytes", text.size()},
                                {"sha256", common::sha256_hex(text)},
                                {"head", text.substr(0, kept)}});
}

void Store::prune(std::chrono::system_clock::time_point now) {
  std::lock_guard lock(m_mutex);
  prune_locked(now);
}

void Store::prune_locked(std::chrono::system_clock::time_point now) {
  const auto cutoff = now - m_limits.retention;
  const std::string cutoff_text = common::rfc3339(cutoff);
  {
    sqlite::Transaction transaction(m_db);
    // Transitions that are some check's current state stay: `since` and the
    // next scan's comparison need them.
    sqlite::Statement transitions(m_db,
                                  "DELETE FROM transitions WHERE at < ?1 AND id NOT IN "
                                  "(SELECT transition_id FROM current_states)");
    transitions.bind(1, cutoff_text);
    transitions.run();
    sqlite::Statement scans(m_db,
                            "DELETE FROM scans WHERE started_at < ?1 AND id NOT IN "
                            "(SELECT scan_id FROM latest_report) AND NOT EXISTS "
                            "(SELECT 1 FROM transitions t WHERE t.scan_id = scans.id)");
    scans.bind(
        1,
        static_cast<std::int64_t>(
            std::chrono::duration_cast<std::chrono::seconds>(cutoff.time_since_epoch()).count()));
    scans.run();
    m_db.exec(
        "DELETE FROM contracts WHERE NOT EXISTS "
        "(SELECT 1 FROM scans s WHERE s.contract_id = contracts.id)");
    // Provisions age like the rest of the history.
    sqlite::Statement provisions(m_db, "DELETE FROM provisions WHERE finished_at < ?1");
    provisions.bind(1, cutoff_text);
    provisions.run();
    transaction.commit();
  }
  m_db.exec("PRAGMA incremental_vacuum");
}

std::optional<report::Report> Store::latest_report() {
  std::lock_guard lock(m_mutex);
  const auto text = m_db.query_text("SELECT report FROM latest_report WHERE id = 1");
  if (!text) {
    return std::nullopt;
  }
  const auto report = Json::parse(*text, nullptr, false);
  if (!report.is_object()) {
    return std::nullopt;
  }
  return report::report_from_json(report);
}

Json Store::history(const HistoryQuery& query) {
  std::lock_guard lock(m_mutex);
  std::string subject;
  if (!query.env.empty()) {
    subject = "env:" + query.env;
  } else if (!query.target.empty()) {
    subject = "target:" + query.target;
  }
  // Only the filters given are in the statement, so that SQLite can use an
  // index for them (`?1 = '' OR subject = ?1` reads every transition).
  std::string sql =
      "SELECT scan_id, at, subject, check_id, status, previous_status, cause, summary, actual "
      "FROM transitions";
  std::vector<const std::string*> values;
  const auto filter = [&](const std::string& value, const char* condition) {
    if (!value.empty()) {
      sql += values.empty() ? " WHERE " : " AND ";
      sql += condition;
      values.push_back(&value);
    }
  };
  filter(subject, "subject = ?");
  filter(query.check, "check_id = ?");
  filter(query.since, "at >= ?");
  sql += " ORDER BY id LIMIT ?";
  sqlite::Statement select(m_db, sql);
  int index = 0;
  for (const auto* value : values) {
    select.bind(++index, *value);
  }
  select.bind(++index, static_cast<std::int64_t>(query.limit));
  auto rows = Json::array();
  while (select.step()) {
    const std::string row_subject = select.text(2);
    const auto colon = row_subject.find(':');
    const std::string scope =
        colon == std::string::npos ? row_subject : row_subject.substr(0, colon);
    const std::string name = colon == std::string::npos ? "" : row_subject.substr(colon + 1);
    auto actual = Json::parse(select.text(8), nullptr, false);
    // Built key by key: an initializer list copies every value and checks
    // each pair, which was most of a 1,000-row answer's time (history_bench).
    Json row(Json::value_t::object);
    auto& fields = row.get_ref<Json::object_t&>();
    fields.reserve(10);
    fields.emplace("scan_id", select.integer(0));
    fields.emplace("at", select.text(1));
    fields.emplace("scope", scope);
    fields.emplace("name", name);
    fields.emplace("check", select.text(3));
    fields.emplace("status", select.text(4));
    fields.emplace("previous_status", select.is_null(5) ? Json(nullptr) : Json(select.text(5)));
    fields.emplace("cause", select.text(6));
    fields.emplace("summary", select.text(7));
    fields.emplace("actual", actual.is_discarded() ? Json(nullptr) : std::move(actual));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<std::string> Store::history_names(const std::string& scope) {
  std::lock_guard lock(m_mutex);
  // A range of current_states' key, not a scan of every transition: "env:"
  // up to "env;" (';' follows ':'), under the store's lock.
  sqlite::Statement select(m_db,
                           "SELECT DISTINCT substr(subject, length(?1) + 1) FROM current_states "
                           "WHERE subject >= ?1 AND subject < ?2 ORDER BY 1");
  select.bind(1, scope + ":").bind(2, scope + ";");
  std::vector<std::string> names;
  while (select.step()) {
    names.push_back(select.text(0));
  }
  return names;
}

std::int64_t Store::record_provision(const Json& record) {
  std::lock_guard lock(m_mutex);
  const auto text = [&record](const char* key) {
    const auto found = record.find(key);
    return found != record.end() && found->is_string() ? found->get<std::string>() : std::string();
  };
  const auto detail = record.find("detail");
  sqlite::Statement insert(m_db,
                           "INSERT INTO provisions (action, name, requested_by, started_at, "
                           "finished_at, outcome, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  insert.bind(1, text("action"))
      .bind(2, text("name"))
      .bind(3, text("requested_by"))
      .bind(4, text("started_at"))
      .bind(5, text("finished_at"))
      .bind(6, text("outcome"))
      .bind(7, common::json_text(detail == record.end() ? Json(nullptr) : *detail));
  insert.run();
  return m_db.last_insert_rowid();
}

Json Store::provisions(std::size_t limit) {
  std::lock_guard lock(m_mutex);
  sqlite::Statement select(m_db,
                           "SELECT id, action, name, requested_by, started_at, finished_at, "
                           "outcome, detail FROM provisions ORDER BY id DESC LIMIT ?1");
  select.bind(1, static_cast<std::int64_t>(limit));
  auto rows = Json::array();
  while (select.step()) {
    auto detail = Json::parse(select.text(7), nullptr, false);
    rows.push_back({{"id", select.integer(0)},
                    {"action", select.text(1)},
                    {"name", select.text(2)},
                    {"requested_by", select.text(3)},
                    {"started_at", select.text(4)},
                    {"finished_at", select.text(5)},
                    {"outcome", select.text(6)},
                    {"detail", detail.is_discarded() ? Json(nullptr) : detail}});
  }
  return rows;
}

std::int64_t Store::record_gate_decision(const GateDecisionRecord& record) {
  std::lock_guard lock(m_mutex);
  sqlite::Transaction transaction(m_db);
  sqlite::Statement insert(m_db,
                           "INSERT INTO gate_decisions (at, ci, job_id, job_url, env, "
                           "contract_name, contract_sha256, outcome, bypass, judged_by, why) "
                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  insert.bind(1, record.at)
      .bind(2, record.ci)
      .bind(3, record.job_id)
      .bind(4, record.job_url)
      .bind(5, record.env)
      .bind(6, record.contract_name)
      .bind(7, record.contract_sha256)
      .bind(8, std::string(to_string(record.outcome)))
      .bind(9, record.bypass)
      .bind(10, std::string(to_string(record.judged_by)))
      .bind(11, record.why);
  insert.run();
  const auto id = m_db.last_insert_rowid();
  // Each kind kept to its own bound: decisions jobs claim never push the
  // agent's own out.
  sqlite::Statement prune(m_db,
                          "DELETE FROM gate_decisions WHERE judged_by = ?1 AND id <= (SELECT id "
                          "FROM gate_decisions WHERE judged_by = ?1 ORDER BY id DESC LIMIT 1 "
                          "OFFSET ?2)");
  prune.bind(1, std::string(to_string(record.judged_by)))
      .bind(2, static_cast<std::int64_t>(max_gate_decisions));
  prune.run();
  transaction.commit();
  return id;
}

std::vector<GateDecisionRecord> Store::gate_decisions(const GateDecisionQuery& query) {
  std::lock_guard lock(m_mutex);
  sqlite::Statement select(m_db,
                           "SELECT id, at, ci, job_id, job_url, env, contract_name, "
                           "contract_sha256, outcome, bypass, judged_by, why FROM gate_decisions "
                           "WHERE (?2 = '' OR judged_by = ?2) AND (?3 = 0 OR id < ?3) "
                           "ORDER BY id DESC LIMIT ?1");
  select.bind(1, static_cast<std::int64_t>(query.limit))
      .bind(2, query.judged_by ? std::string(to_string(*query.judged_by)) : std::string())
      .bind(3, query.before);
  std::vector<GateDecisionRecord> records;
  while (select.step()) {
    GateDecisionRecord record;
    record.id = select.integer(0);
    record.at = select.text(1);
    record.ci = select.text(2);
    record.job_id = select.text(3);
    record.job_url = select.text(4);
    record.env = select.text(5);
    record.contract_name = select.text(6);
    record.contract_sha256 = select.text(7);
    record.outcome =
        gate_outcome_from(select.text(8)).value_or(GateDecisionRecord::Outcome::unknown);
    record.bypass = select.text(9);
    record.judged_by = judged_by_from(select.text(10)).value_or(GateDecisionRecord::JudgedBy::job);
    record.why = select.text(11);
    records.push_back(std::move(record));
  }
  return records;
}

std::int64_t Store::scan_count() {
  std::lock_guard lock(m_mutex);
  return m_db.query_int("SELECT COUNT(*) FROM scans");
}

std::int64_t Store::transition_count() {
  std::lock_guard lock(m_mutex);
  return m_db.query_int("SELECT COUNT(*) FROM transitions");
}

}  // namespace envcontract::daemon
