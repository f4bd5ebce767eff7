// The two real-world contract forms load unchanged and mean the same checks
// as their native twins.
#include <gtest/gtest.h>

#include "contracts/contract_loader.hpp"
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
