// contracts/kind_requests.cpp: what each check kind asks the probes to
// gather in every env, beyond what every scan gathers.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "contracts/integration_tests.hpp"
#include "contracts/kinds.hpp"

namespace envcontract::contracts {
namespace {

using facts::ProbeRequest;
using Layers = std::vector<std::pair<std::string, std::string>>;

Check check_with_id(const std::string& id) {
  Check check;
  check.id = id;
  return check;
}

// An integration test whose entry runs `command`, from `from`.
IntegrationTestParams integration(const std::string& from, const std::string& command) {
  IntegrationTestParams params;
  params.from = from;
  params.test = "devices";
  params.timeout = std::chrono::minutes(20);
  params.entry.name = "Check device availability";
  params.entry.id = "devices";
  params.entry.command = command;
  return params;
}

TEST(KindRequests, ImportsAreAddedOnceInOrderWithTheLongestTimeout) {
  ProbeRequest request;
  request.add_import("torch");
  ImportsParams params;
  params.modules = {"torch_fl", "torch", "flag_gems"};
  params.timeout = std::chrono::seconds(90);
  kinds::request_imports(check_with_id("imp"), params, request);
  EXPECT_EQ(request.imports, (std::vector<std::string>{"torch", "torch_fl", "flag_gems"}));
  EXPECT_EQ(request.imports_timeout, params.timeout);

  // A second imports check with a shorter timeout does not shorten the stage.
  ImportsParams quick;
  quick.modules = {"triton"};
  quick.timeout = std::chrono::seconds(5);
  kinds::request_imports(check_with_id("imp-2"), quick, request);
  EXPECT_EQ(request.imports,
            (std::vector<std::string>{"torch", "torch_fl", "flag_gems", "triton"}));
  EXPECT_EQ(request.imports_timeout, params.timeout);
}

TEST(KindRequests, ATorchCheckAsksForTorchsIdentityAndNoImports) {
  ProbeRequest request;
  TorchParams params;
  params.base = "2.10.0";
  kinds::request_torch(check_with_id("torch"), params, request);
  EXPECT_TRUE(request.torch_identity);
  EXPECT_TRUE(request.imports.empty());
  EXPECT_FALSE(request.torch_after_imports);
}

TEST(KindRequests, ATorchCheckAfterImportsImportsTorchFirstThenThoseModules) {
  ProbeRequest request;
  request.add_import("flag_gems");
  TorchParams params;
  params.after_import = {"torch_fl", "flag_gems"};
  kinds::request_torch(check_with_id("torch"), params, request);
  EXPECT_TRUE(request.torch_identity);
  EXPECT_TRUE(request.torch_after_imports);
  EXPECT_EQ(request.imports, (std::vector<std::string>{"flag_gems", "torch", "torch_fl"}));
}

TEST(KindRequests, DevicesAndSmokesRunUnderTheirChecksIds) {
  ProbeRequest request;
  DevicesParams devices;
  devices.expression = "torch_fl.flagos.device_count()";
  devices.imports = {"torch_fl"};
  devices.timeout = std::chrono::seconds(30);
  kinds::request_devices(check_with_id("dev"), devices, request);
  ASSERT_EQ(request.devices.size(), 1U);
  EXPECT_EQ(request.devices[0].id, "dev");
  EXPECT_EQ(request.devices[0].expression, devices.expression);
  EXPECT_EQ(request.devices[0].imports, devices.imports);
  EXPECT_EQ(request.devices[0].timeout, devices.timeout);
  // Devices are not imports of the imports stage.
  EXPECT_TRUE(request.imports.empty());

  SmokeParams smoke;
  smoke.code = "import torch; print(torch.ones(1))";
  smoke.timeout = std::chrono::seconds(45);
  kinds::request_smoke(check_with_id("first-op"), smoke, request);
  kinds::request_smoke(check_with_id("second-op"), smoke, request);
  ASSERT_EQ(request.smokes.size(), 2U);
  EXPECT_EQ(request.smokes[0].id, "first-op");
  EXPECT_EQ(request.smokes[1].id, "second-op");
  EXPECT_EQ(request.smokes[0].code, smoke.code);
  EXPECT_EQ(request.smokes[0].timeout, smoke.timeout);
}

TEST(KindRequests, ACommandRunsPlainlyNotAsTheCiRunner) {
  ProbeRequest request;
  CommandParams params;
  params.run = "xpu-smi -L";
  params.timeout = std::chrono::seconds(10);
  kinds::request_command(check_with_id("smi"), params, request);
  ASSERT_EQ(request.commands.size(), 1U);
  const auto& command = request.commands[0];
  EXPECT_EQ(command.id, "smi");
  EXPECT_EQ(command.run, params.run);
  EXPECT_EQ(command.timeout, params.timeout);
  EXPECT_FALSE(command.ci_runner);
  EXPECT_FALSE(command.fail_fast);
  EXPECT_TRUE(command.layers.empty());
  EXPECT_TRUE(command.workdir.empty());
  EXPECT_TRUE(command.group.empty());
}

TEST(KindRequests, AnIntegrationTestRunsAsTheCiRunnerWithItsConfigsEnvironmentFirst) {
  ProbeRequest request;
  auto params = integration("configs/kunlunxin.yml", "python -c 'import torch_fl'");
  params.entry.runner_environment = {{"XPU_VISIBLE_DEVICES", "0"}, {"MODE", "ci"}};
  params.entry.environment = {{"MODE", "preflight"}};
  kinds::request_integration_test(check_with_id("devices"), params, request);
  ASSERT_EQ(request.commands.size(), 1U);
  const auto& command = request.commands[0];
  EXPECT_EQ(command.id, "devices");
  EXPECT_EQ(command.run, params.entry.command);
  EXPECT_EQ(command.timeout, params.timeout);
  EXPECT_TRUE(command.ci_runner);
  // Layered in order: the entry's own variables apply over the config's.
  EXPECT_EQ(command.layers,
            (Layers{{"XPU_VISIBLE_DEVICES", "0"}, {"MODE", "ci"}, {"MODE", "preflight"}}));
  EXPECT_TRUE(command.workdir.empty());
  EXPECT_EQ(command.group, params.from);
}

TEST(KindRequests, AnIntegrationTestsFailFastFollowsTheRunnersPolicy) {
  ProbeRequest request;
  auto preflight = integration("configs/kunlunxin.yml", "xpu-smi");
  ASSERT_EQ(runner_failure_policy(preflight.entry), "fail-fast");
  kinds::request_integration_test(check_with_id("devices"), preflight, request);

  auto functional = integration("configs/kunlunxin.yml", "pytest -q");
  functional.entry.name = "Unit tests";
  functional.entry.id = "";
  ASSERT_EQ(runner_failure_policy(functional.entry), "continue-after-failure");
  kinds::request_integration_test(check_with_id("unit-tests"), functional, request);

  auto stated = integration("configs/kunlunxin.yml", "xpu-smi -q");
  stated.entry.failure_policy = "continue-after-failure";
  kinds::request_integration_test(check_with_id("smi"), stated, request);

  ASSERT_EQ(request.commands.size(), 3U);
  EXPECT_TRUE(request.commands[0].fail_fast);
  EXPECT_FALSE(request.commands[1].fail_fast);
  EXPECT_FALSE(request.commands[2].fail_fast);
}

// "ci/x.yml" and "./ci/x.yml" are one config, so one fail-fast group.
TEST(KindRequests, IntegrationTestsOfOneConfigShareAGroupHoweverItIsSpelt) {
  ProbeRequest request;
  kinds::request_integration_test(check_with_id("a"), integration("ci/x.yml", "true"), request);
  kinds::request_integration_test(check_with_id("b"), integration("./ci/x.yml", "true"), request);
  kinds::request_integration_test(check_with_id("c"), integration("ci/../ci/x.yml", "true"),
                                  request);
  kinds::request_integration_test(check_with_id("d"), integration("ci/y.yml", "true"), request);
  ASSERT_EQ(request.commands.size(), 4U);
  EXPECT_EQ(request.commands[1].group, request.commands[0].group);
  EXPECT_EQ(request.commands[2].group, request.commands[0].group);
  EXPECT_NE(request.commands[3].group, request.commands[0].group);
}

TEST(KindRequests, AnIntegrationTestThatNeedsACheckoutIsNotRunWithoutOne) {
  const std::string command = "bash tests/integration/ops/run.sh";
  ASSERT_FALSE(repository_paths(command).empty());

  ProbeRequest request;
  kinds::request_integration_test(check_with_id("ops"), integration("ci/x.yml", command), request);
  EXPECT_TRUE(request.commands.empty());

  // Its config could not be read from a checkout: not run, whatever it runs.
  auto unread = integration("ci/x.yml", "true");
  unread.needs_checkout = "ci/x.yml is in a checkout that is not configured";
  unread.workdir = "/srv/checkouts/flagos";
  kinds::request_integration_test(check_with_id("unread"), unread, request);
  EXPECT_TRUE(request.commands.empty());

  // With a checkout, the command runs there.
  auto checked_out = integration("ci/x.yml", command);
  checked_out.workdir = "/srv/checkouts/flagos";
  kinds::request_integration_test(check_with_id("ops"), checked_out, request);
  ASSERT_EQ(request.commands.size(), 1U);
  EXPECT_EQ(request.commands[0].workdir, checked_out.workdir);
  EXPECT_EQ(request.commands[0].run, command);
}

TEST(KindRequests, LibrariesPresentAndAbsentAreLookedUpOnceEach) {
  ProbeRequest request;
  request.add_library_name("libcuda.so");
  LibrariesParams params;
  params.present = {"libbkcl.so", "libxpurt.so"};
  params.absent = {"libcuda.so", "libtorch_cuda.so"};
  kinds::request_libraries(check_with_id("lib"), params, request);
  EXPECT_EQ(request.library_names, (std::vector<std::string>{"libcuda.so", "libbkcl.so",
                                                             "libxpurt.so", "libtorch_cuda.so"}));
}

TEST(KindRequests, FilesThatMustExistAndMustBeAbsentAreBothGlobbed) {
  ProbeRequest request;
  FilesParams params;
  params.exist = {"{site}/torch_fl", "{prefix}/lib/*.so"};
  params.absent = {"{prefix}/lib/*.so", "/opt/conda/lib/libcuda.so"};
  kinds::request_files(check_with_id("fil"), params, request);
  EXPECT_EQ(request.path_patterns, (std::vector<std::string>{"{site}/torch_fl", "{prefix}/lib/*.so",
                                                             "/opt/conda/lib/libcuda.so"}));
}

TEST(KindRequests, DeviceNodesAndToolsAreAskedForOnce) {
  ProbeRequest request;
  DeviceNodesParams nodes;
  nodes.glob = "/dev/xpu*";
  kinds::request_device_nodes(check_with_id("nod"), nodes, request);
  kinds::request_device_nodes(check_with_id("nod-2"), nodes, request);
  EXPECT_EQ(request.device_globs, std::vector<std::string>{nodes.glob});

  ToolsParams tools;
  tools.on_path = {"xpu-smi", "bash", "xpu-smi"};
  kinds::request_tools(check_with_id("too"), tools, request);
  EXPECT_EQ(request.tools, (std::vector<std::string>{"xpu-smi", "bash"}));
}

}  // namespace
}  // namespace envcontract::contracts
