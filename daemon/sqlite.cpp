#include "daemon/sqlite.hpp"

#include <sqlite3.h>

namespace envcontract::daemon::sqlite {
namespace {

[[noreturn]] void fail(sqlite3* db, int code, const std::string& doing) {
  const std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  throw Error(doing + ": " + message, code & 0xff);
}

}  // namespace

Database::Database(const std::filesystem::path& path) {
  const int code =
      sqlite3_open_v2(path.c_str(), &m_db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (code != SQLITE_OK) {
    const std::string message = m_db != nullptr ? sqlite3_errmsg(m_db) : sqlite3_errstr(code);
    sqlite3_close(m_db);
    m_db = nullptr;
    throw Error("cannot open " + path.string() + ": " + message, code & 0xff);
  }
  sqlite3_extended_result_codes(m_db, 1);
}

Database::~Database() {
  sqlite3_close_v2(m_db);
}

void Database::exec(std::string_view sql) {
  char* message = nullptr;
  const std::string text(sql);
  const int code = sqlite3_exec(m_db, text.c_str(), nullptr, nullptr, &message);
  if (code != SQLITE_OK) {
    const std::string what = message != nullptr ? message : sqlite3_errstr(code);
    sqlite3_free(message);
    throw Error(what, code & 0xff);
  }
}

std::optional<std::string> Database::query_text(std::string_view sql) {
  Statement statement(*this, sql);
  if (!statement.step() || statement.is_null(0)) {
    return std::nullopt;
  }
  return statement.text(0);
}

std::int64_t Database::query_int(std::string_view sql) {
  Statement statement(*this, sql);
  return statement.step() ? statement.integer(0) : 0;
}

std::int64_t Database::last_insert_rowid() const {
  return sqlite3_last_insert_rowid(m_db);
}

Statement::Statement(Database& db, std::string_view sql) : m_db(db) {
  const int code = sqlite3_prepare_v2(db.handle(), sql.data(), static_cast<int>(sql.size()),
                                      &m_statement, nullptr);
  if (code != SQLITE_OK) {
    fail(db.handle(), code, "preparing '" + std::string(sql.substr(0, 60)) + "'");
  }
  if (m_statement == nullptr) {
    // Only blanks or comments: SQLite prepares no statement, and one that
    // runs nothing is the caller's mistake, not a statement to step.
    fail(nullptr, SQLITE_MISUSE,
         "preparing '" + std::string(sql.substr(0, 60)) + "': it holds no statement");
  }
}

Statement::~Statement() {
  sqlite3_finalize(m_statement);
}

Statement& Statement::bind(int index, std::string_view text) {
  // An empty view may have no data at all: SQLite would bind NULL, not "".
  const int code = sqlite3_bind_text(m_statement, index, text.data() != nullptr ? text.data() : "",
                                     static_cast<int>(text.size()), SQLITE_TRANSIENT);
  if (code != SQLITE_OK) {
    fail(m_db.handle(), code, "binding parameter " + std::to_string(index));
  }
  return *this;
}

Statement& Statement::bind(int index, std::int64_t value) {
  const int code = sqlite3_bind_int64(m_statement, index, value);
  if (code != SQLITE_OK) {
    fail(m_db.handle(), code, "binding parameter " + std::to_string(index));
  }
  return *this;
}

Statement& Statement::bind(int index, double value) {
  const int code = sqlite3_bind_double(m_statement, index, value);
  if (code != SQLITE_OK) {
    fail(m_db.handle(), code, "binding parameter " + std::to_string(index));
  }
  return *this;
}

Statement& Statement::bind_null(int index) {
  const int code = sqlite3_bind_null(m_statement, index);
  if (code != SQLITE_OK) {
    fail(m_db.handle(), code, "binding parameter " + std::to_string(index));
  }
  return *this;
}

bool Statement::step() {
  const int code = sqlite3_step(m_statement);
  if (code == SQLITE_ROW) {
    return true;
  }
  if (code == SQLITE_DONE) {
    return false;
  }
  fail(m_db.handle(), code,
       "running '" + std::string(sqlite3_sql(m_statement)).substr(0, 60) + "'");
}

void Statement::run() {
  // Reset whatever happens: a statement left mid-step after a failure
  // refuses every later binding (SQLITE_MISUSE).
  try {
    while (step()) {
    }
  } catch (...) {
    reset();
    throw;
  }
  reset();
}

void Statement::reset() {
  sqlite3_reset(m_statement);
  sqlite3_clear_bindings(m_statement);
}

std::string Statement::text(int column) const {
  const auto* bytes = sqlite3_column_text(m_statement, column);
  if (bytes == nullptr) {
    return "";
  }
  return std::string(reinterpret_cast<const char*>(bytes),
                     static_cast<std::size_t>(sqlite3_column_bytes(m_statement, column)));
}

bool Statement::is_null(int column) const {
  return sqlite3_column_type(m_statement, column) == SQLITE_NULL;
}

std::int64_t Statement::integer(int column) const {
  return sqlite3_column_int64(m_statement, column);
}

double Statement::real(int column) const {
  return sqlite3_column_double(m_statement, column);
}

Transaction::Transaction(Database& db) : m_db(db) {
  db.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (!m_done) {
    try {
      m_db.exec("ROLLBACK");
    } catch (const Error&) {
      // The transaction is gone already (SQLite rolls back on some errors).
    }
  }
}

void Transaction::commit() {
  m_db.exec("COMMIT");
  m_done = true;
}

}  // namespace envcontract::daemon::sqlite
