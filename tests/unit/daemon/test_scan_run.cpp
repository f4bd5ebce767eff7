// One scan's envs after their facts are read (daemon/scanner.cpp's ScanRun):
// an env whose files stop answering between its reading and its
// fingerprint is that env's error, judged with the others, and the scan
// ends within its deadlines. A real FUSE mount whose server never answers
// (tests/support/hung_fuse.py), mounted as the scan starts its envs' turns.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>

#include "common/json_text.hpp"
#include "daemon/contract_source.hpp"
#include "daemon/scanner.hpp"
#include "report/report_json.hpp"
#include "tests/support/hung_mount.hpp"
#include "tests/support/system_venv.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

namespace fs = std::filesystem;
using Json = report::Json;

const report::EnvReport* env_named(const report::Report& report, const std::string& name) {
  for (const auto& env : report.envs) {
    if (env.name == name) {
      return &env;
    }
  }
  ADD_FAILURE() << "no env " << name << " in " << common::json_text(report::to_json(report), 1);
  return nullptr;
}

TEST(ScanRun, AnEnvWhoseFilesBlockAfterItsReadingIsItsOwnErrorAndTheOthersAreJudged) {
  if (const auto why = testing::HungMount::unavailable(); !why.empty()) {
    GTEST_SKIP() << "skipped: " << why;
  }
  testing::TempDir dir;
  testing::open_to_all(dir.path());
  const fs::path fine = testing::make_system_venv(dir.path() / "fine");
  const fs::path victim = testing::make_system_venv(dir.path() / "victim");
  // A package of the victim's: its location is one of the files its
  // fingerprint reads.
  const fs::path package = testing::system_venv_site(victim) / "stalls";
  fs::create_directories(package);
  std::ofstream(package / "__init__.py") << "";
  testing::open_to_all(dir.path());
  const auto contract_path =
      dir.write("contract.yaml",
                "schema_version: 1\nname: scan-run\nenvs: {require: any}\n"
                "checks:\n  - {id: imports, kind: imports, modules: [json]}\n");
  auto contract = daemon::load_contract(contract_path);
  ASSERT_TRUE(contract.ok()) << contract.error();

  daemon::Scanner scanner;
  daemon::ScanSettings settings;
  settings.facts.discovery.prefixes = {fine, victim};
  settings.facts.reading_deadline = std::chrono::seconds(2);
  settings.watch_changes = false;
  // Read, then its package's directory stops answering: what its
  // fingerprint stats blocks, as a dead server under it would.
  std::unique_ptr<testing::HungMount> dead;
  daemon::ScanObserver observer;
  observer.started = [&](std::size_t) { dead = std::make_unique<testing::HungMount>(package, 0); };
  const auto started = std::chrono::steady_clock::now();
  const auto report = scanner.scan(*contract.value(), settings, observer);
  const auto took = std::chrono::steady_clock::now() - started;
  dead.reset();  // blocked readers get ENOTCONN and end

  EXPECT_LT(took, std::chrono::seconds(30));
  const auto* blocked = env_named(report, "victim");
  const auto* judged = env_named(report, "fine");
  ASSERT_NE(blocked, nullptr);
  ASSERT_NE(judged, nullptr);
  EXPECT_EQ(judged->verdict, contracts::EnvVerdict::compliant)
      << common::json_text(report::to_json(*judged), 1);
  EXPECT_EQ(blocked->verdict, contracts::EnvVerdict::error)
      << common::json_text(report::to_json(*blocked), 1);
  const std::string text = common::json_text(report::to_json(*blocked));
  EXPECT_NE(text.find("reading the files of " + victim.string()), std::string::npos) << text;
  EXPECT_EQ(report.verdict, report::Verdict::compliant) << "the contract asks for any one env";
  EXPECT_EQ(scanner.last_probed(), 1U) << "the blocked env is not probed";
}

}  // namespace
}  // namespace envcontract
