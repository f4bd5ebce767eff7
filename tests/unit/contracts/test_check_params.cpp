// contracts/check_params.cpp: each check kind's parameters in the normalised
// JSON form `validate --print` shows and a check result's `expected`.
#include "contracts/check_params.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "common/json_text.hpp"

namespace envcontract::contracts {
namespace {

using Json = nlohmann::ordered_json;

// The keys of a JSON object, in the order they are shown.
std::vector<std::string> keys_of(const Json& json) {
  std::vector<std::string> keys;
  for (const auto& item : json.items()) {
    keys.push_back(item.key());
  }
  return keys;
}

// Every kind's default parameters, each normalised on its own.
template <std::size_t... Index>
std::vector<Json> every_default(std::index_sequence<Index...>) {
  return {to_json(CheckParams(std::in_place_index<Index>))...};
}

TEST(CheckParams, ModesAreNamedAsContractsSpellThem) {
  EXPECT_EQ(to_string(ActivationMode::activated), "activated");
  EXPECT_EQ(to_string(ActivationMode::bare), "bare");
  EXPECT_EQ(to_string(ToolkitRule::Mode::none), "none");
  EXPECT_EQ(to_string(ToolkitRule::Mode::required), "required");
  EXPECT_EQ(to_string(ToolkitRule::Mode::any), "any");
  EXPECT_EQ(to_string(ToolkitRule::Mode::exact), "exact");
}

TEST(CheckParams, EveryKindNormalisesToAnObjectEvenWithItsDefaults) {
  const auto all = every_default(std::make_index_sequence<std::variant_size_v<CheckParams>>());
  ASSERT_EQ(all.size(), std::variant_size_v<CheckParams>);
  for (std::size_t index = 0; index < all.size(); ++index) {
    EXPECT_TRUE(all[index].is_object())
        << "kind #" << index << ": " << common::json_text(all[index]);
    EXPECT_FALSE(all[index].empty()) << "kind #" << index;
  }
}

// "" means "not constrained": an unset string is left out, a list never is.
TEST(CheckParams, TorchShowsOnlyTheStringsItSetsButEveryList) {
  TorchParams params;
  const Json bare = to_json(params);
  for (const char* absent : {"version", "base", "local", "cuda", "hip"}) {
    EXPECT_FALSE(bare.contains(absent)) << absent;
  }
  for (const char* list :
       {"forbidden_paths", "forbidden_path_parts", "required_paths", "after_import"}) {
    ASSERT_TRUE(bare.contains(list)) << list;
    EXPECT_EQ(bare[list], Json::array()) << list;
  }

  params.base = "2.10.0";
  params.local = "cpu";
  params.forbidden_paths = {"/opt/conda/"};
  params.after_import = {"torch_fl", "flag_gems"};
  const Json set = to_json(params);
  EXPECT_FALSE(set.contains("version"));
  EXPECT_EQ(set["base"], params.base);
  EXPECT_EQ(set["local"], params.local);
  EXPECT_EQ(set["forbidden_paths"], Json(params.forbidden_paths));
  EXPECT_EQ(set["after_import"], Json(params.after_import));
}

TEST(CheckParams, AToolkitRuleShowsItsVersionOnlyWhenExact) {
  TorchParams params;
  params.cuda = ToolkitRule{ToolkitRule::Mode::exact, "12.9"};
  // A version left over in another mode is not part of the rule.
  params.hip = ToolkitRule{ToolkitRule::Mode::required, "6.2"};
  const Json json = to_json(params);
  EXPECT_EQ(json["cuda"], Json({{"mode", to_string(ToolkitRule::Mode::exact)}, {"value", "12.9"}}));
  EXPECT_EQ(json["hip"], Json({{"mode", to_string(ToolkitRule::Mode::required)}}));

  params.cuda = ToolkitRule{ToolkitRule::Mode::none, ""};
  EXPECT_EQ(to_json(params)["cuda"], Json({{"mode", to_string(ToolkitRule::Mode::none)}}));
}

TEST(CheckParams, TritonShowsAProviderVersionOnlyWhenPinned) {
  TritonParams params;
  params.backends = {"xpu"};
  const Json unpinned = to_json(params);
  EXPECT_FALSE(unpinned.contains("provider"));
  EXPECT_FALSE(unpinned.contains("provider_version"));
  EXPECT_FALSE(unpinned.contains("version_prefix"));
  EXPECT_EQ(unpinned["backends"], Json(params.backends));
  EXPECT_EQ(unpinned["forbid_distributions"], Json::array());

  params.provider = "flagtree";
  params.provider_version = {{">=", "0.7.0"}, {"<", "0.8"}};
  params.version_prefix = "3.6.";
  params.forbid_distributions = {"triton"};
  const Json pinned = to_json(params);
  EXPECT_EQ(pinned["provider"], params.provider);
  EXPECT_EQ(pinned["provider_version"], to_json(params.provider_version));
  EXPECT_EQ(pinned["version_prefix"], params.version_prefix);
  EXPECT_EQ(pinned["forbid_distributions"], Json(params.forbid_distributions));
}

TEST(CheckParams, PythonVersionIsItsSpecifierClauses) {
  PythonParams params;
  params.version = {{"==", "3.10.*"}};
  const Json json = to_json(params);
  EXPECT_EQ(json["version"], to_json(params.version));
  ASSERT_EQ(json["version"].size(), 1U);
  EXPECT_EQ(json["version"][0]["op"], "==");
  EXPECT_EQ(json["version"][0]["version"], "3.10.*");
}

// Named lists are shown in the contract's order, not sorted.
TEST(CheckParams, PinsAndVariablesKeepTheContractsOrder) {
  DistributionsParams pins;
  pins.pins = {{"transformers", {{">=", "4.51"}, {"<", "5"}}}, {"numpy", {{"<", "2"}}}};
  pins.absent = {"triton"};
  const Json pinned = to_json(pins);
  EXPECT_EQ(keys_of(pinned["pins"]), (std::vector<std::string>{"transformers", "numpy"}));
  EXPECT_EQ(pinned["pins"]["transformers"], to_json(pins.pins[0].second));
  EXPECT_EQ(pinned["pins"]["numpy"], to_json(pins.pins[1].second));
  EXPECT_EQ(pinned["absent"], Json(pins.absent));

  EnvironmentParams environment;
  environment.activation = ActivationMode::bare;
  environment.equals = {{"XPU_ROOT", "/usr/local/xpu"}, {"ASCEND_HOME", "/usr/local/Ascend"}};
  environment.unset = {"CUDA_HOME"};
  const Json variables = to_json(environment);
  EXPECT_EQ(variables["activation"], to_string(ActivationMode::bare));
  EXPECT_EQ(keys_of(variables["equals"]), (std::vector<std::string>{"XPU_ROOT", "ASCEND_HOME"}));
  EXPECT_EQ(variables["equals"]["XPU_ROOT"], "/usr/local/xpu");
  EXPECT_EQ(variables["set"], Json::array());
  EXPECT_EQ(variables["unset"], Json(environment.unset));
}

TEST(CheckParams, AnEmptyNamedListIsAnEmptyObject) {
  EXPECT_EQ(to_json(DistributionsParams{})["pins"], Json::object());
  EXPECT_EQ(to_json(EnvironmentParams{})["equals"], Json::object());
}

TEST(CheckParams, DurationsAreShownAsMilliseconds) {
  ImportsParams imports;
  imports.timeout = std::chrono::seconds(90);
  imports.ordered = false;
  imports.modules = {"torch_fl", "flag_gems"};
  const Json imported = to_json(imports);
  EXPECT_EQ(imported["timeout_ms"], 90'000);
  EXPECT_FALSE(imported.contains("timeout"));
  EXPECT_EQ(imported["ordered"], false);
  EXPECT_EQ(imported["modules"], Json(imports.modules));

  DevicesParams devices;
  devices.timeout = std::chrono::minutes(2);
  EXPECT_EQ(to_json(devices)["timeout_ms"], 120'000);

  SmokeParams smoke;
  smoke.timeout = std::chrono::milliseconds(1500);
  EXPECT_EQ(to_json(smoke)["timeout_ms"], 1500);

  CommandParams command;
  command.timeout = std::chrono::hours(1);
  EXPECT_EQ(to_json(command)["timeout_ms"], 3'600'000);

  IntegrationTestParams integration;
  integration.timeout = std::chrono::minutes(20);
  EXPECT_EQ(to_json(integration)["timeout_ms"], 1'200'000);
}

TEST(CheckParams, CountsAreShownAsTheirComparison) {
  DeviceNodesParams nodes;
  nodes.glob = "/dev/xpu*";
  nodes.count = Comparison{"==", 8};
  const Json node_json = to_json(nodes);
  EXPECT_EQ(node_json["glob"], nodes.glob);
  EXPECT_EQ(node_json["count"], nodes.count.to_json());

  DevicesParams devices;
  devices.expression = "torch_fl.flagos.device_count()";
  devices.imports = {"torch_fl"};
  const Json device_json = to_json(devices);
  EXPECT_EQ(device_json["expression"], devices.expression);
  EXPECT_EQ(device_json["imports"], Json(devices.imports));
  EXPECT_EQ(device_json["count"], devices.count.to_json());
}

TEST(CheckParams, AnOutputPatternIsShownOnlyWhenSet) {
  SmokeParams smoke;
  smoke.code = "print(1)";
  EXPECT_EQ(to_json(smoke)["code"], smoke.code);
  EXPECT_FALSE(to_json(smoke).contains("expect_output"));
  smoke.expect_output = "^1$";
  EXPECT_EQ(to_json(smoke)["expect_output"], smoke.expect_output);

  CommandParams command;
  command.run = "xpu-smi -L";
  command.expect_exit = 3;
  const Json bare = to_json(command);
  EXPECT_EQ(bare["run"], command.run);
  EXPECT_EQ(bare["expect_exit"], command.expect_exit);
  EXPECT_FALSE(bare.contains("expect_output"));
  command.expect_output = "GPU";
  EXPECT_EQ(to_json(command)["expect_output"], command.expect_output);
}

TEST(CheckParams, FileLibraryAndLinkageListsAreShownAsWritten) {
  FilesParams files;
  files.exist = {"{prefix}/lib/libxpurt.so.1"};
  files.absent = {"{site}/torch/lib/libtorch_cuda.so", "/opt/conda/lib/*.so"};
  EXPECT_EQ(to_json(files)["exist"], Json(files.exist));
  EXPECT_EQ(to_json(files)["absent"], Json(files.absent));

  LibrariesParams libraries;
  libraries.present = {"libbkcl.so"};
  EXPECT_EQ(to_json(libraries)["present"], Json(libraries.present));
  EXPECT_EQ(to_json(libraries)["absent"], Json::array());

  LinkageParams linkage;
  linkage.library = "{site}/torch_fl/lib/libtorch_fl.so";
  linkage.must_need = {"libc10.so"};
  linkage.transitive = false;
  const Json linked = to_json(linkage);
  EXPECT_EQ(linked["library"], linkage.library);
  EXPECT_EQ(linked["must_need"], Json(linkage.must_need));
  EXPECT_EQ(linked["must_not_need"], Json::array());
  EXPECT_EQ(linked["transitive"], false);
}

TEST(CheckParams, SearchPathToolsAndGlibcShowTheirValues) {
  SearchPathParams path;
  path.variable = "PATH";
  path.activation = ActivationMode::bare;
  path.starts_with = {"{prefix}/bin"};
  const Json path_json = to_json(path);
  EXPECT_EQ(path_json["variable"], path.variable);
  EXPECT_EQ(path_json["activation"], to_string(path.activation));
  EXPECT_EQ(path_json["starts_with"], Json(path.starts_with));
  EXPECT_EQ(path_json["must_not_contain"], Json::array());
  // The default variable is filled in.
  EXPECT_EQ(to_json(SearchPathParams{})["variable"], SearchPathParams{}.variable);

  ToolsParams tools;
  tools.on_path = {"xpu-smi", "bash"};
  EXPECT_EQ(to_json(tools)["on_path"], Json(tools.on_path));

  GlibcParams glibc;
  glibc.min_version = "2.38";
  EXPECT_EQ(to_json(glibc)["min_version"], glibc.min_version);
}

TEST(CheckParams, AnIntegrationEntryShowsItsRunnerEnvironmentAsIntegrationEnvironment) {
  IntegrationEntry entry;
  entry.name = "Check device availability";
  entry.id = "devices";
  entry.phase = "preflight";
  entry.failure_policy = "fail-fast";
  entry.command = "python -c 'import torch_fl'";
  entry.environment = {{"B", "2"}, {"A", "1"}};
  entry.runner_environment = {{"XPU_VISIBLE_DEVICES", "0"}};
  const Json json = to_json(entry);
  EXPECT_EQ(json["name"], entry.name);
  EXPECT_EQ(json["id"], entry.id);
  EXPECT_EQ(json["phase"], entry.phase);
  EXPECT_EQ(json["failure_policy"], entry.failure_policy);
  EXPECT_EQ(json["command"], entry.command);
  EXPECT_EQ(keys_of(json["environment"]), (std::vector<std::string>{"B", "A"}));
  EXPECT_EQ(json["integration_environment"], Json({{"XPU_VISIBLE_DEVICES", "0"}}));
  EXPECT_FALSE(json.contains("runner_environment"));
}

TEST(CheckParams, AnIntegrationTestShowsItsEntryAndItsCheckoutOnlyWhenSet) {
  IntegrationTestParams params;
  params.from = "configs/kunlunxin.yml";
  params.test = "devices";
  params.entry.name = "Check device availability";
  params.entry.command = "pytest -q";
  const Json without = to_json(params);
  EXPECT_EQ(without["from"], params.from);
  EXPECT_EQ(without["test"], params.test);
  EXPECT_EQ(without["entry"], to_json(params.entry));
  EXPECT_FALSE(without.contains("workdir"));
  EXPECT_FALSE(without.contains("needs_checkout"));

  params.workdir = "/srv/checkouts/flagos";
  params.needs_checkout = "configs/kunlunxin.yml is in a checkout that is not configured";
  const Json with = to_json(params);
  EXPECT_EQ(with["workdir"], params.workdir);
  EXPECT_EQ(with["needs_checkout"], params.needs_checkout);
}

}  // namespace
}  // namespace envcontract::contracts
