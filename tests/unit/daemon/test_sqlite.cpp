// daemon/sqlite.cpp: the SQLite wrapper (statements, binding, errors with SQLite's result code).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "daemon/sqlite.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

using daemon::sqlite::Database;
using daemon::sqlite::Error;
using daemon::sqlite::Statement;
using daemon::sqlite::Transaction;

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The code of the sqlite::Error that `action` throws, or -1 when it throws none.
template <typename Action>
int error_code_of(Action&& action) {
  try {
    action();
  } catch (const Error& e) {
    return e.code();
  }
  return -1;
}

TEST(Sqlite, EveryBoundTypeIsReadBackAsBound) {
  testing::TempDir dir;
  const auto path = dir.path() / "t.db";
  Database db(path);
  EXPECT_TRUE(std::filesystem::exists(path));  // created when missing
  db.exec("CREATE TABLE t (a, b, c, d)");
  const std::string with_nul("a\0b\xc3\xa9", 5);  // text is counted, not NUL-terminated
  Statement insert(db, "INSERT INTO t VALUES (?1, ?2, ?3, ?4)");
  insert.bind(1, with_nul)
      .bind(2, std::numeric_limits<std::int64_t>::min())
      .bind(3, 0.25)
      .bind_null(4);
  insert.run();
  EXPECT_EQ(db.last_insert_rowid(), 1);
  insert.bind(1, std::string("x"))
      .bind(2, std::numeric_limits<std::int64_t>::max())
      .bind(3, -1e300)
      .bind(4, std::int64_t{7});
  insert.run();
  EXPECT_EQ(db.last_insert_rowid(), 2);

  Statement select(db, "SELECT a, b, c, d FROM t ORDER BY rowid");
  ASSERT_TRUE(select.step());
  EXPECT_EQ(select.text(0), with_nul);
  EXPECT_EQ(select.integer(1), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(select.real(2), 0.25);
  EXPECT_TRUE(select.is_null(3));
  EXPECT_EQ(select.text(3), "");  // NULL reads as ""
  EXPECT_FALSE(select.is_null(0));
  ASSERT_TRUE(select.step());
  EXPECT_EQ(select.integer(1), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(select.real(2), -1e300);
  EXPECT_EQ(select.integer(3), 7);
  EXPECT_FALSE(select.step());
}

// NULL, no row and "" are three answers; query_int has no NULL and gives 0
// for no row.
TEST(Sqlite, QueryTextTellsNullAndNoRowFromEmptyText) {
  testing::TempDir dir;
  Database db(dir.path() / "t.db");
  db.exec("CREATE TABLE t (v); INSERT INTO t VALUES (NULL), ('')");
  EXPECT_EQ(db.query_text("SELECT v FROM t WHERE rowid = 1"), std::nullopt);
  EXPECT_EQ(db.query_text("SELECT v FROM t WHERE rowid = 2"), std::optional<std::string>(""));
  EXPECT_EQ(db.query_text("SELECT v FROM t WHERE rowid = 3"), std::nullopt);
  EXPECT_EQ(db.query_int("SELECT 41 + 1"), 42);
  EXPECT_EQ(db.query_int("SELECT rowid FROM t WHERE rowid = 3"), 0);
}

// run() resets the statement and clears its bindings: the next run binds anew.
TEST(Sqlite, RunLeavesTheStatementReadyForReuseWithoutItsBindings) {
  testing::TempDir dir;
  Database db(dir.path() / "t.db");
  db.exec("CREATE TABLE t (v TEXT NOT NULL)");
  Statement insert(db, "INSERT INTO t VALUES (?1)");
  insert.bind(1, std::string("one")).run();
  insert.bind(1, std::string("two")).run();
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM t"), 2);
  // Unbound, ?1 is NULL: the bindings did not outlive the run.
  EXPECT_EQ(error_code_of([&] { insert.run(); }), SQLITE_CONSTRAINT);
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM t"), 2);
}

// run() resets the statement whatever happened: after a failed step (one
// bad row) it can be bound and run again, as run() promises.
TEST(Sqlite, AStatementWhoseRunFailedRunsAgainOnceRebound) {
  testing::TempDir dir;
  Database db(dir.path() / "t.db");
  db.exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)");
  Statement insert(db, "INSERT INTO t VALUES (?1, ?2)");
  insert.bind(1, std::int64_t{1}).bind(2, std::string("a")).run();
  EXPECT_EQ(error_code_of([&] { insert.bind(1, std::int64_t{1}).bind(2, std::string("b")).run(); }),
            SQLITE_CONSTRAINT);
  EXPECT_EQ(error_code_of([&] { insert.bind(1, std::int64_t{2}).bind(2, std::string("b")).run(); }),
            -1)
      << "the statement was left unusable by the failed run";
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM t"), 2);
  EXPECT_EQ(db.query_text("SELECT v FROM t WHERE k = 1"), std::optional<std::string>("a"));
}

// An explicit reset() after the failure is what makes it usable today.
TEST(Sqlite, ResetAfterAFailedStepMakesTheStatementUsableAgain) {
  testing::TempDir dir;
  Database db(dir.path() / "t.db");
  db.exec("CREATE TABLE t (k INTEGER PRIMARY KEY)");
  Statement insert(db, "INSERT INTO t VALUES (?1)");
  insert.bind(1, std::int64_t{1}).run();
  EXPECT_EQ(error_code_of([&] { insert.bind(1, std::int64_t{1}).run(); }), SQLITE_CONSTRAINT);
  insert.reset();
  insert.bind(1, std::int64_t{2}).run();
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM t"), 2);
}

// Extended result codes are on (the handle keeps the detail), but Error
// carries the primary code, which callers compare against.
TEST(Sqlite, ErrorsCarrySqlitesPrimaryResultCode) {
  testing::TempDir dir;
  Database db(dir.path() / "t.db");
  db.exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT CHECK (v != 'bad'))");
  db.exec("INSERT INTO t VALUES (1, 'a')");

  EXPECT_EQ(error_code_of([&] { db.exec("INSERT INTO t VALUES (1, 'b')"); }), SQLITE_CONSTRAINT);
  EXPECT_EQ(sqlite3_extended_errcode(db.handle()), SQLITE_CONSTRAINT_PRIMARYKEY);

  Statement check(db, "INSERT INTO t VALUES (2, ?1)");
  check.bind(1, std::string("bad"));
  EXPECT_EQ(error_code_of([&] { check.step(); }), SQLITE_CONSTRAINT);
  EXPECT_EQ(sqlite3_extended_errcode(db.handle()), SQLITE_CONSTRAINT_CHECK);

  EXPECT_EQ(error_code_of([&] { Statement(db, "SELEC 1"); }), SQLITE_ERROR);
  EXPECT_EQ(error_code_of([&] { Statement(db, "SELECT * FROM missing"); }), SQLITE_ERROR);
  EXPECT_EQ(error_code_of([&] { db.exec("DROP TABLE missing"); }), SQLITE_ERROR);
  EXPECT_EQ(error_code_of([&] { db.query_int("SELECT nonsense("); }), SQLITE_ERROR);
}

TEST(Sqlite, ErrorsSayWhatWasBeingDone) {
  testing::TempDir dir;
  Database db(dir.path() / "t.db");
  db.exec("CREATE TABLE t (k INTEGER PRIMARY KEY)");
  try {
    Statement(db, "SELEC 1");
    FAIL() << "prepared";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("preparing 'SELEC 1': ", 0), 0U) << e.what();
  }
  Statement insert(db, "INSERT INTO t VALUES (?1)");
  insert.bind(1, std::int64_t{1}).run();
  try {
    insert.bind(1, std::int64_t{1}).run();
    FAIL() << "inserted twice";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("running 'INSERT INTO t VALUES (?1)': ", 0), 0U)
        << e.what();
  }
}

TEST(Sqlite, BindingAParameterTheStatementDoesNotHaveIsARangeError) {
  testing::TempDir dir;
  Database db(dir.path() / "t.db");
  Statement statement(db, "SELECT ?1");
  EXPECT_EQ(error_code_of([&] { statement.bind(2, std::string("x")); }), SQLITE_RANGE);
  EXPECT_EQ(error_code_of([&] { statement.bind(0, std::int64_t{1}); }), SQLITE_RANGE);
  EXPECT_EQ(error_code_of([&] { statement.bind(3, 1.5); }), SQLITE_RANGE);
  EXPECT_EQ(error_code_of([&] { statement.bind_null(2); }), SQLITE_RANGE);
  try {
    statement.bind(7, std::string("x"));
    ADD_FAILURE() << "bound parameter 7";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("binding parameter 7: ", 0), 0U) << e.what();
  }
  // The parameter that is there still binds.
  statement.bind(1, std::string("ok"));
  ASSERT_TRUE(statement.step());
  EXPECT_EQ(statement.text(0), "ok");
}

// An empty std::string_view{} has a null data(), for which sqlite3_bind_text
// would bind NULL: "" stays "" (a NOT NULL column takes it, `= ''` matches).
TEST(Sqlite, AnEmptyTextIsBoundAsEmptyTextNotNull) {
  testing::TempDir dir;
  Database db(dir.path() / "t.db");
  Statement from_string(db, "SELECT ?1 IS NULL, length(?1)");
  from_string.bind(1, std::string());
  ASSERT_TRUE(from_string.step());
  EXPECT_EQ(from_string.integer(0), 0);
  EXPECT_EQ(from_string.integer(1), 0);

  Statement from_view(db, "SELECT ?1 IS NULL, length(?1)");
  from_view.bind(1, std::string_view());
  ASSERT_TRUE(from_view.step());
  EXPECT_EQ(from_view.integer(0), 0) << "an empty text was bound as NULL";
}

// SQL that holds no statement (blank, or only a comment) prepares to no
// statement at all: refused as SQLite's error, never stepped (its text would
// be read from a null pointer).
TEST(Sqlite, SqlWithoutAStatementHasNoRowsOrIsSqlitesError) {
  testing::TempDir dir;
  Database db(dir.path() / "t.db");
  for (const char* sql : {"", "   ", "-- only a comment"}) {
    bool no_row = false;
    bool sqlite_error = false;
    try {
      Statement statement(db, sql);
      no_row = !statement.step();
    } catch (const Error&) {
      sqlite_error = true;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "'" << sql << "': not SQLite's error: " << e.what();
    }
    EXPECT_TRUE(no_row || sqlite_error) << "'" << sql << "'";
  }
}

// exec runs a script statement by statement, and stops at the first that fails.
TEST(Sqlite, ExecRunsEveryStatementUpToTheFirstThatFails) {
  testing::TempDir dir;
  Database db(dir.path() / "t.db");
  db.exec("CREATE TABLE t (v); INSERT INTO t VALUES (1); INSERT INTO t VALUES (2);");
  EXPECT_EQ(db.query_int("SELECT SUM(v) FROM t"), 3);
  EXPECT_EQ(error_code_of([&] {
              db.exec(
                  "INSERT INTO t VALUES (10); INSERT INTO nowhere VALUES (1); "
                  "INSERT INTO t VALUES (100)");
            }),
            SQLITE_ERROR);
  EXPECT_EQ(db.query_int("SELECT SUM(v) FROM t"), 13);  // no transaction: the first stays
}

TEST(Sqlite, ATransactionLeftUncommittedIsRolledBack) {
  testing::TempDir dir;
  Database db(dir.path() / "t.db");
  db.exec("CREATE TABLE t (v)");
  {
    Transaction transaction(db);
    db.exec("INSERT INTO t VALUES (1)");
    transaction.commit();
  }
  try {
    Transaction transaction(db);
    db.exec("INSERT INTO t VALUES (2)");
    db.exec("INSERT INTO nowhere VALUES (3)");
    transaction.commit();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SQLITE_ERROR);
  }
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM t"), 1);
  EXPECT_NE(sqlite3_get_autocommit(db.handle()), 0) << "a transaction was left open";
}

// A COMMIT that fails (a deferred foreign key) leaves the transaction open;
// the destructor rolls it back rather than leaving the connection inside it.
TEST(Sqlite, ACommitThatFailsIsRolledBackWhenTheTransactionEnds) {
  testing::TempDir dir;
  Database db(dir.path() / "t.db");
  db.exec(
      "PRAGMA foreign_keys=ON; CREATE TABLE parent (id INTEGER PRIMARY KEY); "
      "CREATE TABLE child (p INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)");
  {
    Transaction transaction(db);
    db.exec("INSERT INTO child VALUES (99)");
    EXPECT_EQ(error_code_of([&] { transaction.commit(); }), SQLITE_CONSTRAINT);
  }
  EXPECT_NE(sqlite3_get_autocommit(db.handle()), 0) << "a transaction was left open";
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM child"), 0);
  Transaction next(db);  // the connection takes new transactions
  db.exec("INSERT INTO parent VALUES (1); INSERT INTO child VALUES (1)");
  next.commit();
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM child"), 1);
}

// SQLite may end a transaction itself (here: the caller did); the
// destructor's ROLLBACK then fails, quietly.
TEST(Sqlite, ATransactionEndedBehindItsBackIsLeftAloneWhenDestroyed) {
  testing::TempDir dir;
  Database db(dir.path() / "t.db");
  db.exec("CREATE TABLE t (v)");
  EXPECT_NO_THROW({
    Transaction transaction(db);
    db.exec("INSERT INTO t VALUES (1); ROLLBACK");
  });
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM t"), 0);
  EXPECT_NE(sqlite3_get_autocommit(db.handle()), 0);
}

TEST(Sqlite, AFileThatIsNotADatabaseFailsAtItsFirstReadAndIsLeftAlone) {
  testing::TempDir dir;
  const auto path = dir.write("notes.db", std::string(4096, 'n') + "not a database\n");
  const auto before = read_bytes(path);
  Database db(path);  // SQLite reads the header lazily
  EXPECT_EQ(error_code_of([&] { db.query_int("PRAGMA user_version"); }), SQLITE_NOTADB);
  EXPECT_EQ(error_code_of([&] { db.exec("CREATE TABLE t (v)"); }), SQLITE_NOTADB);
  EXPECT_EQ(read_bytes(path), before);
}

TEST(Sqlite, APathThatCannotBeOpenedIsCantOpenAndNamed) {
  testing::TempDir dir;
  const auto missing = dir.path() / "no-such-dir" / "t.db";
  try {
    Database db(missing);
    FAIL() << "opened " << missing;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SQLITE_CANTOPEN);
    EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(missing.parent_path()));
  EXPECT_EQ(error_code_of([&] { Database db(dir.path()); }), SQLITE_CANTOPEN);
}

// Opening falls back to read-only (SQLite's READWRITE flag does): reads
// work, a write is SQLITE_READONLY, and the file stays as it was. Root
// writes through file modes, so the child drops to nobody.
TEST(Sqlite, AReadOnlyFileIsReadButNotWritten) {
  testing::TempDir dir;
  const auto path = dir.path() / "t.db";
  {
    Database db(path);
    db.exec("CREATE TABLE t (v); INSERT INTO t VALUES (1), (2)");
  }
  std::filesystem::permissions(path, std::filesystem::perms::owner_read |
                                         std::filesystem::perms::group_read |
                                         std::filesystem::perms::others_read);
  const auto before = read_bytes(path);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) {
      ::_exit(3);
    }
    std::string answer;
    try {
      Database db(path);
      answer = std::to_string(db.query_int("SELECT COUNT(*) FROM t")) + " " +
               std::to_string(error_code_of([&] { db.exec("INSERT INTO t VALUES (3)"); }));
    } catch (const Error& e) {
      answer = std::string("error ") + e.what();
    } catch (...) {
      ::_exit(4);  // never go on running the tests in the child
    }
    (void)!::write(fds[1], answer.data(), answer.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string answer;
  char chunk[256];
  for (ssize_t got; (got = ::read(fds[0], chunk, sizeof chunk)) > 0;) {
    answer.append(chunk, static_cast<std::size_t>(got));
  }
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(answer, "2 " + std::to_string(SQLITE_READONLY));
  EXPECT_EQ(read_bytes(path), before);
}

// Another connection's write lock: a writer is refused with SQLITE_BUSY (the
// wrapper sets no busy timeout of its own), readers still read the last
// commit, and the writer gets through once the lock is let go.
TEST(Sqlite, AWriteLockOfAnotherConnectionIsBusyUntilItIsLetGo) {
  testing::TempDir dir;
  const auto path = dir.path() / "t.db";
  Database holder(path);
  Database other(path);
  holder.exec("CREATE TABLE t (v)");
  auto held = std::make_unique<Transaction>(holder);
  holder.exec("INSERT INTO t VALUES (1)");

  EXPECT_EQ(error_code_of([&] { Transaction refused(other); }), SQLITE_BUSY);
  EXPECT_EQ(error_code_of([&] { other.exec("INSERT INTO t VALUES (2)"); }), SQLITE_BUSY);
  EXPECT_EQ(other.query_int("SELECT COUNT(*) FROM t"), 0);
  EXPECT_NE(sqlite3_get_autocommit(other.handle()), 0);

  held->commit();
  held.reset();
  Transaction writer(other);
  other.exec("INSERT INTO t VALUES (2)");
  writer.commit();
  EXPECT_EQ(holder.query_int("SELECT COUNT(*) FROM t"), 2);
}

// A connection in exclusive locking mode keeps the file to itself after
// its first write: even a read by another connection is SQLITE_BUSY.
TEST(Sqlite, ADatabaseLockedExclusivelyRefusesEvenReads) {
  testing::TempDir dir;
  const auto path = dir.path() / "t.db";
  Database holder(path);
  holder.exec("PRAGMA locking_mode=EXCLUSIVE; CREATE TABLE t (v); INSERT INTO t VALUES (1)");
  Database other(path);
  EXPECT_EQ(error_code_of([&] { other.query_int("SELECT COUNT(*) FROM t"); }), SQLITE_BUSY);
  EXPECT_EQ(error_code_of([&] { Statement(other, "SELECT v FROM t").step(); }), SQLITE_BUSY);
}

// With a busy timeout (the store sets one), the writer waits that long for
// the lock before it is refused; SQLite's busy handler does the waiting.
TEST(Sqlite, ABusyTimeoutWaitsForTheLockBeforeGivingUp) {
  testing::TempDir dir;
  const auto path = dir.path() / "t.db";
  Database holder(path);
  holder.exec("CREATE TABLE t (v)");
  Transaction held(holder);
  holder.exec("INSERT INTO t VALUES (1)");

  Database other(path);
  other.exec("PRAGMA busy_timeout=300");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(error_code_of([&] { Transaction refused(other); }), SQLITE_BUSY);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(250));
}

// The lock let go while the writer waits: the wait ends in the write, not an
// error. The busy handler (SQLite's hook, called while waiting) lets it go.
TEST(Sqlite, ALockLetGoWhileWaitingLetsTheWriterThrough) {
  testing::TempDir dir;
  const auto path = dir.path() / "t.db";
  Database holder(path);
  holder.exec("CREATE TABLE t (v)");
  auto held = std::make_unique<Transaction>(holder);
  holder.exec("INSERT INTO t VALUES (1)");

  Database other(path);
  struct Waiting {
    std::unique_ptr<Transaction>* held;
    int calls = 0;
  } waiting{&held};
  sqlite3_busy_handler(
      other.handle(),
      [](void* data, int) {
        auto* w = static_cast<Waiting*>(data);
        ++w->calls;
        if (*w->held) {
          (*w->held)->commit();
          w->held->reset();
        }
        return 1;  // try again
      },
      &waiting);
  Transaction writer(other);
  other.exec("INSERT INTO t VALUES (2)");
  writer.commit();
  EXPECT_GE(waiting.calls, 1);
  EXPECT_EQ(other.query_int("SELECT COUNT(*) FROM t"), 2);
}

// Lowers RLIMIT_FSIZE (a full file system, for this process) and ignores
// SIGXFSZ so that writes past it fail with EFBIG; both are restored however
// the test ends.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    m_previous_handler = std::signal(SIGXFSZ, SIG_IGN);
    ::getrlimit(RLIMIT_FSIZE, &m_saved);
    rlimit tight = m_saved;
    tight.rlim_cur = bytes;
    m_set = ::setrlimit(RLIMIT_FSIZE, &tight) == 0;
  }
  ~FileSizeLimit() { restore(); }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;
  bool set() const { return m_set; }
  void restore() {
    if (m_restored) {
      return;
    }
    ::setrlimit(RLIMIT_FSIZE, &m_saved);
    std::signal(SIGXFSZ, m_previous_handler);
    m_restored = true;
  }

 private:
  rlimit m_saved{};
  void (*m_previous_handler)(int) = SIG_DFL;
  bool m_set = false;
  bool m_restored = false;
};

TEST(Sqlite, AWriteTheDiskCannotTakeIsAnErrorAndTheDatabaseStaysWhole) {
  testing::TempDir dir;
  const auto path = dir.path() / "t.db";
  Database db(path);
  db.exec("CREATE TABLE t (v); INSERT INTO t VALUES ('small')");
  const std::string big(1024 * 1024, 'b');
  int code = -1;
  {
    FileSizeLimit limit(std::filesystem::file_size(path) + 4096);
    ASSERT_TRUE(limit.set());
    try {
      Transaction transaction(db);
      Statement insert(db, "INSERT INTO t VALUES (?1)");
      insert.bind(1, big).run();
      transaction.commit();
    } catch (const Error& e) {
      code = e.code();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not SQLite's error: " << e.what();
    }
  }
  // EFBIG is a failed write to SQLite (SQLITE_IOERR_WRITE, primary
  // SQLITE_IOERR); only ENOSPC, a real full disk, would be SQLITE_FULL.
  EXPECT_EQ(code, SQLITE_IOERR);
  EXPECT_NE(sqlite3_get_autocommit(db.handle()), 0) << "a transaction was left open";
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM t"), 1);
  EXPECT_EQ(db.query_text("PRAGMA integrity_check"), std::optional<std::string>("ok"));
  // With room again, the same write goes through.
  Transaction transaction(db);
  Statement insert(db, "INSERT INTO t VALUES (?1)");
  insert.bind(1, big).run();
  transaction.commit();
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM t"), 2);
}

}  // namespace
}  // namespace envcontract
