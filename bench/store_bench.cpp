// How big the agent's database grows and how long recording a scan takes:
//  - 10,000 scans of an unchanged host (8 envs, 10 checks each): the file
//    must stay under 1 MB (issue #12);
//  - 11 scans of one env whose failing check's `actual` (2 MB) changes every
//    time: stored cut with a marker, so a few hundred KB, not 25 MB;
// against a baseline measured in the same run: SQLite alone inserting one
// row of the same size per scan into a bare table with the same settings.
//
// Usage: store_bench [SCANS=10000]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>

#include "bench/host_report.hpp"
#include "bench/report_only.hpp"
#include "daemon/sqlite.hpp"
#include "daemon/store.hpp"
#include "report/report_json.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using envcontract::report::Json;

namespace {

constexpr double k_target_bytes = 1024.0 * 1024.0;

Json check(int env, int index, const Json& actual) {
  const bool failing = (env + index) % 4 == 0;
  Json result = {{"id", "check-" + std::to_string(index)},
                 {"kind", "torch"},
                 {"severity", "required"},
                 {"status", failing ? "fail" : "pass"},
                 {"expected", {{"base", "2.10.0"}, {"cuda", "none"}}},
                 {"actual", actual}};
  result["diagnosis"] = failing
                            ? Json({{"cause", "cuda_build"},
                                    {"summary",
                                     "torch 2.10.0+cu129 is a CUDA build; the contract wants a CPU "
                                     "build (torch.version.cuda is null)"},
                                    {"evidence", {{"version", "2.10.0+cu129"}}},
                                    {"remedy", "pip install torch==2.10.0+cpu"}})
                            : Json(nullptr);
  result["notes"] = Json::array();
  return result;
}

Json host_report(const std::string& at, const Json& changing_actual = nullptr) {
  Json envs = Json::array();
  for (int env = 0; env < 8; ++env) {
    Json checks = Json::array();
    for (int index = 0; index < 10; ++index) {
      checks.push_back(check(env, index,
                             env == 0 && index == 0 && !changing_actual.is_null()
                                 ? changing_actual
                                 : Json({{"version", "2.10.0+cu129"}, {"cuda", "12.9"}})));
    }
    envs.push_back({{"name", "env-" + std::to_string(env)},
                    {"prefix", "/opt/conda/envs/env-" + std::to_string(env)},
                    {"verdict", "drift"},
                    {"summary", ""},
                    {"checks", checks}});
  }
  return bench_host_report(at, std::move(envs), "drift", Json::array(),
                           {"no env satisfies the contract (8 envs: 8 drift, 0 error)"});
}

std::string at(int scan) {
  // Five minutes apart from 2026-11-01, as a default agent scans.
  const auto seconds = 1'793'491'200LL + 300LL * scan;
  const std::time_t t = static_cast<std::time_t>(seconds);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return text;
}

std::uintmax_t size_of(const fs::path& path) {
  std::error_code error;
  const auto size = fs::file_size(path, error);
  return error ? 0 : size;
}

}  // namespace

int main(int argc, char** argv) {
  const int scans = argc > 1 ? std::atoi(argv[1]) : 10000;
  const fs::path work =
      fs::temp_directory_path() / ("envcontract-store-bench-" + std::to_string(::getpid()));
  fs::create_directories(work);

  // Baseline: SQLite alone, one row per scan of the same size as a scan row.
  double baseline_ms = 0;
  {
    envcontract::daemon::sqlite::Database db(work / "baseline.db");
    db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL");
    db.exec(
        "CREATE TABLE rows (id INTEGER PRIMARY KEY, at INTEGER, duration INTEGER, "
        "contract INTEGER, verdict TEXT, envs INTEGER, compliant INTEGER)");
    const auto start = Clock::now();
    for (int i = 0; i < scans; ++i) {
      db.exec("INSERT INTO rows (at, duration, contract, verdict, envs, compliant) VALUES (" +
              std::to_string(1'793'491'200LL + 300LL * i) + ", 1234, 1, 'drift', 8, 0)");
    }
    baseline_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count() / scans;
  }

  auto opened = envcontract::daemon::Store::open(work / "agent.db");
  auto& store = opened.value();
  const auto start = Clock::now();
  for (int i = 0; i < scans; ++i) {
    auto report = envcontract::report::report_from_json(host_report(at(i)));
    store->record_scan(report);
  }
  const double per_scan_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count() / scans;
  const auto wal_high = size_of(work / "agent.db-wal");
  envcontract::daemon::sqlite::Database(work / "agent.db").exec("PRAGMA wal_checkpoint(TRUNCATE)");
  const auto unchanged_bytes = size_of(work / "agent.db");

  auto changing_opened = envcontract::daemon::Store::open(work / "changing.db");
  auto& changing = changing_opened.value();
  for (int i = 0; i < 11; ++i) {
    auto report = envcontract::report::report_from_json(
        host_report(at(i), Json(std::string(2 * 1024 * 1024, 'a' + i))));
    changing->record_scan(report);
  }
  envcontract::daemon::sqlite::Database(work / "changing.db")
      .exec("PRAGMA wal_checkpoint(TRUNCATE)");
  const auto changing_bytes = size_of(work / "changing.db");
  std::error_code ignored;
  fs::remove_all(work, ignored);

  std::printf("Store: %d scans of an unchanged host (8 envs x 10 checks)\n", scans);
  std::printf("  baseline: bare SQLite insert of a scan row  %8.3f ms per scan\n", baseline_ms);
  std::printf("  record_scan                                %8.3f ms per scan (%.1fx)\n",
              per_scan_ms, per_scan_ms / baseline_ms);
  std::printf("  database after %d scans              %10.0f KiB (target %.0f KiB)\n", scans,
              static_cast<double>(unchanged_bytes) / 1024.0, k_target_bytes / 1024.0);
  std::printf("  WAL after the last scan                    %10.0f KiB (cut back to 1 MiB)\n",
              static_cast<double>(wal_high) / 1024.0);
  std::printf("  11 scans, one 2 MB actual changing each    %10.0f KiB\n",
              static_cast<double>(changing_bytes) / 1024.0);
  const bool ok =
      static_cast<double>(unchanged_bytes) < k_target_bytes && changing_bytes < 4U * 1024 * 1024;
  bench_row("database after " + std::to_string(scans) + " scans of an unchanged host",
            bench_figure(static_cast<double>(unchanged_bytes) / 1024.0, 0, " KiB") + ", " +
                bench_figure(per_scan_ms, 2, " ms per scan"),
            "bare SQLite insert: " + bench_figure(baseline_ms, 3, " ms"),
            bench_figure(per_scan_ms / baseline_ms, 0, "x"), "under 1 MiB",
            static_cast<double>(unchanged_bytes) < k_target_bytes);
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
