// From one env's facts to what its snapshot contract says, without a probe
// or a file: what a user would import and what it gave, its packages but the
// packaging tools, what activation sets (a path into the env is only said to
// be set), where the loader looks first.
#include "provisioning/snapshot_input.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "facts/stage_names.hpp"

namespace envcontract::provisioning {
namespace {

facts::Distribution distribution(const std::string& name, const std::string& version,
                                 std::vector<std::string> top_level) {
  facts::Distribution found;
  found.name = name;
  found.normalized = name;
  found.version = version;
  found.top_level = std::move(top_level);
  return found;
}

facts::EnvFacts xpu_env() {
  facts::EnvFacts env;
  env.env.name = "xpu210";
  env.env.prefix = "/opt/conda/envs/xpu210";
  env.env.python_version = "3.10.13";
  auto& found = env.static_facts;
  found.torch.present = true;
  found.torch.version = "2.10.0+cpu";
  found.torch.base = "2.10.0";
  found.torch.local = "cpu";
  found.triton.present = true;
  found.triton.provider = "flagtree";
  found.triton.provider_version = "0.7.0";
  found.triton.backends = {"xpu"};
  found.distributions = {distribution("pip", "24.0", {"pip"}),
                         distribution("torch-xpu", "2.10.0", {"torch_xpu", "_private", "torch"}),
                         distribution("numpy", "2.0.0", {"numpy"})};
  env.activation.bare = {{"PATH", "/usr/bin"}};
  env.activation.activated = {{"PATH", "/opt/conda/envs/xpu210/bin:/usr/bin"},
                              {"XPU_HOME", "/opt/conda/envs/xpu210/xpu"},
                              {"XPU_VISIBLE_DEVICES", "0,1"},
                              {"CONDA_PREFIX", "/opt/conda/envs/xpu210"},
                              {"LD_LIBRARY_PATH", "/opt/conda/envs/xpu210/lib/xpu:/usr/lib"}};
  return env;
}

TEST(SnapshotInput, WhatAUserWouldImportTorchFirstTritonLastToolsLeftOut) {
  EXPECT_EQ(candidate_imports(xpu_env().static_facts),
            (std::vector<std::string>{"torch", "numpy", "torch_xpu", "triton"}));
}

TEST(SnapshotInput, TheEnvsFactsAndWhatItsProbeGave) {
  const auto env = xpu_env();
  facts::DynamicFacts dynamic;
  facts::StageResult imports;
  imports.stage = "imports";
  imports.summary = "the import of numpy hung";
  facts::ProbeRecord torch;
  torch.type = "import";
  torch.module = "torch";
  torch.ok = true;
  facts::ProbeRecord xpu;
  xpu.type = "import";
  xpu.module = "torch_xpu";
  xpu.error_type = "ImportError";
  xpu.error = "libbkcl.so: cannot open shared object file";
  imports.records = {torch, xpu};
  dynamic.stages.push_back(imports);

  const auto input = snapshot_input(env, dynamic,
                                    {.host = "node-7",
                                     .image = "registry/xpu:2.2.0",
                                     .pin = true,
                                     .imports = {"torch", "torch_xpu", "numpy"}});
  EXPECT_EQ(input.contract_name, "xpu210-snapshot");
  EXPECT_EQ(input.host, "node-7");
  EXPECT_EQ(input.image, "registry/xpu:2.2.0");
  EXPECT_EQ(input.platform, "");
  EXPECT_TRUE(input.pin);
  ASSERT_TRUE(input.torch.has_value());
  EXPECT_EQ(input.torch->local, "cpu");
  ASSERT_TRUE(input.triton.has_value());
  EXPECT_EQ(input.triton->provider, "flagtree");
  EXPECT_EQ(input.imported, (std::vector<std::string>{"torch"}));
  EXPECT_EQ(input.import_failures,
            (std::vector<std::pair<std::string, std::string>>{
                {"torch_xpu", "ImportError: libbkcl.so: cannot open shared object file"},
                {"numpy", "not reached: the import of numpy hung"}}));
  EXPECT_EQ(input.distributions, (std::vector<std::pair<std::string, std::string>>{
                                     {"torch-xpu", "2.10.0"}, {"numpy", "2.0.0"}}));
  // A path into the env is the env's own: said to be set, not copied.
  EXPECT_EQ(input.variables,
            (std::vector<std::pair<std::string, std::string>>{{"XPU_VISIBLE_DEVICES", "0,1"}}));
  EXPECT_EQ(input.variables_set, (std::vector<std::string>{"XPU_HOME"}));
  EXPECT_EQ(input.library_path_first, "{prefix}/lib/xpu");
}

// A variable activation leaves as it was is not the env's; a base contract
// gives the platform and its device counts with what they gave here.
TEST(SnapshotInput, ABaseContractsChecksAndWhatActivationLeavesAlone) {
  auto env = xpu_env();
  env.activation.bare["XPU_VISIBLE_DEVICES"] = "0,1";  // set before activation too
  contracts::Contract base;
  base.platform = "kunlunxin";
  contracts::Check devices;
  devices.id = "xpu-devices";
  devices.kind = "devices";
  contracts::DevicesParams params;
  params.expression = "torch.xpu.device_count()";
  devices.params = params;
  base.checks.push_back(devices);
  facts::DynamicFacts dynamic;
  facts::StageResult counted;
  counted.stage = std::string(facts::stage_names::devices("xpu-devices"));
  counted.status = facts::StageStatus::ok;
  facts::ProbeRecord record;
  record.type = "devices";
  record.value = 8;
  counted.records = {record};
  dynamic.stages.push_back(counted);

  const auto input = snapshot_input(env, dynamic, {.name = "golden", .base = &base});
  EXPECT_EQ(input.contract_name, "golden");
  EXPECT_EQ(input.platform, "kunlunxin");
  EXPECT_TRUE(input.variables.empty()) << input.variables.size();
  EXPECT_EQ(input.variables_set, (std::vector<std::string>{"XPU_HOME"}));
  ASSERT_EQ(input.devices.size(), 1U);
  EXPECT_EQ(input.devices[0].id, "xpu-devices");
  ASSERT_TRUE(input.devices[0].observed.has_value());
  EXPECT_EQ(*input.devices[0].observed, 8);
}

}  // namespace
}  // namespace envcontract::provisioning
