// The kinds judged from what the system gives an env (libraries the loader
// finds, device nodes, tools, glibc) and the ones that run shell commands,
// judged through the real scanner on demo host envs.
#include <gtest/gtest.h>
#include <unistd.h>

#include "common/json_text.hpp"
#include "contracts/check_kind.hpp"
#include "daemon/scanner.hpp"
#include "report/report_json.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

using report::Json;
using testing::demo_host;

const Json& check(const Json& report, const std::string& env, const std::string& id) {
  for (const auto& entry : report["envs"]) {
    if (entry["name"] != env) {
      continue;
    }
    for (const auto& result : entry["checks"]) {
      if (result["id"] == id) {
        return result;
      }
    }
  }
  static const Json missing;
  ADD_FAILURE() << "no check " << id << " for " << env;
  return missing;
}

std::string cause(const Json& result) {
  return result["diagnosis"].is_object() ? result["diagnosis"]["cause"].get<std::string>() : "";
}

std::string summary(const Json& result) {
  return result["diagnosis"].is_object() ? result["diagnosis"]["summary"].get<std::string>() : "";
}

// The report of a real scan of the demo host's torch-fl-cpu env.
Json scan_torch_fl_cpu(const std::filesystem::path& contract_file) {
  auto loaded = daemon::load_contract(contract_file);
  EXPECT_TRUE(loaded.ok()) << loaded.error();
  if (!loaded.ok()) {
    return Json::object();
  }
  daemon::ScanSettings settings;
  settings.facts.discovery.prefixes = {demo_host() / "miniconda3/envs/torch-fl-cpu"};
  daemon::Scanner scanner;
  return report::to_json(scanner.scan(*loaded.value(), settings));
}

TEST(CheckKinds, EveryKindHasAJudge) {
  for (const auto& kind : contracts::check_kinds()) {
    EXPECT_NE(kind.judge, nullptr) << kind.name;
  }
}

TEST(SystemChecks, LibrariesDeviceNodesToolsGlibcCommandsAndIntegrationTests) {
  testing::TempDir dir;
  dir.write("ci/kunlunxin.yml",
            "integration_tests:\n"
            "  - name: preflight-env\n"
            "    phase: preflight\n"
            "    command: test \"$FLAGOS_DEVICE\" = xpu && echo ready\n"
            "    environment: {FLAGOS_DEVICE: xpu}\n"
            "  - name: preflight-broken\n"
            "    phase: preflight\n"
            "    command: echo 'no device' >&2; exit 4\n");
  const auto contract_file = dir.write(
      "contract.yaml",
      "schema_version: 1\nname: system\nchecks:\n"
      "  - id: xpu-runtime\n    kind: libraries\n    present: [libxpurt.so.1]\n"
      "  - id: newer-runtime\n    kind: libraries\n    present: [libxpurt.so.2]\n"
      "  - id: no-libc\n    kind: libraries\n    absent: [libc.so.6]\n"
      "  - id: null-device\n    kind: device_nodes\n    glob: /dev/nul*\n"
      "  - id: xpu-devices\n    kind: device_nodes\n    glob: /dev/xpu-envcontract-test*\n"
      "    count: '>= 8'\n"
      "  - id: shell\n    kind: tools\n    on_path: [bash]\n"
      "  - id: smi\n    kind: tools\n    on_path: [bash, xpu-smi]\n"
      "  - id: glibc-ok\n    kind: glibc\n    min_version: '2.17'\n"
      "  - id: glibc-future\n    kind: glibc\n    min_version: '9.99'\n"
      "  - id: echo\n    kind: command\n    run: echo hello $XPU_ROOT; exit 3\n"
      "    expect_exit: 3\n    expect_output: '^hello /'\n"
      "  - id: failing\n    kind: command\n    run: \"echo 'xpu-smi: no devices' >&2; exit 1\"\n"
      "  - id: stuck\n    kind: command\n    run: sleep 30\n    timeout: 1s\n"
      "  - id: preflight-env\n    kind: integration_test\n    from: ci/kunlunxin.yml\n"
      "    test: preflight-env\n"
      "  - id: preflight-broken\n    kind: integration_test\n    from: ci/kunlunxin.yml\n"
      "    test: preflight-broken\n");
  auto loaded = daemon::load_contract(contract_file);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  daemon::ScanSettings settings;
  settings.facts.discovery.prefixes = {demo_host() / "miniconda3/envs/torch-fl-cpu",
                                       demo_host() / "miniconda3"};
  daemon::Scanner scanner;
  const auto report = report::to_json(scanner.scan(*loaded.value(), settings));

  // torch-fl-cpu's activation puts the vendor's lib dir on LD_LIBRARY_PATH; base has none.
  const auto& runtime = check(report, "torch-fl-cpu", "xpu-runtime");
  EXPECT_EQ(runtime["status"], "pass") << summary(runtime);
  EXPECT_EQ(runtime["actual"]["libxpurt.so.1"],
            (demo_host() / "usr/local/xpu/lib/libxpurt.so.1").string());
  EXPECT_EQ(cause(check(report, "base", "xpu-runtime")), "missing_library");
  EXPECT_EQ(summary(check(report, "torch-fl-cpu", "newer-runtime")),
            "libxpurt.so.2 cannot be found by the env's loader; a different version exists: " +
                (demo_host() / "miniconda3/envs/torch-fl-cpu/lib/libxpurt.so.1").string());
  EXPECT_EQ(cause(check(report, "base", "no-libc")), "forbidden_library");

  EXPECT_EQ(check(report, "base", "null-device")["status"], "pass");
  EXPECT_EQ(summary(check(report, "base", "xpu-devices")),
            "/dev/xpu-envcontract-test* matches 0 device nodes, the contract wants >= 8");
  EXPECT_EQ(check(report, "base", "shell")["status"], "pass");
  EXPECT_EQ(summary(check(report, "base", "smi")),
            "xpu-smi is not on the PATH of the activated env");
  EXPECT_EQ(check(report, "base", "glibc-ok")["status"], "pass");
  EXPECT_EQ(cause(check(report, "base", "glibc-future")), "glibc_too_old");
  EXPECT_NE(summary(check(report, "base", "glibc-future")).find("the contract wants >= 9.99"),
            std::string::npos);

  // Commands run in the activated env: XPU_ROOT is set by torch-fl-cpu's activate.d.
  EXPECT_EQ(check(report, "torch-fl-cpu", "echo")["status"], "pass")
      << summary(check(report, "torch-fl-cpu", "echo"));
  EXPECT_EQ(cause(check(report, "base", "echo")), "command_failed");  // "hello " + nothing
  EXPECT_EQ(summary(check(report, "base", "failing")),
            "`echo 'xpu-smi: no devices' >&2; exit 1` exited 1 (wanted 0): xpu-smi: no devices");
  EXPECT_EQ(cause(check(report, "base", "stuck")), "hang");
  EXPECT_EQ(check(report, "base", "preflight-env")["status"], "pass")
      << summary(check(report, "base", "preflight-env"));
  EXPECT_EQ(summary(check(report, "base", "preflight-broken")),
            "integration test preflight-broken exited 4 (wanted 0): no device");
  EXPECT_EQ(cause(check(report, "base", "preflight-broken")), "integration_test_failed");
}

// Selected entries of a CI config run the way its runner runs them:
// integration_environment, then the entry's own environment, ${VAR} expanded
// in order; bash with `set -euo pipefail`; in a checkout when one is named,
// and not at all (skipped, saying why) when the command needs one and none
// is. Real scans of a demo env, as the user its code runs as.
TEST(SystemChecks, IntegrationTestsRunAsTheCiRunnerRunsThem) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "models/Qwen3-0.6B");
  std::filesystem::create_directories(dir.path() / "checkout/tests");
  dir.write("checkout/tests/smoke.sh", "echo smoke in \"$PWD\"\n");
  std::filesystem::permissions(dir.path(), std::filesystem::perms(0755));
  dir.write("ci/cuda.yml",
            "display_name: CUDA\nsetup_platform: cuda\n"
            "integration_environment:\n"
            "  MODEL_ROOT: " +
                (dir.path() / "models").string() +
                "\n"
                "  MODEL_PATH: ${MODEL_ROOT}/Qwen3-0.6B\n"
                "integration_tests:\n"
                "  - name: Check model availability\n"
                "    command: test -d \"$MODEL_PATH\"\n"
                "  - name: Fails then echoes\n"
                "    command: |\n      false\n      echo ok\n"
                "  - name: Unset variable\n"
                "    command: echo \"$NOT_SET_ANYWHERE\"\n"
                "  - name: Pipe that fails\n"
                "    command: false | cat\n"
                "  - name: Layered environment\n"
                "    environment: {WEIGHTS: \"${MODEL_PATH}/weights\", KEEP: \"${UNKNOWN_VAR}\"}\n"
                "    command: test \"$WEIGHTS\" = \"$MODEL_PATH/weights\" && "
                "test \"$KEEP\" = \'${UNKNOWN_VAR}\'\n"
                "  - name: Run operator tests\n"
                "    command: python -m pytest tests/integration/ops/ -v --tb=short\n"
                "  - name: Smoke script\n"
                "    command: bash tests/smoke.sh\n");
  const auto selected = [](const std::string& id, const std::string& test,
                           const std::string& extra = "") {
    return "  - id: " + id +
           "\n    kind: integration_test\n    from: ci/cuda.yml\n    test: " + test + "\n" + extra;
  };
  const auto contract_file = dir.write(
      "contract.yaml",
      "schema_version: 1\nname: ci-runner\nchecks:\n" +
          selected("model", "Check model availability") +
          selected("fails-then-echoes", "fails-then-echoes") + selected("unset", "Unset variable") +
          selected("pipe", "Pipe that fails") + selected("layered", "layered-environment") +
          selected("ops", "Run operator tests") +
          selected("smoke", "Smoke script", "    workdir: checkout\n"));
  const auto report = scan_torch_fl_cpu(contract_file);
  const std::string env = "torch-fl-cpu";

  EXPECT_EQ(check(report, env, "model")["status"], "pass") << summary(check(report, env, "model"));
  EXPECT_EQ(check(report, env, "layered")["status"], "pass")
      << summary(check(report, env, "layered"));
  for (const char* id : {"fails-then-echoes", "unset", "pipe"}) {
    EXPECT_EQ(cause(check(report, env, id)), "integration_test_failed") << id;
  }
  EXPECT_NE(summary(check(report, env, "unset")).find("NOT_SET_ANYWHERE: unbound variable"),
            std::string::npos)
      << summary(check(report, env, "unset"));

  const auto& ops = check(report, env, "ops");
  EXPECT_EQ(ops["status"], "skip");
  EXPECT_EQ(cause(ops), "needs_checkout");
  EXPECT_EQ(ops["diagnosis"]["evidence"]["paths"], Json::array({"tests/integration/ops/"}))
      << summary(ops);

  const auto& smoke = check(report, env, "smoke");
  EXPECT_EQ(smoke["status"], "pass") << summary(smoke);
}

// A shipped contract names its platform's CI preflight in a checkout of the
// repository ("{checkout}/.github/configs/..."): without one configured it is
// skipped, never a drift and never a load error; with one it runs there, as
// CI runs it, and judges the env; a checkout of a branch without that config
// or entry skips it, saying which.
TEST(SystemChecks, ShippedPreflightsRunFromAConfiguredCheckout) {
  testing::TempDir dir;
  std::filesystem::permissions(dir.path(), std::filesystem::perms(0755));
  const auto checkout = dir.path() / "Torch-FL";
  dir.write("Torch-FL/.github/configs/kunlunxin.yml",
            "display_name: Kunlunxin\nsetup_script: .github/scripts/set_env_kunlun.sh\n"
            "integration_tests:\n"
            "  - name: Check device availability\n"
            "    command: |\n"
            "      python - <<'PY'\n"
            "      import os, torch, torch_fl\n"
            "      assert torch_fl.flagos.is_available(), \"flagos device is unavailable\"\n"
            "      print(f\"flagos devices: {torch_fl.flagos.device_count()} in {os.getcwd()}\")\n"
            "      PY\n"
            "  - name: Run basic operator suite\n"
            "    command: python -m pytest tests/integration/test_ops.py -v --tb=short\n");
  const auto contract = dir.write("contract.yaml",
                                  "schema_version: 1\nname: shipped-like\nchecks:\n"
                                  "  - id: ci-device-availability\n"
                                  "    kind: integration_test\n"
                                  "    from: \"{checkout}/.github/configs/kunlunxin.yml\"\n"
                                  "    test: Check device availability\n");
  const auto scan = [&](const std::filesystem::path& checkout_dir) {
    auto loaded = daemon::load_contract(contract, {}, checkout_dir);
    EXPECT_TRUE(loaded.ok()) << loaded.error();
    daemon::ScanSettings settings;
    settings.facts.discovery.prefixes = {demo_host() / "miniconda3/envs/torch-fl-activate",
                                         demo_host() / "miniconda3/envs/torch-fl-xpu-py311"};
    daemon::Scanner scanner;
    return loaded.ok() ? report::to_json(scanner.scan(*loaded.value(), settings)) : Json::object();
  };

  const auto without = scan({});
  for (const char* env : {"torch-fl-activate", "torch-fl-xpu-py311"}) {
    const auto& result = check(without, env, "ci-device-availability");
    EXPECT_EQ(result["status"], "skip") << env;
    EXPECT_EQ(cause(result), "needs_checkout");
    EXPECT_NE(summary(result).find("no checkout of the repository is configured"),
              std::string::npos)
        << summary(result);
  }

  const auto with = scan(checkout);
  // Activated, torch-fl-activate has its 8 devices; the other has none.
  const auto& passing = check(with, "torch-fl-activate", "ci-device-availability");
  EXPECT_EQ(passing["status"], "pass") << summary(passing);
  const auto& failing = check(with, "torch-fl-xpu-py311", "ci-device-availability");
  EXPECT_EQ(cause(failing), "integration_test_failed");
  EXPECT_NE(common::json_text(failing["diagnosis"]).find("flagos device is unavailable"),
            std::string::npos)
      << common::json_text(failing, 2);

  // A checkout someone else may change runs nothing: its commands would run
  // in every env as the env's owner.
  if (::geteuid() == 0) {
    const auto config = checkout / ".github/configs/kunlunxin.yml";
    ASSERT_EQ(::chown(config.c_str(), 65534, 65534), 0);
    const auto untrusted = scan(checkout);
    const auto& skipped = check(untrusted, "torch-fl-activate", "ci-device-availability");
    EXPECT_EQ(cause(skipped), "needs_checkout");
    EXPECT_NE(summary(skipped).find("the checkout is not trusted: " + config.string() +
                                    " belongs to uid 65534"),
              std::string::npos)
        << summary(skipped);
    ASSERT_EQ(::chown(config.c_str(), 0, 0), 0);
    std::filesystem::permissions(checkout / ".github", std::filesystem::perms(0777));
    EXPECT_NE(summary(check(scan(checkout), "torch-fl-activate", "ci-device-availability"))
                  .find("is writable by its group or by everyone"),
              std::string::npos);
    std::filesystem::permissions(checkout / ".github", std::filesystem::perms(0755));
  }

  // A checkout of another branch: no such config.
  std::filesystem::create_directories(dir.path() / "other-branch");
  const auto other = scan(dir.path() / "other-branch");
  const auto& missing = check(other, "torch-fl-xpu-py311", "ci-device-availability");
  EXPECT_EQ(cause(missing), "needs_checkout");
  EXPECT_NE(summary(missing).find("has no .github/configs/kunlunxin.yml (another branch?)"),
            std::string::npos)
      << summary(missing);
}

// Every shipped contract of a platform whose main-line CI config has a
// device preflight selects it, and loads without a checkout.
TEST(SystemChecks, ShippedContractsSelectTheirPlatformsPreflight) {
  for (const char* name :
       {"ascend", "cuda", "dcu", "gcu", "metax", "musa", "ppu", "kunlunxin-vendor"}) {
    const auto file = std::filesystem::path(ENVCONTRACT_SOURCE_DIR "/contracts/platforms") /
                      (std::string(name) + ".yaml");
    auto loaded = daemon::load_contract(file);
    ASSERT_TRUE(loaded.ok()) << name << ": " << loaded.error();
    bool selected = false;
    for (const auto& shipped : loaded.value()->contract.checks) {
      if (shipped.kind == "integration_test" && shipped.id == "ci-device-availability") {
        const auto& params = shipped.parameters<contracts::IntegrationTestParams>();
        selected = params.test == "Check device availability" &&
                   params.from.starts_with("{checkout}/.github/configs/");
        EXPECT_FALSE(params.needs_checkout.empty()) << name;
      }
    }
    EXPECT_TRUE(selected) << name;
  }
}

// The runner's fail-fast through a real scan: after a preflight of a config
// fails, its later entries are not run, each skipped as blocked by it, and
// the env drifts on the preflight; a continue-after-failure entry that
// fails lets the next one run.
TEST(SystemChecks, AFailedFailFastPreflightStopsTheLaterEntries) {
  testing::TempDir dir;
  const auto marker = dir.path() / "later-ran";
  std::filesystem::permissions(dir.path(), std::filesystem::perms(0777));
  dir.write("ci/musa.yml",
            "integration_tests:\n"
            "  - name: Probe the driver\n    phase: preflight\n"
            "    failure_policy: continue-after-failure\n    command: exit 2\n"
            "  - name: Check the driver\n    command: echo 'no driver' >&2; exit 3\n"
            "  - name: Run later\n    phase: functional\n    command: touch " +
                marker.string() + "\n");
  std::string checks;
  for (const char* test : {"probe-the-driver", "check-the-driver", "run-later"}) {
    checks += std::string("  - id: ") + test +
              "\n    kind: integration_test\n    from: ci/musa.yml\n    test: " + test + "\n";
  }
  const auto contract_file =
      dir.write("contract.yaml", "schema_version: 1\nname: fail-fast\nchecks:\n" + checks);
  const auto report = scan_torch_fl_cpu(contract_file);
  const std::string env = "torch-fl-cpu";

  EXPECT_EQ(cause(check(report, env, "probe-the-driver")), "integration_test_failed");
  const auto& gate = check(report, env, "check-the-driver");
  EXPECT_EQ(cause(gate), "integration_test_failed");
  EXPECT_EQ(gate["actual"]["exit_code"], 3);
  EXPECT_NE(gate["diagnosis"]["evidence"]["stderr"].get<std::string>().find("no driver"),
            std::string::npos)
      << gate["diagnosis"]["evidence"];
  EXPECT_NE(summary(gate).find("exited 3 (wanted 0): no driver"), std::string::npos)
      << summary(gate);
  const auto& later = check(report, env, "run-later");
  EXPECT_EQ(later["status"], "skip");
  EXPECT_EQ(cause(later), "blocked");
  EXPECT_EQ(later["diagnosis"]["evidence"]["blocked_by"], "check-the-driver");
  EXPECT_NE(summary(later).find("not run: integration test check-the-driver failed first, and "
                                "its failure_policy is fail-fast"),
            std::string::npos)
      << summary(later);
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_EQ(report["envs"][0]["verdict"], "drift");
}

}  // namespace
}  // namespace envcontract
