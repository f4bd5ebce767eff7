// `envcontractd scan` on the demo host, run as the real binary: the report
// (valid against docs/report.schema.json), the table, and the exit codes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/json_text.hpp"
#include "common/sha256.hpp"
#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/report_schema.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/system_venv.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

using Json = nlohmann::ordered_json;
using testing::demo_host;
using testing::run_command;

const std::string k_binary = ENVCONTRACTD_PATH;

std::filesystem::path quick_demo_contract(const testing::TempDir& dir) {
  return testing::quick_demo_contract(dir.path());
}

std::vector<std::string> demo_scan_args(const std::filesystem::path& contract) {
  return {k_binary,           "scan",
          "--contract",       contract.string(),
          "--root",           demo_host().string(),
          "--image-tag-file", (demo_host() / "etc/flagos-image").string()};
}

std::set<std::string> failing_causes(const Json& env) {
  std::set<std::string> causes;
  for (const auto& check : env["checks"]) {
    if (check["status"] == "fail") {
      causes.insert(check["diagnosis"]["cause"].get<std::string>());
    }
  }
  return causes;
}

// The "failing causes" column of tests/fixtures/README.md's env table, by env:
// the first `name` of the env column, the `causes` of the fifth column.
std::map<std::string, std::set<std::string>> readme_causes() {
  std::istringstream readme(testing::read_text(ENVCONTRACT_SOURCE_DIR "/tests/fixtures/README.md"));
  const auto quoted = [](const std::string& cell) {
    std::vector<std::string> words;
    for (auto open = cell.find('`'); open != std::string::npos; open = cell.find('`', open)) {
      const auto close = cell.find('`', open + 1);
      if (close == std::string::npos) {
        break;
      }
      words.push_back(cell.substr(open + 1, close - open - 1));
      open = close + 1;
    }
    return words;
  };
  std::map<std::string, std::set<std::string>> table;
  bool in_table = false;
  for (std::string line; std::getline(readme, line);) {
    if (line.find("| failing causes |") != std::string::npos) {
      in_table = true;
      continue;
    }
    if (!in_table || line.rfind("|---", 0) == 0) {
      continue;
    }
    if (line.rfind("| ", 0) != 0) {
      break;
    }
    std::vector<std::string> cells;
    std::istringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) {
      cells.push_back(cell);
    }
    if (cells.size() < 5 || quoted(cells[1]).empty()) {
      ADD_FAILURE() << "a row of the README's env table cannot be read: " << line;
      continue;
    }
    const auto causes = quoted(cells[4]);
    table[quoted(cells[1]).front()] = std::set<std::string>(causes.begin(), causes.end());
  }
  return table;
}

TEST(ScanCli, DemoHostReportNamesEachEnvsOwnReasons) {
  testing::TempDir dir;
  const auto contract = quick_demo_contract(dir);
  auto args = demo_scan_args(contract);
  args.insert(args.end(), {"--format", "json"});
  const auto result = run_command(args);
  ASSERT_EQ(result.exit_code, 1) << result.err;
  const auto report = Json::parse(result.out);

  EXPECT_EQ(report["schema_version"], 1);
  EXPECT_EQ(report["verdict"], "drift");
  EXPECT_EQ(report["compliant_envs"], Json::array());
  EXPECT_EQ(report["contract"]["name"], "kunlunxin-demo");
  EXPECT_EQ(report["contract"]["sha256"], common::sha256_hex(testing::read_text(contract)));
  EXPECT_EQ(report["reasons"],
            Json({"the host runs harbor.example/flagos-runtime/"
                  "flagos-runtime-kunlunxin-xre5.37.1 tag 2.1.2, target 'ci' wants tag 2.2.0",
                  "no env satisfies the contract (8 envs: 8 drift, 0 error)"}));
  ASSERT_EQ(report["targets"].size(), 1U);
  EXPECT_EQ(report["targets"][0]["checks"][0]["diagnosis"]["cause"], "image_mismatch");

  std::map<std::string, std::set<std::string>> causes;
  for (const auto& env : report["envs"]) {
    EXPECT_EQ(env["verdict"], "drift") << env["name"];
    EXPECT_EQ(env["target"], "ci");
    causes[env["name"].get<std::string>()] = failing_causes(env);
  }
  // tests/fixtures/README.md's table is the truth people read: every env of
  // the scan is in it, with exactly the causes the scan reports.
  const auto documented = readme_causes();
  EXPECT_EQ(documented.size(), 8U) << "the README's table has a row per env";
  for (const auto& [env, expected] : documented) {
    ASSERT_TRUE(causes.count(env)) << env << " is in the README but not in the scan";
    EXPECT_EQ(causes[env], expected) << env << ": the README's 'failing causes' differ";
  }
  for (const auto& [env, found] : causes) {
    EXPECT_TRUE(documented.count(env)) << env << " is scanned but not in the README's table";
  }

  // Consequences, not noise: device and smoke checks behind a failing import
  // are skipped, naming the check to fix first.
  for (const auto& env : report["envs"]) {
    if (env["name"] != "torch-fl-hf-test") {
      continue;
    }
    for (const auto& check : env["checks"]) {
      if (check["id"] == "flagos-devices") {
        EXPECT_EQ(check["status"], "skip");
        EXPECT_EQ(check["diagnosis"]["cause"], "blocked");
        EXPECT_EQ(check["diagnosis"]["evidence"]["blocked_by"], "import-order");
      }
    }
    EXPECT_EQ(env["summary"],
              "torch-cpu-build: CUDA build of torch (2.10.0+cu129, torch.version.cuda == '12.9') "
              "where the contract requires a CPU build (and 3 more)");
  }

  const auto violations = testing::report_schema_violations(report);
  if (!violations) {
    GTEST_SKIP() << "python3-jsonschema is not installed: the report was not validated";
  }
  EXPECT_EQ(*violations, "");
}

TEST(ScanCli, TableSumsUpThenListsFailingChecksWithoutColourOffATerminal) {
  testing::TempDir dir;
  auto args = demo_scan_args(quick_demo_contract(dir));
  args.push_back("-v");
  const auto result = run_command(args);
  ASSERT_EQ(result.exit_code, 1) << result.err;
  const auto& out = result.out;
  EXPECT_NE(out.find(": drift; compliant envs: none; contract kunlunxin-demo (scanned "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  no env satisfies the contract (8 envs: 8 drift, 0 error)\n"),
            std::string::npos);
  EXPECT_NE(out.find("ENV"), std::string::npos);
  EXPECT_NE(out.find("torch-fl-cpu"), std::string::npos);
  EXPECT_NE(out.find("1 of 66 threads running"), std::string::npos);
  EXPECT_NE(out.find("remedy:"), std::string::npos);
  EXPECT_NE(out.find("evidence:"), std::string::npos);
  EXPECT_NE(out.find("warning: "), std::string::npos);  // the stale environments.txt entry
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
  EXPECT_EQ(result.err, "");  // no progress off a terminal
}

TEST(ScanCli, CompliantHostExitsZero) {
  testing::TempDir dir;
  const auto contract = dir.write(
      "compliant.yaml",
      "schema_version: 1\n"
      "targets:\n"
      "  - name: ci\n"
      "    image: harbor.example/flagos-runtime/flagos-runtime-kunlunxin-xre5.37.1:2.1.2\n"
      "checks:\n"
      "  - id: python\n    kind: python\n    version: '>=3.6'\n");
  auto args = demo_scan_args(contract);
  args.insert(args.end(), {"--format", "json"});
  const auto result = run_command(args);
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  const auto report = Json::parse(result.out);
  EXPECT_EQ(report["verdict"], "compliant");
  EXPECT_EQ(report["reasons"], Json::array());
  EXPECT_EQ(report["compliant_envs"].size(), report["envs"].size());
  const auto violations = testing::report_schema_violations(report);
  if (violations) {
    EXPECT_EQ(*violations, "");
  }
}

TEST(ScanCli, UnknownImageIsAnErrorExitTwo) {
  testing::TempDir dir;
  const auto contract =
      dir.write("image-only.yaml", "schema_version: 1\nimage: registry.example/runtime:2.2.0\n");
  const auto result = run_command({k_binary, "scan", "--contract", contract.string(), "--prefix",
                                   (demo_host() / "miniconda3").string(), "--format", "json"});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  const auto report = Json::parse(result.out);
  EXPECT_EQ(report["verdict"], "error");
  EXPECT_EQ(report["targets"][0]["checks"][0]["diagnosis"]["cause"], "image_unknown");
}

// A mistyped --root or --prefix is a configuration error (exit 2, naming the
// path), never "drift" from a host that seems to have no env; nor is a scan
// that finds no env at all.
TEST(ScanCli, RootsThatAreNotThereAndScansThatFindNoEnvExitTwo) {
  testing::TempDir dir;
  const auto contract = dir.write("c.yaml",
                                  "schema_version: 1\nchecks:\n"
                                  "  - {kind: python, version: \"3.10\"}\n");
  for (const char* flag : {"--root", "--prefix"}) {
    const auto missing = dir.path() / "no-such-dir";
    const auto result =
        run_command({k_binary, "scan", "--contract", contract.string(), flag, missing.string()});
    EXPECT_EQ(result.exit_code, 2) << flag << ": " << result.err;
    EXPECT_NE(result.err.find(std::string(flag) + " " + missing.string()), std::string::npos)
        << result.err;
    EXPECT_EQ(result.out, "");
  }
  const auto empty = dir.path() / "empty";
  std::filesystem::create_directories(empty);
  const auto nothing =
      run_command({k_binary, "scan", "--contract", contract.string(), "--root", empty.string()});
  EXPECT_EQ(nothing.exit_code, 2) << nothing.err;
  EXPECT_NE(nothing.err.find("no Python environment was found under " + empty.string()),
            std::string::npos)
      << nothing.err;
}

// A container's root filesystem scanned with --root is judged by its own
// files: the vendor library, tool and device node a contract names by
// absolute path are looked for inside it (where they are), not on the
// agent's host (where they are not). A plain directory of envs is not a
// system of its own: there the same contract reads the host.
TEST(ScanCli, ARootfsIsJudgedByItsOwnFilesToolsAndDevices) {
  if (std::filesystem::exists("/usr/local/xpu/lib/libbkcl.so") ||
      std::filesystem::exists("/usr/bin/xpu-smi") || std::filesystem::exists("/dev/xpu0")) {
    GTEST_SKIP() << "this host has the vendor's files the rootfs is told apart by";
  }
  testing::TempDir dir;
  testing::open_to_all(dir.path());
  const auto rootfs = dir.path() / "rootfs";
  dir.write("rootfs/etc/os-release", "ID=debian\n");
  dir.write("rootfs/usr/local/xpu/lib/libbkcl.so", "");
  dir.write("rootfs/dev/xpu0", "");
  const auto smi = dir.write("rootfs/usr/bin/xpu-smi", "#!/bin/sh\n");
  std::filesystem::permissions(smi,
                               std::filesystem::perms::owner_all |
                                   std::filesystem::perms::group_exec |
                                   std::filesystem::perms::others_exec,
                               std::filesystem::perm_options::replace);
  testing::make_system_venv(rootfs / "opt/venvs/app");
  for (auto path = rootfs / "opt/venvs/app"; path != dir.path(); path = path.parent_path()) {
    testing::open_to_all(path);
  }
  const auto contract =
      dir.write("c.yaml",
                "schema_version: 1\nchecks:\n"
                "  - {id: bkcl, kind: files, exist: [/usr/local/xpu/lib/libbkcl.so]}\n"
                "  - {id: smi, kind: tools, on_path: [xpu-smi]}\n"
                "  - {id: xpus, kind: device_nodes, glob: '/dev/xpu*'}\n");
  const auto scan = [&] {
    const auto result = run_command({k_binary, "scan", "--contract", contract.string(), "--root",
                                     rootfs.string(), "--format", "json"});
    auto report = Json::parse(result.out, nullptr, false);
    EXPECT_FALSE(report.is_discarded()) << result.out << result.err;
    return std::make_pair(result.exit_code, report);
  };
  const auto [code, report] = scan();
  ASSERT_EQ(code, 0) << common::json_text(report);
  ASSERT_EQ(report["envs"].size(), 1U);
  const auto& env = report["envs"][0];
  EXPECT_EQ(env["verdict"], "compliant") << common::json_text(env);
  const std::string text = common::json_text(env);
  for (const char* inside : {"/usr/local/xpu/lib/libbkcl.so", "/usr/bin/xpu-smi"}) {
    EXPECT_NE(text.find((rootfs.string() + inside)), std::string::npos)
        << inside << " is named as the agent finds it: " << text;
  }

  std::filesystem::remove(rootfs / "etc/os-release");
  const auto [plain_code, plain] = scan();
  EXPECT_EQ(plain_code, 1) << common::json_text(plain);
  std::set<std::string> failing;
  for (const auto& check : plain["envs"][0]["checks"]) {
    if (check["status"] == "fail") {
      failing.insert(check["id"].get<std::string>());
    }
  }
  EXPECT_EQ(failing, (std::set<std::string>{"bkcl", "smi", "xpus"})) << common::json_text(plain);
}

// A root or prefix given relative to the working directory finds what its
// absolute form finds (it used to find nothing at all).
TEST(ScanCli, RelativeRootsAndPrefixesFindTheSameEnvs) {
  const auto prefixes_found = [](const std::vector<std::string>& where) {
    std::vector<std::string> args = {k_binary, "facts"};
    args.insert(args.end(), where.begin(), where.end());
    const auto result = run_command(args);
    const auto facts = Json::parse(result.out, nullptr, false);
    std::set<std::string> prefixes;
    if (facts.is_discarded()) {
      ADD_FAILURE() << result.err;
      return prefixes;
    }
    for (const auto& env : facts["envs"]) {
      prefixes.insert(env["prefix"].get<std::string>());
    }
    return prefixes;
  };
  const auto relative = std::filesystem::relative(demo_host(), std::filesystem::current_path());
  ASSERT_TRUE(relative.is_relative()) << relative;
  const auto absolute = prefixes_found({"--root", demo_host().string()});
  EXPECT_GE(absolute.size(), 8U);
  EXPECT_EQ(prefixes_found({"--root", relative.string()}), absolute);
  EXPECT_EQ(
      prefixes_found({"--prefix", (relative / "venvs/xpu210v").string()}),
      std::set<std::string>{(std::filesystem::canonical(demo_host()) / "venvs/xpu210v").string()});
}

// `--contract auto` works for scan as for serve: the contract is chosen by
// the devices and tools under --detect-root, and says so.
TEST(ScanCli, AutoPicksTheContractByTheHostsDevices) {
  testing::TempDir root;
  root.write("dev/xpu0", "");
  root.write("dev/xpuctrl", "");
  const auto result = run_command({k_binary, "scan", "--contract", "auto", "--contracts-dir",
                                   ENVCONTRACT_SOURCE_DIR "/contracts/platforms", "--detect-root",
                                   root.path().string(), "--prefix",
                                   (demo_host() / "venvs/xpu210v").string(), "--format", "json"});
  EXPECT_NE(result.err.find("contract: auto chose"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("kunlunxin.yaml"), std::string::npos) << result.err;
  const auto report = Json::parse(result.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << result.out << result.err;
  EXPECT_EQ(report["contract"]["name"], "kunlunxin") << report["contract"];

  testing::TempDir bare;
  const auto nothing = run_command({k_binary, "scan", "--contract", "auto", "--contracts-dir",
                                    ENVCONTRACT_SOURCE_DIR "/contracts/platforms", "--detect-root",
                                    bare.path().string()});
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_NE(nothing.err.find("found no accelerator"), std::string::npos) << nothing.err;
}

TEST(ScanCli, InvalidContractExitsTwoWithItsErrors) {
  testing::TempDir dir;
  const auto contract = dir.write("bad.yaml", "schema_version: 1\nchecks:\n  - kind: tirton\n");
  const auto result = run_command(
      {k_binary, "scan", "--contract", contract.string(), "--root", demo_host().string()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.out, "");
  EXPECT_NE(result.err.find(contract.string() + ":3:11: error: unknown check kind 'tirton'"),
            std::string::npos)
      << result.err;
}

}  // namespace
}  // namespace envcontract

namespace envcontract {
namespace {

TEST(ScanCli, OnATerminalProgressGoesToStderr) {
  if (!std::filesystem::exists("/usr/bin/script")) {
    GTEST_SKIP() << "script (bsdutils) is missing: no terminal to test progress on";
  }
  testing::TempDir dir;
  const std::string command = std::string(ENVCONTRACTD_PATH) + " scan --contract " +
                              testing::quick_demo_contract(dir.path()).string() + " --prefix " +
                              (testing::demo_host() / "venvs/xpu210v").string();
  // script gives the command a terminal on stdout and stderr alike.
  const auto result = testing::run_command({"/usr/bin/script", "-qec", command, "/dev/null"});
  EXPECT_NE(result.out.find("scanning 1 env"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("[1/1] xpu210v: drift ("), std::string::npos) << result.out;
}

}  // namespace
}  // namespace envcontract

namespace envcontract {
namespace {

// Off a terminal, --progress always still says what the scan waits for (a CI
// log); by default it keeps stderr quiet.
TEST(ScanCli, ProgressOffATerminalOnlyWhenAsked) {
  testing::TempDir dir;
  const auto contract = testing::quick_demo_contract(dir.path()).string();
  const auto prefix = (testing::demo_host() / "venvs/xpu210v").string();
  const auto asked = testing::run_command({ENVCONTRACTD_PATH, "scan", "--contract", contract,
                                           "--prefix", prefix, "--progress", "always"});
  EXPECT_EQ(asked.exit_code, 1) << asked.err;
  EXPECT_NE(asked.err.find("[1/1] xpu210v: drift ("), std::string::npos) << asked.err;
  const auto quiet =
      testing::run_command({ENVCONTRACTD_PATH, "scan", "--contract", contract, "--prefix", prefix});
  EXPECT_EQ(quiet.err.find("[1/1]"), std::string::npos) << quiet.err;
}

// One grammar with fleetctl: -o (or --format) before or after the verb, and
// JUnit for CI systems straight from a one-shot scan.
TEST(ScanCli, OutputOptionBeforeOrAfterTheVerbAndJunit) {
  testing::TempDir dir;
  const auto contract = testing::quick_demo_contract(dir.path()).string();
  const auto prefix = (testing::demo_host() / "venvs/xpu210v").string();
  const auto before = testing::run_command(
      {ENVCONTRACTD_PATH, "-o", "json", "scan", "--contract", contract, "--prefix", prefix});
  EXPECT_EQ(before.exit_code, 1) << before.err;
  EXPECT_EQ(Json::parse(before.out, nullptr, false)["verdict"], "drift") << before.out;
  const auto alias = testing::run_command(
      {ENVCONTRACTD_PATH, "scan", "--contract", contract, "--prefix", prefix, "--format", "json"});
  EXPECT_EQ(Json::parse(alias.out, nullptr, false)["verdict"], "drift") << alias.out;

  const auto junit = testing::run_command(
      {ENVCONTRACTD_PATH, "scan", "--contract", contract, "--prefix", prefix, "-o", "junit"});
  EXPECT_EQ(junit.exit_code, 1) << junit.err;
  EXPECT_NE(junit.out.find("<testsuites name=\"envcontract\""), std::string::npos) << junit.out;
  EXPECT_NE(junit.out.find("/xpu210v\""), std::string::npos) << junit.out;
  EXPECT_NE(junit.out.find("<failure message="), std::string::npos) << junit.out;
  if (std::filesystem::exists("/usr/bin/xmllint")) {
    const auto file = dir.write("junit.xml", junit.out);
    const auto valid = testing::run_command(
        {"/usr/bin/xmllint", "--noout", "--schema",
         ENVCONTRACT_SOURCE_DIR "/tests/fixtures/junit/junit.xsd", file.string()});
    EXPECT_EQ(valid.exit_code, 0) << valid.err;
  }

  const auto conflicting =
      testing::run_command({ENVCONTRACTD_PATH, "-o", "json", "scan", "--contract", contract,
                            "--prefix", prefix, "-o", "table"});
  EXPECT_EQ(conflicting.exit_code, 2);
  EXPECT_NE(conflicting.err.find("give one"), std::string::npos) << conflicting.err;
  const auto not_scan =
      testing::run_command({ENVCONTRACTD_PATH, "-o", "json", "validate", contract});
  EXPECT_EQ(not_scan.exit_code, 2);
  EXPECT_NE(not_scan.err.find(
                "envcontractd validate: -o (the output format) is for scan, plan, snapshot; "
                "validate prints one format"),
            std::string::npos)
      << not_scan.err;
}

}  // namespace
}  // namespace envcontract

namespace envcontract {
namespace {

// A message names one file, whatever the reader's working directory: paths
// given relative come back absolute (a service's journal, a CI log).
TEST(ScanCli, PathsInMessagesAreAbsolute) {
  testing::TempDir dir;
  const auto contract = testing::quick_demo_contract(dir.path());
  const auto token = dir.write("token", "secret\n");
  std::filesystem::permissions(token, std::filesystem::perms(0644));
  dir.write("hosts.txt", "good-host\nnot a host\n");
  const std::string cd = "cd " + dir.path().string() + " && ";
  const auto serve =
      testing::run_command({"/bin/bash", "-c",
                            cd + ENVCONTRACTD_PATH +
                                " serve --contract kunlunxin-demo.yaml --token-file token "
                                "--listen 127.0.0.1:0 --database agent.db --prefix " +
                                (testing::demo_host() / "venvs/xpu210v").string()});
  EXPECT_EQ(serve.exit_code, 2);
  EXPECT_NE(serve.err.find("the token file " + token.string() + " is readable by others"),
            std::string::npos)
      << serve.err;
  const auto missing = testing::run_command(
      {"/bin/bash", "-c",
       cd + ENVCONTRACTD_PATH +
           " serve --contract gone.yaml --listen 127.0.0.1:0 --database a.db"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find((dir.path() / "gone.yaml").string() + " does not exist"),
            std::string::npos)
      << missing.err;
  const auto inventory = testing::run_command(
      {"/bin/bash", "-c", cd + FLEETCTL_PATH + " check --inventory hosts.txt"});
  EXPECT_EQ(inventory.exit_code, 2);
  EXPECT_NE(inventory.err.find((dir.path() / "hosts.txt").string() + ":2: 'not a host'"),
            std::string::npos)
      << inventory.err;
  EXPECT_TRUE(std::filesystem::exists(contract));
}

}  // namespace
}  // namespace envcontract

namespace envcontract {
namespace {

// A CI config as the contract: its entries without a phase run only when
// named (--run-test), as the runner runs them; a suite needing the checkout
// is skipped, saying so.
TEST(ScanCli, RunTestNamesACiConfigsEntriesToRun) {
  const std::string config =
      ENVCONTRACT_SOURCE_DIR "/tests/data/contracts/ci-lines/newest-main-cuda.yml";
  const auto prefix = (testing::demo_host() / "venvs/xpu210v").string();
  const auto plain = testing::run_command(
      {ENVCONTRACTD_PATH, "scan", "--contract", config, "--prefix", prefix, "-o", "json"});
  const auto plain_env = Json::parse(plain.out, nullptr, false)["envs"][0];
  for (const auto& check : plain_env["checks"]) {
    EXPECT_NE(check["kind"], "integration_test") << "nothing runs unless named: " << check;
  }
  const auto named = testing::run_command(
      {ENVCONTRACTD_PATH, "scan", "--contract", config, "--prefix", prefix, "--run-test",
       "Check model availability", "--run-test", "run-training-tests", "-o", "json"});
  const auto env = Json::parse(named.out, nullptr, false)["envs"][0];
  const Json* model = nullptr;
  const Json* training = nullptr;
  for (const auto& check : env["checks"]) {
    if (check["id"] == "check-model-availability") {
      model = &check;
    } else if (check["id"] == "run-training-tests") {
      training = &check;
    }
  }
  ASSERT_NE(model, nullptr) << named.out << named.err;
  // $MODEL_PATH is ${MODEL_ROOT}/Qwen3-0.6B = /models/Qwen3-0.6B: not on this host.
  EXPECT_EQ((*model)["diagnosis"]["cause"], "integration_test_failed") << *model;
  ASSERT_NE(training, nullptr);
  EXPECT_EQ((*training)["status"], "skip");
  EXPECT_EQ((*training)["diagnosis"]["cause"], "needs_checkout");

  const auto typo = testing::run_command({ENVCONTRACTD_PATH, "scan", "--contract", config,
                                          "--prefix", prefix, "--run-test", "run-trainig-tests"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("did you mean 'run-training-tests'?"), std::string::npos) << typo.err;
}

}  // namespace
}  // namespace envcontract

namespace envcontract {
namespace {

// A waiver names a CI entry by its id; inserting an entry before it upstream
// leaves the id, so the waiver still applies (ids were positional once).
TEST(ScanCli, AWaiverKeepsItsEntryWhenAnotherIsInsertedBeforeIt) {
  testing::TempDir dir;
  const std::string head =
      "setup_script: s.sh\nimage: a/b:1\nwaivers:\n  - check: check-device-availability\n"
      "    reason: OPS-1234\nintegration_tests:\n";
  const std::string device =
      "  - name: Check device availability\n    phase: preflight\n    command: exit 3\n";
  const std::string inserted =
      "  - name: Check the driver\n    phase: preflight\n    command: 'true'\n";
  const auto prefix = (testing::demo_host() / "venvs/xpu210v").string();
  for (const auto& [file, text] :
       {std::pair{"before.yml", head + device}, std::pair{"after.yml", head + inserted + device}}) {
    const auto contract = dir.write(file, text);
    const auto result = testing::run_command({ENVCONTRACTD_PATH, "scan", "--contract",
                                              contract.string(), "--prefix", prefix, "-o", "json"});
    const auto env = Json::parse(result.out, nullptr, false)["envs"][0];
    bool found = false;
    for (const auto& check : env["checks"]) {
      if (check["id"] == "check-device-availability") {
        found = true;
        EXPECT_EQ(check["status"], "waived") << file << ": " << check;
      }
    }
    EXPECT_TRUE(found) << file << ": " << result.out << result.err;
  }
}

}  // namespace
}  // namespace envcontract
