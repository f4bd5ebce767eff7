// daemon/store_schema.cpp: the store's schema, as the migrations that build and upgrade it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/sqlite.hpp"
#include "daemon/store.hpp"
#include "daemon/store_schema.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

using daemon::Store;
using daemon::store_application_id;
using daemon::store_migrations;
using daemon::sqlite::Database;

const auto k_latest = static_cast<std::int64_t>(store_migrations().size());

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Every table, index and their SQL, as SQLite keeps them.
std::vector<std::string> schema_of(const std::filesystem::path& path) {
  Database db(path);
  daemon::sqlite::Statement rows(
      db, "SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master ORDER BY type, name");
  std::vector<std::string> schema;
  while (rows.step()) {
    schema.push_back(rows.text(0) + " " + rows.text(1) + " on " + rows.text(2) + ": " +
                     rows.text(3));
  }
  return schema;
}

// A database at schema version `version`, as the agent that wrote it left
// it: the first `version` migrations applied, each in its transaction.
void build_at_version(const std::filesystem::path& path, std::int64_t version) {
  Database db(path);
  db.exec("PRAGMA foreign_keys=OFF");
  for (std::int64_t next = 0; next < version; ++next) {
    daemon::sqlite::Transaction transaction(db);
    db.exec(store_migrations()[static_cast<std::size_t>(next)]);
    db.exec("PRAGMA application_id=" + std::to_string(store_application_id) +
            "; PRAGMA user_version=" + std::to_string(next + 1));
    transaction.commit();
  }
}

std::string open_error(const std::filesystem::path& path) {
  const auto opened = Store::open(path);
  return opened ? std::string() : opened.error();
}

// Each foreign key names a table that exists (a rebuilt table renamed into
// place must leave its referrers pointing at it).
std::vector<std::string> dangling_foreign_keys(Database& db) {
  daemon::sqlite::Statement keys(
      db,
      "SELECT m.name, f.\"table\" FROM sqlite_master m, pragma_foreign_key_list(m.name) f "
      "WHERE m.type = 'table' AND f.\"table\" NOT IN "
      "(SELECT name FROM sqlite_master WHERE type = 'table')");
  std::vector<std::string> dangling;
  while (keys.step()) {
    dangling.push_back(keys.text(0) + " -> " + keys.text(1));
  }
  return dangling;
}

TEST(StoreSchema, TheMigrationsEndAtTheVersionTheStoreWrites) {
  EXPECT_EQ(k_latest, Store::schema_version);
  for (std::size_t i = 0; i < store_migrations().size(); ++i) {
    EXPECT_NE(store_migrations()[i].find_first_not_of(" \n"), std::string_view::npos)
        << "migration " << i + 1 << " is empty";
  }
}

// Applied in order to an empty file, each migration runs, leaves every
// reference whole, and the end is the schema a new store gets.
TEST(StoreSchema, MigrationsAppliedInOrderBuildTheSchemaOfANewStore) {
  testing::TempDir dir;
  const auto by_hand = dir.path() / "by-hand.db";
  {
    Database db(by_hand);
    for (std::size_t i = 0; i < store_migrations().size(); ++i) {
      ASSERT_NO_THROW(db.exec(store_migrations()[i])) << "migration " << i + 1;
      EXPECT_EQ(db.query_text("PRAGMA foreign_key_check"), std::nullopt) << "after " << i + 1;
      EXPECT_EQ(dangling_foreign_keys(db), std::vector<std::string>{}) << "after " << i + 1;
    }
  }
  const auto by_store = dir.path() / "agent.db";
  ASSERT_EQ(open_error(by_store), "");
  EXPECT_EQ(schema_of(by_hand), schema_of(by_store));
  Database db(by_store);
  EXPECT_EQ(db.query_int("PRAGMA user_version"), k_latest);
  EXPECT_EQ(db.query_int("PRAGMA application_id"), store_application_id);
  EXPECT_EQ(db.query_text("PRAGMA integrity_check"), std::optional<std::string>("ok"));
}

// A file left at any older version is taken from there, not from the start
// (a table made twice would fail) nor past a migration (a table missing),
// and ends with the same schema as a new one.
TEST(StoreSchema, AFileAtEveryOlderVersionIsUpgradedToTheLatest) {
  testing::TempDir dir;
  const auto fresh = dir.path() / "fresh.db";
  ASSERT_EQ(open_error(fresh), "");
  const auto latest_schema = schema_of(fresh);
  for (std::int64_t version = 1; version < k_latest; ++version) {
    const auto path = dir.path() / ("v" + std::to_string(version) + ".db");
    build_at_version(path, version);
    ASSERT_EQ(open_error(path), "") << "from version " << version;
    EXPECT_EQ(schema_of(path), latest_schema) << "from version " << version;
    Database db(path);
    EXPECT_EQ(db.query_int("PRAGMA user_version"), k_latest) << "from version " << version;
    EXPECT_EQ(db.query_text("PRAGMA foreign_key_check"), std::nullopt);
    EXPECT_EQ(dangling_foreign_keys(db), std::vector<std::string>{}) << "from version " << version;
  }
}

// Version 1's rows through every migration: scans get integer times and a
// contract by reference (one row per distinct contract), each check's
// current state is its latest transition, and every reference still holds.
TEST(StoreSchema, VersionOneHistoryIsCarriedThroughEveryMigration) {
  testing::TempDir dir;
  const auto path = dir.path() / "v1.db";
  build_at_version(path, 1);
  {
    Database db(path);
    db.exec(
        "INSERT INTO scans VALUES "
        "(1, '2026-11-24T09:00:12Z', 21000.9, 'demo', 'aa', 'drift', 1, 0), "
        "(2, '2026-11-24T09:05:00Z', 10.0, 'demo', 'aa', 'compliant', 1, 1), "
        "(3, 'not a time', 5.5, 'demo', 'bb', 'compliant', 1, 1);"
        "INSERT INTO transitions VALUES "
        "(1, 1, '2026-11-24T09:00:12Z', 'host', '@verdict', 'drift', NULL, '', '', 'null', "
        "'2026-11-24T09:00:12Z'), "
        "(2, 1, '2026-11-24T09:00:12Z', 'env:a', 'c', 'fail', NULL, 'hang', 'hangs', 'null', "
        "'2026-11-24T09:00:12Z'), "
        "(3, 2, '2026-11-24T09:05:00Z', 'env:a', 'c', 'pass', 'fail', '', '', 'null', "
        "'2026-11-24T09:05:00Z'), "
        "(4, 2, '2026-11-24T09:05:00Z', 'host', '@verdict', 'compliant', 'drift', '', '', "
        "'null', '2026-11-24T09:05:00Z');"
        "INSERT INTO latest_report VALUES (1, 3, '{}');");
  }
  ASSERT_EQ(open_error(path), "");
  Database db(path);
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM scans"), 3);
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM contracts"), 2);
  EXPECT_EQ(db.query_int("SELECT COUNT(DISTINCT contract_id) FROM scans WHERE id IN (1, 2)"), 1);
  EXPECT_EQ(db.query_text("SELECT c.sha256 FROM scans s JOIN contracts c ON c.id = s.contract_id "
                          "WHERE s.id = 3"),
            std::optional<std::string>("bb"));

  using namespace std::chrono;
  const auto first = sys_days{year{2026} / November / 24} + hours{9} + seconds{12};
  EXPECT_EQ(db.query_int("SELECT started_at FROM scans WHERE id = 1"),
            duration_cast<seconds>(first.time_since_epoch()).count());
  EXPECT_EQ(db.query_text("SELECT typeof(started_at) FROM scans WHERE id = 1"),
            std::optional<std::string>("integer"));
  EXPECT_EQ(db.query_int("SELECT started_at FROM scans WHERE id = 3"), 0);  // unreadable: 0
  EXPECT_EQ(db.query_int("SELECT duration_ms FROM scans WHERE id = 1"), 21000);

  EXPECT_EQ(db.query_int("SELECT transition_id FROM current_states WHERE subject = 'env:a' AND "
                         "check_id = 'c'"),
            3);
  EXPECT_EQ(db.query_int("SELECT transition_id FROM current_states WHERE subject = 'host'"), 4);
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM current_states"), 2);
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM transitions t JOIN scans s ON s.id = t.scan_id"), 4);
  EXPECT_EQ(db.query_int("SELECT scan_id FROM latest_report"), 3);
  EXPECT_EQ(db.query_text("PRAGMA foreign_key_check"), std::nullopt);
  EXPECT_EQ(dangling_foreign_keys(db), std::vector<std::string>{});
}

// A migration that fails (a table it makes is there already) is rolled back
// whole: the file stays at its version with its tables as they were.
TEST(StoreSchema, AMigrationThatFailsLeavesTheFileAtItsVersion) {
  testing::TempDir dir;
  const auto path = dir.path() / "v2.db";
  build_at_version(path, 2);
  {
    Database db(path);
    db.exec(
        "INSERT INTO scans VALUES (1, '2026-11-24T09:00:12Z', 1.0, 'demo', 'aa', 'drift', 1, 0);"
        "CREATE TABLE contracts (x)");  // in the way of migration 3
  }
  EXPECT_NE(open_error(path), "");
  Database db(path);
  EXPECT_EQ(db.query_int("PRAGMA user_version"), 2);
  EXPECT_EQ(db.query_text("SELECT typeof(started_at) FROM scans"),
            std::optional<std::string>("text"));
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM sqlite_master WHERE name = 'scans_v3'"), 0);
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM sqlite_master WHERE name = 'provisions'"), 0);
}

// A version this agent does not know is refused, and the file not touched
// (no WAL switch, no vacuum, no migration).
TEST(StoreSchema, ANewerVersionIsRefusedAndTheFileLeftAsItWas) {
  testing::TempDir dir;
  const auto path = dir.path() / "newer.db";
  build_at_version(path, k_latest);
  {
    Database db(path);
    db.exec("PRAGMA user_version=" + std::to_string(k_latest + 1) +
            "; CREATE TABLE from_the_future (x)");
  }
  const auto before = read_bytes(path);
  const auto error = open_error(path);
  EXPECT_NE(error.find("schema version " + std::to_string(k_latest + 1)), std::string::npos)
      << error;
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_FALSE(std::filesystem::exists(path.string() + "-wal"));
  EXPECT_EQ(Database(path).query_int("PRAGMA user_version"), k_latest + 1);
}

// Another application's SQLite file is never migrated, whatever its
// user_version says: with no application_id, or with another one.
TEST(StoreSchema, AForeignDatabaseIsNeverMigrated) {
  testing::TempDir dir;
  struct Foreign {
    const char* name;
    std::int64_t application_id;
    std::int64_t user_version;
  };
  for (const auto& foreign :
       {Foreign{"plain.db", 0, 0}, Foreign{"versioned.db", 0, 2},
        Foreign{"other-app.db", 0x46534c21, 0}, Foreign{"other-app-v1.db", 0x46534c21, 1}}) {
    const auto path = dir.path() / foreign.name;
    {
      Database db(path);
      db.exec("PRAGMA application_id=" + std::to_string(foreign.application_id) +
              "; PRAGMA user_version=" + std::to_string(foreign.user_version) +
              "; CREATE TABLE recipes (name TEXT); INSERT INTO recipes VALUES ('bread')");
    }
    const auto before = read_bytes(path);
    EXPECT_NE(open_error(path), "") << foreign.name;
    EXPECT_EQ(read_bytes(path), before) << foreign.name;
    Database db(path);
    EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM sqlite_master WHERE name = 'scans'"), 0)
        << foreign.name;
    EXPECT_EQ(db.query_int("PRAGMA user_version"), foreign.user_version) << foreign.name;
    EXPECT_EQ(db.query_int("PRAGMA application_id"), foreign.application_id) << foreign.name;
  }
}

// An empty SQLite file (or none) is a new store, not a foreign one.
TEST(StoreSchema, AnEmptyFileBecomesANewStore) {
  testing::TempDir dir;
  const auto empty = dir.write("empty.db", "");
  ASSERT_EQ(open_error(empty), "");
  Database db(empty);
  EXPECT_EQ(db.query_int("PRAGMA user_version"), k_latest);
  EXPECT_EQ(db.query_int("PRAGMA application_id"), store_application_id);
}

// A file of ours whose user_version is below zero (damaged, or made by hand:
// SQLite's user_version is signed) is refused and left as it was, never
// taken for an older schema (the upgrade would index the migrations at -1).
// Run in a child, so that a crash fails this test only.
TEST(StoreSchema, ANegativeVersionIsRefusedAndTheFileLeftAsItWas) {
  testing::TempDir dir;
  const auto path = dir.path() / "negative.db";
  build_at_version(path, k_latest);
  Database(path).exec("PRAGMA user_version=-1");
  const auto before = read_bytes(path);
  EXPECT_EXIT(
      {
        const auto error = open_error(path);
        const bool untouched = read_bytes(path) == before;
        std::fprintf(stderr, "open: '%s'; untouched: %d\n", error.c_str(), untouched ? 1 : 0);
        ::_exit(!error.empty() && untouched ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EQ(Database(path).query_int("PRAGMA user_version"), -1);
}

}  // namespace
}  // namespace envcontract
