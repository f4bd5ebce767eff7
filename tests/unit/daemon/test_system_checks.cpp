// The kinds judged from what the system gives an env (libraries the loader
// finds, device nodes, tools, glibc) and the ones that run shell commands,
// judged through the real scanner on demo host envs.
#include <gtest/gtest.h>

#include "contracts/check_kind.hpp"
#include "daemon/scanner.hpp"
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
  const auto report = scanner.scan(*loaded.value(), settings);

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

}  // namespace
}  // namespace envcontract
