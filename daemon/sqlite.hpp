#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace envcontract::daemon::sqlite {

// What SQLite said, with the statement or step that failed.
class Error : public std::runtime_error {
 public:
  Error(const std::string& what, int code) : std::runtime_error(what), m_code(code) {}
  int code() const { return m_code; }  // SQLite's primary result code

 private:
  int m_code;
};

class Database {
 public:
  // Opens (creating when missing) the file read-write.
  explicit Database(const std::filesystem::path& path);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs one or more statements that return no rows we need.
  void exec(std::string_view sql);
  // The first column of the first row of a query, as text (nullopt for no row or NULL).
  std::optional<std::string> query_text(std::string_view sql);
  std::int64_t query_int(std::string_view sql);
  std::int64_t last_insert_rowid() const;

  sqlite3* handle() const { return m_db; }

 private:
  sqlite3* m_db = nullptr;
};

class Statement {
 public:
  Statement(Database& db, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are numbered from 1, as in SQL's ?1, ?2.
  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, double value);
  Statement& bind_null(int index);

  // Advances to the next row; false when done.
  bool step();
  // Runs a statement that returns no rows, then resets it for reuse.
  void run();
  void reset();

  std::string text(int column) const;  // "" for NULL
  bool is_null(int column) const;
  std::int64_t integer(int column) const;
  double real(int column) const;

 private:
  Database& m_db;
  sqlite3_stmt* m_statement = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back when destroyed uncommitted.
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Database& m_db;
  bool m_done = false;
};

}  // namespace envcontract::daemon::sqlite
