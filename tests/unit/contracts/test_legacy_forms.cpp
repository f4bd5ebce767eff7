// The two real-world contract forms load unchanged and mean the same checks
// as their native twins.
#include <gtest/gtest.h>
#include <array>

#include "contracts/contract_loader.hpp"
#include "contracts/integration_tests.hpp"
#include "tests/support/contract_text.hpp"

namespace envcontract::contracts {
namespace {

// The check's parameters in the normalised form `validate --print` shows.
Json normalised(const Check& check) {
  return to_json(check.params);
}

using testing::joined;
using testing::load_text;
using testing::messages;

const std::filesystem::path k_data = ENVCONTRACT_SOURCE_DIR "/tests/data/contracts";

const Check* find_check(const Contract& contract, const std::string& id) {
  for (const auto& check : contract.checks) {
    if (check.id == id) {
      return &check;
    }
  }
  return nullptr;
}

TEST(EnvironmentCheckForm, TranslatesEveryKeyIntoNativeChecks) {
  const auto result = load_contract_file(ENVCONTRACT_SOURCE_DIR
                                         "/contracts/platforms/kunlunxin-environment-check.yaml");
  ASSERT_TRUE(result.contract) << joined(result);
  const Contract& contract = *result.contract;
  EXPECT_EQ(contract.forms, std::vector<std::string>{"environment_check"});
  EXPECT_EQ(contract.display_name, "Kunlunxin");
  ASSERT_EQ(contract.targets.size(), 1U);
  EXPECT_EQ(contract.targets[0].name, "ci");
  EXPECT_EQ(contract.targets[0].image,
            "harbor.example/flagos-runtime/flagos-runtime-kunlunxin-xre5.37.1:2.2.0");

  const Check* torch = find_check(contract, "torch-build");
  ASSERT_NE(torch, nullptr);
  EXPECT_EQ(torch->kind, "torch");
  EXPECT_EQ(torch->section, "environment_check");
  EXPECT_EQ(normalised(*torch)["base"], "2.10.0");
  EXPECT_EQ(normalised(*torch)["cuda"], Json({{"mode", "none"}}));

  const Check* devices = find_check(contract, "flagos-devices");
  ASSERT_NE(devices, nullptr);
  EXPECT_EQ(devices->kind, "devices");
  EXPECT_EQ(normalised(*devices)["expression"], "torch_fl.flagos.device_count()");
  EXPECT_EQ(normalised(*devices)["count"], Json({{"op", ">="}, {"value", 1}}));

  const Check* triton = find_check(contract, "triton-backend");
  ASSERT_NE(triton, nullptr);
  EXPECT_EQ(normalised(*triton)["provider"], "flagtree");
  EXPECT_EQ(normalised(*triton)["backends"], Json({"xpu"}));
  EXPECT_EQ(normalised(*triton)["forbid_distributions"], Json({"triton"}));
}

TEST(EnvironmentCheckForm, ErrorsPointIntoTheOriginalSection) {
  const auto result = load_text(R"(display_name: X
environment_check:
  torch_version_base: "2.10.0"
  cuda_version: sometimes
  flagos_devices:
    at_leats: 1
  triton_backnd: xpu
)");
  EXPECT_EQ(messages(result),
            (std::vector<std::string>{
                "contract.yaml:4:17: error: 'cuda' of check 'torch-build' must be none, required, "
                "any or a version such as '12.9', got 'sometimes'",
                "contract.yaml:6:5: error: 'flagos_devices' is missing the required key "
                "'at_least'",
                "contract.yaml:6:5: error: unknown key 'at_leats' in 'flagos_devices' (did you "
                "mean 'at_least'?)",
                "contract.yaml:7:3: error: unknown key 'triton_backnd' in 'environment_check' "
                "(did you mean 'triton_backend'?)"}));
}

TEST(PlatformConfigForm, LoadsTorchContractPreflightsAndKeepsCiKeys) {
  const auto result = load_contract_file(k_data / "platform-config-kunlunxin.yml");
  ASSERT_TRUE(result.contract) << joined(result);
  ASSERT_EQ(messages(result).size(), 1U) << joined(result);
  EXPECT_NE(messages(result)[0].find(
                "platform-config-kunlunxin.yml:22:3: note: 1 integration test runs as a host "
                "check (phase: preflight); 1 kept, not run (no phase, or a suite's): "
                "run-unit-tests; select one with an integration_test check (docs/contracts.md)"),
            std::string::npos)
      << messages(result)[0];
  const Contract& contract = *result.contract;
  EXPECT_EQ(contract.forms, std::vector<std::string>{"platform_config"});
  EXPECT_EQ(contract.platform, "kunlunxin");
  ASSERT_EQ(contract.targets.size(), 1U);
  EXPECT_EQ(contract.targets[0].name, "ci");

  const Check* torch = find_check(contract, "torch-contract");
  ASSERT_NE(torch, nullptr);
  EXPECT_EQ(normalised(*torch)["base"], "2.10.0");
  EXPECT_EQ(normalised(*torch)["local"], "cpu");
  EXPECT_EQ(normalised(*torch)["cuda"], Json({{"mode", "none"}}));
  EXPECT_EQ(normalised(*torch)["forbidden_path_parts"], Json({"/opt/conda/"}));

  // The preflight entry is judged; the test-phase entry is kept, not run.
  const Check* preflight = find_check(contract, "preflight-devices");
  ASSERT_NE(preflight, nullptr);
  EXPECT_EQ(preflight->kind, "integration_test");
  EXPECT_EQ(preflight->stage, ProbeStage::smoke);
  EXPECT_EQ(normalised(*preflight)["entry"]["environment"]["TORCH_DEVICE_BACKEND_AUTOLOAD"], "0");
  EXPECT_NE(
      normalised(*preflight)["entry"]["command"].get<std::string>().find("device_count() >= 1"),
      std::string::npos);
  EXPECT_EQ(contract.checks.size(), 2U);

  for (const char* key :
       {"runner_labels", "container_volumes", "container_options", "integration_environment",
        "timeout_minutes", "wheel_artifact_name", "integration_wheel_source", "setup_script",
        "setup_platform", "integration_tests"}) {
    EXPECT_TRUE(contract.kept.contains(key)) << key;
  }
  EXPECT_EQ(contract.kept["timeout_minutes"], 90);
}

TEST(PlatformConfigForm, OlderConfigWithoutTorchContractLoadsWithAWarning) {
  const auto result = load_contract_file(k_data / "platform-config-older.yml");
  ASSERT_TRUE(result.contract) << joined(result);
  ASSERT_EQ(messages(result).size(), 2U) << joined(result);
  EXPECT_NE(messages(result)[0].find(
                ":2:1: warning: nothing in this platform config judges the torch build (no "
                "'torch_contract', no torch check)"),
            std::string::npos);
  // Its entry has no phase: kept, not run, and the note says how to run it.
  EXPECT_NE(messages(result)[1].find("0 integration tests run as host checks (phase: preflight); "
                                     "1 kept, not run (no phase, or a suite's): "
                                     "check-device-availability"),
            std::string::npos)
      << messages(result)[1];
  const Contract& contract = *result.contract;
  EXPECT_TRUE(contract.checks.empty());
  EXPECT_EQ(contract.targets[0].image.substr(contract.targets[0].image.size() - 8), "89abcdef");
}

TEST(PlatformConfigForm, UnknownCiKeysAreKeptWithAWarning) {
  const auto result = load_text(R"(setup_script: s.sh
torch_contract: {base_version: "2.10.0"}
cache_volume: /data/cache
)");
  ASSERT_TRUE(result.contract) << joined(result);
  EXPECT_EQ(messages(result),
            (std::vector<std::string>{"contract.yaml:3:1: warning: unknown key 'cache_volume' in "
                                      "the contract; it is kept but not judged"}));
  EXPECT_EQ(result.contract->kept["cache_volume"], "/data/cache");
}

TEST(PlatformConfigForm, TorchContractNeedsABaseVersion) {
  const auto result = load_text("setup_script: s.sh\ntorch_contract:\n  cuda: none\n  locl: cpu\n");
  EXPECT_EQ(messages(result),
            (std::vector<std::string>{
                "contract.yaml:3:3: error: 'torch_contract' is missing the required key "
                "'base_version'",
                "contract.yaml:4:3: error: unknown key 'locl' in 'torch_contract'"}));
}

TEST(MixedForms, NativeChecksAndAnEnvironmentCheckSectionCombine) {
  const auto result = load_text(R"(schema_version: 1
environment_check:
  triton_backend: xpu
checks:
  - kind: tools
    on_path: [xpu-smi]
)");
  ASSERT_TRUE(result.contract) << joined(result);
  EXPECT_EQ(result.contract->forms, (std::vector<std::string>{"native", "environment_check"}));
  EXPECT_EQ(result.contract->checks.size(), 2U);
}

}  // namespace
}  // namespace envcontract::contracts

namespace envcontract::contracts {
namespace {

// The four lines of real CI configs, written for the tests in their shapes:
// each loads; only preflights run; ids are stable; the note says the rest.
TEST(CiLines, EachLineLoadsAndRunsOnlyItsPreflights) {
  const auto lines = k_data / "ci-lines";
  const std::map<std::string, std::vector<std::string>> runs = {
      {"early-main-ascend.yml", {}},
      {"newest-main-cuda.yml", {}},
      {"kunlunxin-vendor.yml", {"torch-contract"}},
      {"torch-contract-branch-musa.yml", {"torch-contract", "preflight-env", "preflight-devices"}},
  };
  for (const auto& [file, expected] : runs) {
    const auto result = load_contract_file(lines / file);
    ASSERT_TRUE(result.contract) << file << ": " << joined(result);
    std::vector<std::string> ids;
    for (const auto& check : result.contract->checks) {
      ids.push_back(check.id);
    }
    EXPECT_EQ(ids, expected) << file;
    EXPECT_NE(joined(result).find(" kept, not run (no phase, or a suite's): "), std::string::npos)
        << file;
  }
  // The newest CUDA config's 6 entries: 2 preflights and 4 suites, none a
  // host check until selected.
  const auto cuda = load_contract_file(lines / "newest-main-cuda.yml");
  EXPECT_NE(joined(cuda).find("6 kept, not run (no phase, or a suite's): "
                              "check-model-availability, check-device-availability, "
                              "run-operator-tests-vendor-backend-main-ops"),
            std::string::npos)
      << joined(cuda);
  // The runner reads "Check ... availability" as a preflight by its name:
  // the note says so, and the entry still runs only when selected.
  EXPECT_NE(joined(cuda).find("; the CI runner reads check-model-availability, "
                              "check-device-availability as preflight by name; select one"),
            std::string::npos)
      << joined(cuda);
  // A failure fails the CI job whatever the policy (which only says whether
  // later entries run): every selected entry is required. The environment
  // is the runner's.
  const auto musa = load_contract_file(lines / "torch-contract-branch-musa.yml");
  ASSERT_TRUE(musa.contract);
  EXPECT_EQ(find_check(*musa.contract, "preflight-devices")->severity, Severity::required);
  const auto env = normalised(*find_check(*musa.contract, "preflight-env"))["entry"];
  EXPECT_EQ(env["integration_environment"]["MUSA_HOME"], "/usr/local/musa");
  EXPECT_EQ(env["environment"]["LD_LIBRARY_PATH"], "${MUSA_HOME}/lib:${LD_LIBRARY_PATH}");
  EXPECT_EQ(normalised(*find_check(*musa.contract, "torch-contract"))["forbidden_path_parts"],
            Json({"torch_musa"}));
}

// Ids come from `id`, else the name: inserting an entry before another does
// not move its id (a waiver or a link keeps naming the same test).
TEST(CiLines, IdsStayWhenAnEntryIsInsertedBeforeThem) {
  const std::string entries =
      "  - name: Check device availability\n    phase: preflight\n    command: 'true'\n"
      "  - id: env\n    name: Check the environment\n    phase: preflight\n"
      "    command: 'true'\n";
  const std::string waiver = "waivers:\n  - check: check-device-availability\n    reason: OPS-1\n";
  const auto before =
      load_text("setup_script: s.sh\nimage: a/b:1\n" + waiver + "integration_tests:\n" + entries);
  const auto after = load_text("setup_script: s.sh\nimage: a/b:1\n" + waiver +
                               "integration_tests:\n  - name: A new first test\n"
                               "    phase: preflight\n    command: 'true'\n" +
                               entries);
  ASSERT_TRUE(before.contract) << joined(before);
  ASSERT_TRUE(after.contract) << joined(after);
  EXPECT_NE(find_check(*before.contract, "check-device-availability"), nullptr);
  EXPECT_NE(find_check(*after.contract, "check-device-availability"), nullptr);
  EXPECT_NE(find_check(*after.contract, "env"), nullptr);
  EXPECT_NE(find_check(*after.contract, "a-new-first-test"), nullptr);
  ASSERT_EQ(after.contract->waivers.size(), 1U);
  EXPECT_EQ(after.contract->waivers[0].check, "check-device-availability");
}

// Every realistic mistake is an error at its place (exit 1), never a silent
// loss.
TEST(CiLines, MistakesAreErrorsWithTheirPlace) {
  const auto error_of = [](const std::string& text) {
    const auto result = load_text(text);
    std::string errors;
    for (const auto& diagnostic : result.diagnostics.sorted()) {
      if (diagnostic.level == contracts::DiagnosticLevel::error) {
        errors += diagnostic.to_string() + "\n";
      }
    }
    return errors;
  };
  // The first error's place, as its diagnostic holds it.
  const auto first_error_at = [](const std::string& text) {
    const auto result = load_text(text);
    for (const auto& diagnostic : result.diagnostics.sorted()) {
      if (diagnostic.level == contracts::DiagnosticLevel::error) {
        return std::pair(diagnostic.where.line, diagnostic.where.column);
      }
    }
    return std::pair(0, 0);
  };
  const std::string head = "setup_script: s.sh\nimage: a/b:1\n";
  const std::string test = "integration_tests:\n  - name: t\n    command: 'true'\n";
  EXPECT_NE(error_of(head + "integration_tests:\n  - name: t\n    phase: prefligth\n"
                            "    command: 'true'\n")
                .find(":5:12: error: unknown phase 'prefligth' (did you mean 'preflight'?); it "
                      "is one of preflight, functional"),
            std::string::npos);
  EXPECT_NE(error_of(head + "integration_tests:\n  - name: t\n    failure_policy: fail-fats\n"
                            "    command: 'true'\n")
                .find(":5:21: error: unknown failure_policy 'fail-fats' (did you mean "
                      "'fail-fast'?)"),
            std::string::npos);
  // The values of the torch_contract line's own test suite (`continue`,
  // `test` are not among them).
  EXPECT_NE(error_of(head + "integration_tests:\n  - name: t\n    failure_policy: continue\n"
                            "    command: 'true'\n")
                .find("unknown failure_policy 'continue'; it is one of fail-fast, "
                      "continue-after-failure"),
            std::string::npos);
  EXPECT_NE(error_of(head + "integration_tests:\n  - name: \"two\\nlines\"\n"
                            "    command: 'true'\n")
                .find(":4:11: error: 'name' of integration test must be a single line"),
            std::string::npos)
      << error_of(head + "integration_tests:\n  - name: \"two\\nlines\"\n    command: 'true'\n");
  EXPECT_NE(error_of(head + "torch_contarct:\n  base_version: '2.10.0'\n" + test)
                .find(":3:1: error: unknown key 'torch_contarct' in the contract (did you mean "
                      "'torch_contract'?)"),
            std::string::npos)
      << error_of(head + "torch_contarct:\n  base_version: '2.10.0'\n" + test);
  EXPECT_NE(error_of(head + "integration_tests:\n  - id: a\n    name: t\n    command: 'true'\n"
                            "  - id: a\n    name: u\n    command: 'true'\n")
                .find(":7:5: error: two integration tests have the id 'a' (the first at line 4)"),
            std::string::npos);
  EXPECT_EQ(first_error_at(head + "timeout_minutes: sixty\n" + test), std::pair(3, 18));
  EXPECT_EQ(first_error_at(head + "timeout_minutes: 0\n" + test), std::pair(3, 18));
  EXPECT_NE(error_of(head + "torch_contract:\n  base_version: 2.10\n" + test)
                .find(":4:17: error: 'base' of check 'torch-contract' is the number 2.10 to YAML: "
                      "quote versions, as in base: \"2.10\""),
            std::string::npos)
      << error_of(head + "torch_contract:\n  base_version: 2.10\n" + test);
  EXPECT_NE(error_of(head +
                     "torch_contract:\n  base_version: '2.10.0'\n  local_version: cu129\n"
                     "  cuda: none\n" +
                     test)
                .find("error: 'local' cu129 is a CUDA build, so 'cuda: none' of check "
                      "'torch-contract' can never pass"),
            std::string::npos);
  EXPECT_NE(error_of(head + "integration_tests:\n  - name: a\n    command: x\n  name: b\n"
                            "    command: y\n")
                .find("is a '- ' missing at the start of line 6?"),
            std::string::npos);
  EXPECT_NE(error_of(head + "integration_tests:\n  - name: a\n\tcommand: x\n")
                .find("line 5 is indented with a tab: YAML indents with spaces only"),
            std::string::npos);
}

}  // namespace
}  // namespace envcontract::contracts

namespace envcontract::contracts {
namespace {

// Only bare words made of path characters count as repository paths: a
// false match would skip a check.
TEST(CiLines, RepositoryPathsAreOnlyPlainRelativePaths) {
  EXPECT_EQ(repository_paths("python -m pytest tests/integration/ops/ -m \"main_ops\" -v"),
            std::vector<std::string>{"tests/integration/ops/"});
  EXPECT_EQ(repository_paths("bash ./run.sh && bash .github/scripts/set_env.sh"),
            (std::vector<std::string>{"./run.sh", ".github/scripts/set_env.sh"}));
  for (const char* command :
       {"nvidia-smi -L 2>/dev/null", "xpu-smi >/dev/null 2>&1", "sed 's/a/b/' f",
        "python -c \"print(1/2)\"", "test -d \"$MODEL_PATH\"", "ls /opt/conda/lib",
        "curl https://example.org/x", "ls ~/x/y", "echo ${A}/b", "echo a / b"}) {
    EXPECT_EQ(repository_paths(command), std::vector<std::string>{}) << command;
  }
}

// What the FlagOS runner (run_integration_tests.py) makes of an entry: an
// id it accepts ("check device") is a check id made a slug; a missing phase
// is read from the name; a missing policy follows the phase. --print shows
// both; a config in which nothing is fail-fast, which the runner refuses,
// gets a warning.
TEST(CiLines, TheRunnersIdsPhasesAndPoliciesAreItsOwn) {
  const auto result = load_text(
      "setup_script: s.sh\nimage: a/b:1\nintegration_tests:\n"
      "  - id: check device\n    name: Check device\n    phase: preflight\n"
      "    command: 'true'\n"
      "  - name: Check isolated environment\n    command: 'true'\n"
      "  - name: Run operator tests\n    command: 'true'\n"
      "  - name: Run general tests\n    phase: preflight\n"
      "    failure_policy: continue-after-failure\n    command: 'true'\n");
  ASSERT_TRUE(result.contract) << joined(result);
  EXPECT_NE(find_check(*result.contract, "check-device"), nullptr);
  EXPECT_EQ(find_check(*result.contract, "run-general-tests")->severity, Severity::required);
  const auto& entries = result.contract->kept.at("integration_tests");
  ASSERT_EQ(entries.size(), 4U);
  const std::vector<std::array<std::string, 4>> expected = {
      {"check-device", "true", "preflight", "fail-fast"},
      {"check-isolated-environment", "false", "preflight", "fail-fast"},
      {"run-operator-tests", "false", "functional", "continue-after-failure"},
      {"run-general-tests", "true", "preflight", "continue-after-failure"},
  };
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(entries[i]["check_id"], expected[i][0]);
    EXPECT_EQ(entries[i]["runs"].get<bool>(), expected[i][1] == "true");
    EXPECT_EQ(entries[i]["runner_phase"], expected[i][2]);
    EXPECT_EQ(entries[i]["runner_failure_policy"], expected[i][3]);
  }
  EXPECT_EQ(joined(result).find("refuses"), std::string::npos) << joined(result);

  const auto no_gate = load_text(
      "setup_script: s.sh\nimage: a/b:1\nintegration_tests:\n"
      "  - name: Run operator tests\n    command: 'true'\n"
      "  - name: Probe\n    phase: preflight\n    failure_policy: continue-after-failure\n"
      "    command: 'true'\n");
  ASSERT_TRUE(no_gate.contract) << joined(no_gate);
  EXPECT_NE(joined(no_gate).find(":4:3: warning: every integration test continues after a "
                                 "failure, and the CI runner refuses such a config"),
            std::string::npos)
      << joined(no_gate);
}

// The agent may name entries to run that have no phase: they become checks;
// a name the config lacks is an error with the closest one.
TEST(CiLines, TheAgentCanNameEntriesToRun) {
  const auto config = k_data / "ci-lines" / "newest-main-cuda.yml";
  const auto selected =
      load_contract_file(config, {{"Check device availability", "check-model-availability"}, {}});
  ASSERT_TRUE(selected.contract) << joined(selected);
  EXPECT_NE(find_check(*selected.contract, "check-device-availability"), nullptr);
  EXPECT_NE(find_check(*selected.contract, "check-model-availability"), nullptr);
  EXPECT_EQ(selected.contract->checks.size(), 2U);
  EXPECT_NE(joined(selected).find("2 integration tests run as host checks (phase: preflight, or "
                                  "named by the agent's run_integration_tests); 4 kept"),
            std::string::npos)
      << joined(selected);
  const auto typo = load_contract_file(config, {{"check-device-availabilty"}, {}});
  EXPECT_FALSE(typo.contract);
  EXPECT_NE(joined(typo).find("run_integration_tests names 'check-device-availabilty', which "
                              "this config does not have (did you mean "
                              "'check-device-availability'?)"),
            std::string::npos)
      << joined(typo);
  const auto native = load_contract_text("schema_version: 1\nchecks:\n  - kind: python\n",
                                         "contract.yaml", {{"x"}, {}});
  EXPECT_FALSE(native.contract);
}

}  // namespace
}  // namespace envcontract::contracts
