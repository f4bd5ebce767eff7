// The agent's SQLite store on real database files: differential history,
// since/flapping, migrations, and files that are not ours.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/json_text.hpp"
#include "daemon/sqlite.hpp"
#include "daemon/store.hpp"
#include "tests/support/report_schema.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

using daemon::Store;
using Json = report::Json;

Json check(const std::string& id, const std::string& status, const std::string& cause = "",
           const Json& actual = nullptr) {
  Json result = {{"id", id},
                 {"kind", "smoke"},
                 {"severity", "required"},
                 {"status", status},
                 {"expected", Json::object()},
                 {"actual", actual}};
  result["diagnosis"] = status == "pass" ? Json(nullptr)
                                         : Json({{"cause", cause},
                                                 {"summary", id + " " + cause},
                                                 {"evidence", Json::object()},
                                                 {"remedy", ""}});
  result["notes"] = Json::array();
  result["since"] = nullptr;
  result["flapping"] = false;
  return result;
}

// A report of one host with the given envs, each {name: [checks]}.
Json report_at(const std::string& at, const std::vector<std::pair<std::string, Json>>& envs) {
  Json report = {
      {"schema_version", 1},
      {"host", "node-1"},
      {"scanned_at", at},
      {"duration_ms", 12.5},
      {"contract", {{"name", "demo"}, {"path", "/c.yaml"}, {"sha256", std::string(64, 'a')}}}};
  auto env_list = Json::array();
  auto compliant = Json::array();
  bool drift = false;
  for (const auto& [name, checks] : envs) {
    bool failing = false;
    for (const auto& c : checks) {
      failing = failing || c["status"] == "fail";
    }
    drift = drift || failing;
    if (!failing) {
      compliant.push_back(name);
    }
    env_list.push_back({{"name", name},
                        {"prefix", "/envs/" + name},
                        {"kind", "conda"},
                        {"python_version", "3.10.13"},
                        {"target", nullptr},
                        {"probed_at", at},
                        {"verdict", failing ? "drift" : "compliant"},
                        {"summary", ""},
                        {"checks", checks}});
  }
  report["verdict"] = compliant.empty() ? "drift" : "compliant";
  report["reasons"] = compliant.empty() ? Json({"no env satisfies the contract"}) : Json::array();
  report["compliant_envs"] = compliant;
  report["image"] = {{"value", ""}, {"source", ""}, {"problem", ""}};
  report["targets"] = Json::array();
  report["envs"] = env_list;
  report["problems"] = Json::array();
  return report;
}

std::unique_ptr<Store> open_store(const std::filesystem::path& path,
                                  daemon::FlappingRule rule = {}) {
  auto opened = Store::open(path, rule);
  if (auto* error = std::get_if<std::string>(&opened)) {
    ADD_FAILURE() << *error;
    return nullptr;
  }
  return std::move(std::get<std::unique_ptr<Store>>(opened));
}

std::string open_error(const std::filesystem::path& path) {
  auto opened = Store::open(path);
  auto* error = std::get_if<std::string>(&opened);
  return error != nullptr ? *error : "";
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

TEST(Store, NewDatabaseIsOursInWalModeAtTheLatestSchema) {
  testing::TempDir dir;
  const auto path = dir.path() / "state/agent.db";  // the directory is created
  ASSERT_NE(open_store(path), nullptr);
  daemon::sqlite::Database db(path);
  EXPECT_EQ(db.query_text("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(db.query_int("PRAGMA user_version"), Store::schema_version);
  EXPECT_EQ(db.query_int("PRAGMA application_id"), 0x45434e54);
}

TEST(Store, UnchangedHostAddsAScanRowAndNoHistory) {
  testing::TempDir dir;
  auto store = open_store(dir.path() / "agent.db");
  ASSERT_NE(store, nullptr);
  const auto checks = Json::array(
      {check("import-order", "fail", "missing_library"), check("python", "pass", "", "3.10.13")});
  auto first = report_at("2026-11-24T09:00:00Z", {{"torch-fl-hf-test", checks}});
  EXPECT_EQ(store->record_scan(first), 1);
  const auto after_first = store->transition_count();
  EXPECT_EQ(after_first, 4);  // host verdict, env verdict, two checks

  auto second = report_at("2026-11-24T09:05:00Z", {{"torch-fl-hf-test", checks}});
  EXPECT_EQ(store->record_scan(second), 2);
  EXPECT_EQ(store->transition_count(), after_first);
  EXPECT_EQ(store->scan_count(), 2);
  EXPECT_EQ(second["scan_id"], 2);
  EXPECT_EQ(second["envs"][0]["checks"][0]["since"], "2026-11-24T09:00:00Z");
  EXPECT_EQ(second["envs"][0]["checks"][0]["flapping"], false);

  const auto violations = testing::report_schema_violations(second);
  if (violations) {
    EXPECT_EQ(*violations, "");
  }
}

TEST(Store, HistoryTellsSinceWhenItFailedAndWhenItWasFixed) {
  testing::TempDir dir;
  auto store = open_store(dir.path() / "agent.db");
  ASSERT_NE(store, nullptr);
  auto r1 = report_at(
      "2026-11-24T09:00:00Z",
      {{"env-a", Json::array({check("import-order", "fail", "missing_library", "libbkcl.so")})}});
  auto r2 = report_at(
      "2026-11-25T09:00:00Z",
      {{"env-a", Json::array({check("import-order", "fail", "missing_library", "libxpurt.so")})}});
  auto r3 =
      report_at("2026-11-26T09:00:00Z", {{"env-a", Json::array({check("import-order", "pass")})}});
  store->record_scan(r1);
  store->record_scan(r2);
  // Another missing library is a new value, not a new status: since stays.
  EXPECT_EQ(r2["envs"][0]["checks"][0]["since"], "2026-11-24T09:00:00Z");
  store->record_scan(r3);
  EXPECT_EQ(r3["envs"][0]["checks"][0]["since"], "2026-11-26T09:00:00Z");

  const auto history = store->history({"env-a", "", "import-order", "", 100});
  ASSERT_EQ(history.size(), 3U) << common::json_text(history, 2);
  EXPECT_EQ(history[0]["status"], "fail");
  EXPECT_EQ(history[0]["previous_status"], nullptr);
  EXPECT_EQ(history[0]["actual"], "libbkcl.so");
  EXPECT_EQ(history[1]["actual"], "libxpurt.so");
  EXPECT_EQ(history[2]["status"], "pass");
  EXPECT_EQ(history[2]["previous_status"], "fail");
  EXPECT_EQ(history[2]["at"], "2026-11-26T09:00:00Z");
  EXPECT_EQ(history[2]["scope"], "env");
  EXPECT_EQ(history[2]["name"], "env-a");

  EXPECT_EQ(store->history({"env-a", "", "import-order", "2026-11-25T12:00:00Z", 100}).size(), 1U);
  const auto verdicts = store->history({"", "", "@verdict", "", 100});
  EXPECT_EQ(verdicts.size(), 4U);  // host drift, env drift; host compliant, env compliant
}

TEST(Store, ChecksThatKeepChangingAreFlagged) {
  testing::TempDir dir;
  auto store = open_store(dir.path() / "agent.db", {3, std::chrono::hours(24)});
  ASSERT_NE(store, nullptr);
  Json last;
  for (int hour = 0; hour < 6; ++hour) {
    auto report = report_at(
        "2026-11-24T0" + std::to_string(hour) + ":00:00Z",
        {{"env-a",
          Json::array({check("devices", hour % 2 == 0 ? "fail" : "pass", "too_few_devices")})}});
    store->record_scan(report);
    last = report;
    // Changes so far: hour 1..hour; more than 3 from the fourth change on.
    EXPECT_EQ(report["envs"][0]["checks"][0]["flapping"], hour > 3) << hour;
  }
  // A day later, with the status steady, the changes have left the window.
  auto later =
      report_at("2026-11-26T05:00:00Z", {{"env-a", Json::array({check("devices", "pass")})}});
  store->record_scan(later);
  EXPECT_EQ(later["envs"][0]["checks"][0]["flapping"], false);
  EXPECT_EQ(later["envs"][0]["checks"][0]["since"], "2026-11-24T05:00:00Z");
}

TEST(Store, AnEnvThatDisappearsEndsItsTimeline) {
  testing::TempDir dir;
  auto store = open_store(dir.path() / "agent.db");
  ASSERT_NE(store, nullptr);
  auto both =
      report_at("2026-11-24T09:00:00Z", {{"env-a", Json::array()}, {"env-b", Json::array()}});
  store->record_scan(both);
  auto one = report_at("2026-11-24T10:00:00Z", {{"env-a", Json::array()}});
  store->record_scan(one);
  const auto history = store->history({"env-b", "", "@verdict", "", 100});
  ASSERT_EQ(history.size(), 2U);
  EXPECT_EQ(history[1]["status"], "gone");
  auto again = report_at("2026-11-24T11:00:00Z", {{"env-a", Json::array()}});
  store->record_scan(again);
  EXPECT_EQ(store->history({"env-b", "", "@verdict", "", 100}).size(), 2U);
}

TEST(Store, LatestReportSurvivesReopening) {
  testing::TempDir dir;
  const auto path = dir.path() / "agent.db";
  {
    auto store = open_store(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->latest_report(), std::nullopt);
    auto report = report_at("2026-11-24T09:00:00Z", {{"env-a", Json::array()}});
    store->record_scan(report);
  }
  auto store = open_store(path);
  ASSERT_NE(store, nullptr);
  const auto latest = store->latest_report();
  ASSERT_TRUE(latest);
  EXPECT_EQ((*latest)["scan_id"], 1);
  EXPECT_EQ((*latest)["envs"][0]["name"], "env-a");
}

TEST(Store, OlderSchemaIsUpgradedWithItsHistory) {
  testing::TempDir dir;
  const auto path = dir.path() / "v1.db";
  {
    daemon::sqlite::Database db(path);
    db.exec(read_bytes(ENVCONTRACT_SOURCE_DIR "/tests/fixtures/store/schema_v1.sql"));
  }
  auto store = open_store(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->latest_report().value_or(Json())["host"], "old");
  auto report =
      report_at("2026-11-30T09:00:00Z",
                {{"torch-fl-cpu", Json::array({check("first-device-op", "fail", "hang")})}});
  store->record_scan(report);
  // The state carried over: hanging since the v1 scan, and no new transition.
  EXPECT_EQ(report["envs"][0]["checks"][0]["since"], "2026-11-24T09:00:12Z");
  EXPECT_EQ(store->history({"torch-fl-cpu", "", "first-device-op", "", 100}).size(), 1U);
  daemon::sqlite::Database db(path);
  EXPECT_EQ(db.query_int("PRAGMA user_version"), Store::schema_version);
}

TEST(Store, FilesThatAreNotOursAreRefusedAndLeftUntouched) {
  testing::TempDir dir;
  const auto garbage = dir.write("garbage.db", std::string(8192, 'x'));
  EXPECT_NE(open_error(garbage).find("is not an envcontract database"), std::string::npos)
      << open_error(garbage);
  EXPECT_NE(open_error(garbage).find("left untouched"), std::string::npos);
  EXPECT_EQ(read_bytes(garbage), std::string(8192, 'x'));

  const auto foreign = dir.path() / "foreign.db";
  {
    daemon::sqlite::Database db(foreign);
    db.exec("CREATE TABLE recipes (name TEXT); INSERT INTO recipes VALUES ('bread')");
  }
  const auto foreign_bytes = read_bytes(foreign);
  EXPECT_NE(open_error(foreign).find("of another application"), std::string::npos)
      << open_error(foreign);
  EXPECT_EQ(read_bytes(foreign), foreign_bytes);

  const auto newer = dir.path() / "newer.db";
  {
    daemon::sqlite::Database db(newer);
    db.exec("PRAGMA application_id = 1162038868; PRAGMA user_version = 99; CREATE TABLE x (y)");
  }
  EXPECT_NE(open_error(newer).find("written by a newer envcontract (schema version 99"),
            std::string::npos)
      << open_error(newer);

  EXPECT_NE(open_error(dir.path()).find("is a directory"), std::string::npos);
}

TEST(Store, DamagedPagesAreReportedAsCorrupt) {
  testing::TempDir dir;
  const auto path = dir.path() / "agent.db";
  {
    auto store = open_store(path);
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < 20; ++i) {
      auto report = report_at(
          "2026-11-24T09:" + std::string(i < 10 ? "0" : "") + std::to_string(i) + ":00Z",
          {{"env-" + std::to_string(i), Json::array({check("c", i % 2 ? "pass" : "fail", "x")})}});
      store->record_scan(report);
    }
    daemon::sqlite::Database db(path);
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  // Scribble over the second page (a table's b-tree page).
  std::string bytes = read_bytes(path);
  ASSERT_GT(bytes.size(), 8192U);
  for (std::size_t i = 4096; i < 4096 + 200; ++i) {
    bytes[i] = '\x7f';
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  const auto error = open_error(path);
  EXPECT_TRUE(error.find("is corrupt") != std::string::npos ||
              error.find("malformed") != std::string::npos)
      << error;
  EXPECT_EQ(read_bytes(path), bytes);
}

}  // namespace
}  // namespace envcontract
