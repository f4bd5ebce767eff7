// The agent's SQLite store on real database files: differential history,
// since/flapping, migrations, and files that are not ours.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <fstream>
#include <sstream>

#include "common/json_text.hpp"
#include "common/time_text.hpp"
#include "daemon/sqlite.hpp"
#include "daemon/store.hpp"
#include "report/report_json.hpp"
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

// A report of one host with the given envs, each {name: [checks]}, as
// another agent's would be read.
report::Report report_at(const std::string& at,
                         const std::vector<std::pair<std::string, Json>>& envs) {
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
  return report::report_from_json(report);
}

std::unique_ptr<Store> open_store(const std::filesystem::path& path,
                                  daemon::FlappingRule rule = {}) {
  auto opened = Store::open(path, rule);
  if (!opened) {
    ADD_FAILURE() << opened.error();
    return nullptr;
  }
  return std::move(opened.value());
}

std::string open_error(const std::filesystem::path& path) {
  auto opened = Store::open(path);
  return opened.error();
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

TEST(Store, NewDatabaseIsOursInWalModeAtTheLatestSchema) {
  testing::TempDir dir;
  const auto path = dir.path() / "agent.db";
  ASSERT_NE(open_store(path), nullptr);
  daemon::sqlite::Database db(path);
  EXPECT_EQ(db.query_text("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(db.query_int("PRAGMA user_version"), Store::schema_version);
  EXPECT_EQ(db.query_int("PRAGMA application_id"), 0x45434e54);
}

// A mistyped directory is not made: it is said (only the package's default
// directory, /var/lib/envcontract, is made when missing).
TEST(Store, ADirectoryThatIsNotThereIsRefusedNotMade) {
  testing::TempDir dir;
  const auto missing = dir.path() / "no-such-dir";
  const auto opened = Store::open(missing / "agent.db");
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error(), "the database's directory " + missing.string() +
                                " does not exist; create it, or name a database in a "
                                "directory that exists (--database, database:)");
  EXPECT_FALSE(std::filesystem::exists(missing));
  const auto file = dir.write("a-file", "");
  const auto under_file = Store::open(file / "agent.db");
  ASSERT_FALSE(under_file);
  EXPECT_NE(under_file.error().find(file.string() + " is not a directory"), std::string::npos)
      << under_file.error();
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
  std::shared_ptr<const std::string> stored_text;
  EXPECT_EQ(store->record_scan(second, &stored_text), 2);
  // The text stored is the report as recorded (its scan id and each
  // check's since), handed back for the agent to serve.
  ASSERT_NE(stored_text, nullptr);
  EXPECT_EQ(*stored_text, common::json_text(report::to_json(second)));
  EXPECT_EQ(report::to_json(*store->latest_report()), report::to_json(second));
  EXPECT_EQ(store->transition_count(), after_first);
  EXPECT_EQ(store->scan_count(), 2);
  EXPECT_EQ(second.scan_id, std::optional<std::int64_t>(2));
  EXPECT_EQ(second.envs[0].checks[0].since, std::optional<std::string>("2026-11-24T09:00:00Z"));
  EXPECT_EQ(second.envs[0].checks[0].flapping, false);

  const auto violations = testing::report_schema_violations(report::to_json(second));
  if (violations) {
    EXPECT_EQ(*violations, "");
  }
}

std::string integrity(const std::filesystem::path& path) {
  daemon::sqlite::Database db(path);
  return db.query_text("PRAGMA integrity_check").value_or("no answer");
}

// History older than the retention goes, except each check's current state
// (its `since` survives), and the file gives the space back.
TEST(Store, RetentionDeletesOldHistoryButKeepsCurrentStates) {
  testing::TempDir dir;
  const auto path = dir.path() / "agent.db";
  daemon::StoreLimits limits;
  limits.retention = std::chrono::hours(24 * 90);
  limits.prune_every = 1000000;  // pruned by hand below
  auto opened = Store::open(path, {}, limits);
  ASSERT_TRUE(opened.ok()) << opened.error();
  auto& store = opened.value();
  // A year ago, a check that changed every scan; since then, steady.
  const std::string padding(2000, 'p');
  for (int day = 1; day <= 28; ++day) {
    auto report = report_at(
        "2025-11-" + std::string(day < 10 ? "0" : "") + std::to_string(day) + "T09:00:00Z",
        {{"env-a",
          Json::array({check("c", day % 2 ? "pass" : "fail", "x", padding + std::to_string(day)),
                       check("steady", "fail", "hang")})}});
    store->record_scan(report);
  }
  auto recent = report_at(
      "2026-11-29T09:00:00Z",
      {{"env-a", Json::array({check("c", "pass", "", "now"), check("steady", "fail", "hang")})}});
  store->record_scan(recent);
  const auto transitions_before = store->transition_count();
  const auto pages_before = daemon::sqlite::Database(path).query_int("PRAGMA page_count");

  store->prune(*common::parse_rfc3339("2026-11-30T12:00:00Z"));
  // Left: each subject's current state (host and env verdicts, c, steady).
  EXPECT_EQ(store->transition_count(), 4) << transitions_before;
  EXPECT_EQ(store->scan_count(), 2);  // the steady check's first scan, and the latest
  auto next = report_at(
      "2026-11-30T09:00:00Z",
      {{"env-a", Json::array({check("c", "pass", "", "now"), check("steady", "fail", "hang")})}});
  store->record_scan(next);
  EXPECT_EQ(next.envs[0].checks[1].since, std::optional<std::string>("2025-11-01T09:00:00Z"));
  EXPECT_EQ(integrity(path), "ok");
  EXPECT_LT(daemon::sqlite::Database(path).query_int("PRAGMA page_count"), pages_before);
  EXPECT_EQ(daemon::sqlite::Database(path).query_int("PRAGMA freelist_count"), 0);
}

// An `actual` of a megabyte is stored as its head, size and hash: visible as
// cut, and a change past the head is still a change.
TEST(Store, LargeActualValuesAreStoredCutWithAMarker) {
  testing::TempDir dir;
  auto store = open_store(dir.path() / "agent.db");
  ASSERT_NE(store, nullptr);
  const std::string big(1024 * 1024, 'x');
  auto first = report_at("2026-11-30T09:00:00Z",
                         {{"env-a", Json::array({check("c", "fail", "x", big + "1")})}});
  store->record_scan(first);
  auto second = report_at("2026-11-30T09:05:00Z",
                          {{"env-a", Json::array({check("c", "fail", "x", big + "2")})}});
  store->record_scan(second);
  const auto history = store->history({"env-a", "", "c", "", 100});
  ASSERT_EQ(history.size(), 2U) << "a change past the head must still be recorded";
  const auto& actual = history[0]["actual"];
  EXPECT_EQ(actual["truncated"], true);
  EXPECT_EQ(actual["bytes"], big.size() + 3);  // the JSON string's quotes
  EXPECT_EQ(actual["head"].get<std::string>().size(), daemon::StoreLimits{}.max_actual_bytes / 2);
  EXPECT_EQ(actual["sha256"].get<std::string>().size(), 64U);
  // The history holds heads; only the latest report (served after a
  // restart) keeps the whole value.
  daemon::sqlite::Database db(dir.path() / "agent.db");
  EXPECT_LT(db.query_int("SELECT SUM(LENGTH(actual)) FROM transitions"), 64 * 1024);
}

// The clock jumps back a day between scans: both are recorded, in order of
// arrival, and the history stays consistent.
TEST(Store, TheClockJumpingBackwardsLosesNothing) {
  testing::TempDir dir;
  const auto path = dir.path() / "agent.db";
  auto store = open_store(path);
  ASSERT_NE(store, nullptr);
  auto later =
      report_at("2026-11-30T09:00:00Z", {{"env-a", Json::array({check("c", "fail", "x")})}});
  store->record_scan(later);
  auto earlier =
      report_at("2026-11-29T09:00:00Z", {{"env-a", Json::array({check("c", "pass", "")})}});
  EXPECT_EQ(store->record_scan(earlier), 2);
  const auto history = store->history({"env-a", "", "c", "", 100});
  ASSERT_EQ(history.size(), 2U);
  EXPECT_EQ(history[1]["status"], "pass");
  EXPECT_EQ(history[1]["previous_status"], "fail");
  store->prune(*common::parse_rfc3339("2026-11-30T12:00:00Z"));
  EXPECT_EQ(store->latest_report().value_or(report::Report{}).scan_id,
            std::optional<std::int64_t>(2));
  EXPECT_EQ(integrity(path), "ok");
}

// The disk fills mid-write (RLIMIT_FSIZE stands in for a full file system):
// the write fails with an error, nothing half-written remains, and writes
// resume once there is room.
TEST(Store, ADiskFullWriteFailsCleanlyAndWritesResume) {
  testing::TempDir dir;
  const auto path = dir.path() / "agent.db";
  auto store = open_store(path);
  ASSERT_NE(store, nullptr);
  auto first = report_at("2026-11-30T09:00:00Z", {{"env-a", Json::array({check("c", "pass")})}});
  store->record_scan(first);
  daemon::sqlite::Database(path).exec("PRAGMA wal_checkpoint(TRUNCATE)");

  const auto previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit saved{};
  ::getrlimit(RLIMIT_FSIZE, &saved);
  rlimit tight = saved;
  tight.rlim_cur = std::filesystem::file_size(path) + 4096;
  ::setrlimit(RLIMIT_FSIZE, &tight);
  // Larger than the database file itself, whatever its schema holds.
  auto checks = Json::array();
  for (int i = 0; i < 40; ++i) {
    checks.push_back(check("c" + std::to_string(i), "fail", "x", std::string(8000, 'y')));
  }
  auto big = report_at("2026-11-30T09:05:00Z", {{"env-a", checks}});
  bool failed = false;
  try {
    store->record_scan(big);
  } catch (const daemon::sqlite::Error& e) {
    failed = true;
    // A disk I/O error (EFBIG on the WAL) or a full database or disk.
    EXPECT_TRUE(e.code() == SQLITE_IOERR || e.code() == SQLITE_FULL)
        << e.code() << ": " << e.what();
  } catch (const std::exception& e) {
    failed = true;  // the limit and the signal are restored below all the same
    ADD_FAILURE() << "not SQLite's error: " << e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  EXPECT_TRUE(failed);
  EXPECT_EQ(store->scan_count(), 1);
  auto resumed = report_at("2026-11-30T09:10:00Z", {{"env-a", Json::array({check("c", "pass")})}});
  EXPECT_EQ(store->record_scan(resumed), 2);
  EXPECT_EQ(integrity(path), "ok");
}

// A database its agent may not write (another user's file, a read-only
// mount): opening it says so, and the file is left as it was.
TEST(Store, AReadOnlyDatabaseIsAClearError) {
  testing::TempDir dir;
  const auto path = dir.path() / "agent.db";
  {
    auto store = open_store(path);
    ASSERT_NE(store, nullptr);
    auto report = report_at("2026-11-30T09:00:00Z", {{"env-a", Json::array()}});
    store->record_scan(report);
  }
  daemon::sqlite::Database(path).exec("PRAGMA wal_checkpoint(TRUNCATE)");
  std::filesystem::permissions(path, std::filesystem::perms::owner_read |
                                         std::filesystem::perms::group_read |
                                         std::filesystem::perms::others_read);
  const auto bytes = read_bytes(path);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    // As a user who may read but not write the file and its directory.
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) {
      ::_exit(3);
    }
    const std::string error = open_error(path);
    (void)!::write(pipe_fds[1], error.data(), error.size());
    ::_exit(error.empty() ? 1 : 0);
  }
  ::close(pipe_fds[1]);
  std::string error;
  char chunk[512];
  for (ssize_t got; (got = ::read(pipe_fds[0], chunk, sizeof chunk)) > 0;) {
    error.append(chunk, static_cast<std::size_t>(got));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root to run the open as another user";
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << ": " << error;
  EXPECT_NE(error.find(path.string()), std::string::npos) << error;
  EXPECT_EQ(read_bytes(path), bytes);
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
  EXPECT_EQ(r2.envs[0].checks[0].since, std::optional<std::string>("2026-11-24T09:00:00Z"));
  store->record_scan(r3);
  EXPECT_EQ(r3.envs[0].checks[0].since, std::optional<std::string>("2026-11-26T09:00:00Z"));

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

TEST(Store, HistoryFiltersEachAloneAndTogether) {
  testing::TempDir dir;
  auto store = open_store(dir.path() / "agent.db");
  ASSERT_NE(store, nullptr);
  for (int day = 24; day <= 26; ++day) {
    const std::string status = day == 25 ? "fail" : "pass";
    auto report = report_at("2026-11-" + std::to_string(day) + "T09:00:00Z",
                            {{"env-a", Json::array({check("devices", status, "too_few_devices"),
                                                    check("torch", "pass")})},
                             {"env-b", Json::array({check("devices", "pass")})}});
    // The target's check read as the envs' are.
    const auto target = report::env_report_from_json(
        {{"checks", Json::array({check("devices", status, "too_few_devices")})}});
    report.targets = {{"image", "", target.checks}};
    store->record_scan(report);
  }
  const auto subjects = [](const Json& rows) {
    std::vector<std::string> out;
    for (const auto& row : rows) {
      out.push_back(row["scope"].get<std::string>() + ":" + row["name"].get<std::string>() + ":" +
                    row["check"].get<std::string>() + "@" +
                    row["at"].get<std::string>().substr(8, 2));
    }
    return out;
  };
  using Names = std::vector<std::string>;
  // One env: its verdict and both checks, oldest first.
  EXPECT_EQ(subjects(store->history({"env-a", "", "", "", 100})),
            (Names{"env:env-a:@verdict@24", "env:env-a:devices@24", "env:env-a:torch@24",
                   "env:env-a:@verdict@25", "env:env-a:devices@25", "env:env-a:@verdict@26",
                   "env:env-a:devices@26"}));
  EXPECT_EQ(
      subjects(store->history({"", "image", "", "", 100})),
      (Names{"target:image:devices@24", "target:image:devices@25", "target:image:devices@26"}));
  // One check across envs and targets.
  EXPECT_EQ(subjects(store->history({"", "", "devices", "2026-11-25T00:00:00Z", 100})),
            (Names{"target:image:devices@25", "env:env-a:devices@25", "target:image:devices@26",
                   "env:env-a:devices@26"}));
  EXPECT_EQ(subjects(store->history({"env-a", "", "devices", "2026-11-26T00:00:00Z", 100})),
            (Names{"env:env-a:devices@26"}));
  EXPECT_EQ(subjects(store->history({"env-b", "", "devices", "", 100})),
            (Names{"env:env-b:devices@24"}));
  // The limit keeps the oldest.
  EXPECT_EQ(subjects(store->history({"", "", "", "", 2})),
            (Names{"host::@verdict@24", "target:image:devices@24"}));
  EXPECT_TRUE(store->history({"env-c", "", "", "", 100}).empty());
}

TEST(Store, ChecksThatKeepChangingAreFlagged) {
  testing::TempDir dir;
  auto store = open_store(dir.path() / "agent.db", {3, std::chrono::hours(24)});
  ASSERT_NE(store, nullptr);
  for (int hour = 0; hour < 6; ++hour) {
    auto report = report_at(
        "2026-11-24T0" + std::to_string(hour) + ":00:00Z",
        {{"env-a",
          Json::array({check("devices", hour % 2 == 0 ? "fail" : "pass", "too_few_devices")})}});
    store->record_scan(report);
    // Changes so far: hour 1..hour; more than 3 from the fourth change on.
    EXPECT_EQ(report.envs[0].checks[0].flapping, hour > 3) << hour;
  }
  // A day later, with the status steady, the changes have left the window.
  auto later =
      report_at("2026-11-26T05:00:00Z", {{"env-a", Json::array({check("devices", "pass")})}});
  store->record_scan(later);
  EXPECT_EQ(later.envs[0].checks[0].flapping, false);
  EXPECT_EQ(later.envs[0].checks[0].since, std::optional<std::string>("2026-11-24T05:00:00Z"));
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
    EXPECT_FALSE(store->latest_report().has_value());
    auto report = report_at("2026-11-24T09:00:00Z", {{"env-a", Json::array()}});
    store->record_scan(report);
  }
  auto store = open_store(path);
  ASSERT_NE(store, nullptr);
  const auto latest = store->latest_report();
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->scan_id, std::optional<std::int64_t>(1));
  ASSERT_EQ(latest->envs.size(), 1U);
  EXPECT_EQ(latest->envs[0].name, "env-a");
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
  EXPECT_EQ(store->latest_report().value_or(report::Report{}).host, "old");
  auto report =
      report_at("2026-11-30T09:00:00Z",
                {{"torch-fl-cpu", Json::array({check("first-device-op", "fail", "hang")})}});
  store->record_scan(report);
  // The state carried over: hanging since the v1 scan, and no new transition.
  EXPECT_EQ(report.envs[0].checks[0].since, std::optional<std::string>("2026-11-24T09:00:12Z"));
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
