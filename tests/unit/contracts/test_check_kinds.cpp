// Every check kind of the registry: its keys parse into the normalised
// parameters `validate --print` shows, and its own bad values are reported.
#include "contracts/check_kind.hpp"

#include <gtest/gtest.h>

#include <set>

#include "contracts/yaml_document.hpp"
#include "tests/support/contract_text.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::contracts {
namespace {

using testing::joined;
using testing::load_checks;
using testing::messages;

// The check's parameters in the normalised form `validate --print` shows.
Json normalised(const Check& check) {
  return to_json(check.params);
}

// The one check of a contract that must be valid.
Check single_check(const std::string& yaml) {
  const auto result = load_checks(yaml);
  EXPECT_TRUE(result.contract.has_value()) << joined(result);
  if (!result.contract || result.contract->checks.size() != 1) {
    ADD_FAILURE() << "expected exactly one check";
    return {};
  }
  return result.contract->checks.front();
}

// The single error the text must produce.
std::string single_error(const std::string& yaml) {
  const auto result = load_checks(yaml);
  EXPECT_FALSE(result.contract.has_value());
  const auto lines = messages(result);
  EXPECT_EQ(lines.size(), 1U) << joined(result);
  return lines.empty() ? "" : lines.front();
}

TEST(CheckKinds, RegistryHasEveryKindOnce) {
  const auto names = check_kind_names();
  for (const char* expected :
       {"torch", "triton", "python", "distributions", "modules", "imports", "files", "libraries",
        "linkage", "device_nodes", "environment", "search_path", "tools", "glibc", "devices",
        "smoke", "command", "integration_test"}) {
    EXPECT_EQ(std::count(names.begin(), names.end(), expected), 1) << expected;
  }
  EXPECT_EQ(find_check_kind("nonsense"), nullptr);
}

// The traits code outside the registry asks instead of a kind's name agree
// with what each kind gathers: only a kind of the import stage stands for
// an import failure, only a kind that imports (devices, smoke) can repeat
// one, and a kind runs env code when its stage does or it reads activation.
TEST(CheckKinds, TraitsAgreeWithWhatEachKindGathers) {
  int imports = 0;
  for (const auto& kind : check_kinds()) {
    SCOPED_TRACE(std::string(kind.name));
    if (kind.traits.is_import) {
      ++imports;
      EXPECT_EQ(kind.stage, ProbeStage::imports);
    }
    if (kind.traits.repeats_import_failure) {
      EXPECT_TRUE(kind.stage == ProbeStage::devices || kind.stage == ProbeStage::smoke);
    }
    if (kind.traits.reads_activation) {
      EXPECT_EQ(kind.stage, ProbeStage::static_files) << "every later stage runs env code anyway";
    }
    EXPECT_EQ(runs_env_code(kind),
              kind.stage != ProbeStage::static_files || kind.traits.reads_activation);
  }
  EXPECT_EQ(imports, 1);
  for (const char* activated : {"environment", "search_path", "tools", "libraries"}) {
    ASSERT_NE(find_check_kind(activated), nullptr);
    EXPECT_TRUE(runs_env_code(*find_check_kind(activated))) << activated;
  }
  for (const char* file_only : {"torch", "files", "linkage", "glibc", "distributions"}) {
    ASSERT_NE(find_check_kind(file_only), nullptr);
    EXPECT_FALSE(runs_env_code(*find_check_kind(file_only))) << file_only;
  }
  EXPECT_EQ(kind_traits("torch").plan_package, KindTraits::PlanPackage::torch);
  EXPECT_EQ(kind_traits("python").plan_package, KindTraits::PlanPackage::interpreter);
  // A kind this agent does not know (a report from a newer one) has the defaults.
  EXPECT_FALSE(kind_traits("from_a_newer_agent").is_import);
  EXPECT_EQ(kind_traits("from_a_newer_agent").plan_package, KindTraits::PlanPackage::from_evidence);
}

// Code outside the registry tells kinds apart by their parameters' type:
// each kind has a type of its own, so that is the kind.
TEST(CheckKinds, EachKindHasAParameterTypeOfItsOwn) {
  EXPECT_EQ(std::variant_size_v<CheckParams>, check_kinds().size());
  // What each parser returns, even for keys it refuses, is its kind's type:
  // no two kinds share one.
  std::set<std::size_t> types;
  for (const auto& kind : check_kinds()) {
    Diagnostics diagnostics;
    ParseContext ctx("kinds.yaml", diagnostics);
    const YAML::Node empty = YAML::Load("{}");
    MappingReader reader(empty, "a check", ctx);
    const CheckParams params = kind.parse(reader, KindContext{});
    EXPECT_TRUE(types.insert(params.index()).second)
        << kind.name << " returns the parameters of another kind";
  }
  const auto torch = single_check("- kind: torch\n  base: \"2.10.0\"");
  EXPECT_NE(torch.parameters_if<TorchParams>(), nullptr);
  EXPECT_EQ(torch.parameters_if<TritonParams>(), nullptr);
}

// What each check asks probes to gather comes from its registry entry: the
// agent has no list of kinds of its own.
TEST(CheckKinds, ProbeRequestsComeFromTheRegistry) {
  const auto result = load_checks(
      "- {id: imp, kind: imports, modules: [torch, torch_fl], timeout: 90s}\n"
      "- {id: late, kind: torch, base: '2.10.0', after_import: [torch_fl, flag_gems]}\n"
      "- {id: dev, kind: devices, expression: torch_fl.flagos.device_count(), count: '>= 1'}\n"
      "- {id: smk, kind: smoke, code: 'print(1)'}\n"
      "- {id: cmd, kind: command, run: 'xpu-smi'}\n"
      "- {id: fil, kind: files, exist: ['{site}/torch_fl'], absent: ['{prefix}/x']}\n"
      "- {id: lib, kind: libraries, present: [libbkcl.so], absent: [libcuda.so]}\n"
      "- {id: nod, kind: device_nodes, glob: /dev/xpu*}\n"
      "- {id: too, kind: tools, on_path: [xpu-smi]}\n"
      "- {id: py, kind: python, version: '>=3.10'}\n");
  ASSERT_TRUE(result.contract.has_value()) << joined(result);
  const auto request = probe_request(result.contract->checks);
  EXPECT_EQ(request.imports, (std::vector<std::string>{"torch", "torch_fl", "flag_gems"}));
  EXPECT_EQ(request.imports_timeout, std::chrono::seconds(90));
  EXPECT_TRUE(request.torch_after_imports);
  ASSERT_EQ(request.devices.size(), 1U);
  EXPECT_EQ(request.devices[0].id, "dev");
  EXPECT_EQ(request.devices[0].imports, std::vector<std::string>{"torch_fl"});
  ASSERT_EQ(request.smokes.size(), 1U);
  ASSERT_EQ(request.commands.size(), 1U);
  EXPECT_EQ(request.commands[0].run, "xpu-smi");
  EXPECT_EQ(request.path_patterns, (std::vector<std::string>{"{site}/torch_fl", "{prefix}/x"}));
  EXPECT_EQ(request.library_names, (std::vector<std::string>{"libbkcl.so", "libcuda.so"}));
  EXPECT_EQ(request.device_globs, std::vector<std::string>{"/dev/xpu*"});
  EXPECT_EQ(request.tools, std::vector<std::string>{"xpu-smi"});
  // Every kind run by the dynamic stages says what to run.
  for (const auto& kind : check_kinds()) {
    if (kind.stage != ProbeStage::static_files) {
      EXPECT_NE(kind.request, nullptr) << kind.name;
    }
  }
}

TEST(CheckKinds, TorchReadsIdentityRules) {
  const auto check = single_check(R"(- id: torch-cpu
  kind: torch
  base: "2.10.0"
  local: cpu
  cuda: none
  hip: any
  forbidden_paths: [/opt/conda/]
  required_paths: [/opt/venv/])");
  EXPECT_EQ(check.id, "torch-cpu");
  EXPECT_EQ(check.stage, ProbeStage::static_files);
  EXPECT_EQ(normalised(check)["base"], "2.10.0");
  EXPECT_EQ(normalised(check)["local"], "cpu");
  EXPECT_EQ(normalised(check)["cuda"], Json({{"mode", "none"}}));
  EXPECT_EQ(normalised(check)["hip"], Json({{"mode", "any"}}));
  EXPECT_EQ(normalised(check)["forbidden_paths"], Json({"/opt/conda/"}));
  EXPECT_EQ(normalised(check)["required_paths"], Json({"/opt/venv/"}));
}

// Debian's torch is 1.13.0a0, a nightly 2.10.0.dev20251101: PEP 440
// pre-releases and dev releases are versions wherever a version is.
TEST(CheckKinds, TorchVersionsArePep440PreReleasesToo) {
  EXPECT_EQ(normalised(single_check("- kind: torch\n  base: \"1.13.0a0\""))["base"], "1.13.0a0");
  EXPECT_EQ(normalised(single_check("- kind: torch\n  base: \"2.10.0.dev20251101\""))["base"],
            "2.10.0.dev20251101");
  EXPECT_EQ(
      normalised(single_check("- kind: torch\n  version: \"2.10.0.dev20251101+cpu\""))["version"],
      "2.10.0.dev20251101+cpu");
  EXPECT_EQ(single_error("- kind: torch\n  base: \"2.10.0+cpu\""),
            "contract.yaml:4:11: error: 'base' of 'torch' check must be a version such as "
            "'2.10.0', got '2.10.0+cpu'");
}

TEST(CheckKinds, TorchCudaNullMeansNoneAndVersionMeansExact) {
  EXPECT_EQ(normalised(single_check("- kind: torch\n  cuda: null"))["cuda"],
            Json({{"mode", "none"}}));
  EXPECT_EQ(normalised(single_check("- kind: torch\n  cuda: \"12.9\""))["cuda"],
            Json({{"mode", "exact"}, {"value", "12.9"}}));
}

TEST(CheckKinds, TorchAfterImportRunsInTheImportStage) {
  const auto check = single_check("- kind: torch\n  cuda: \"13.0\"\n  after_import: [torch_fl]");
  EXPECT_EQ(check.stage, ProbeStage::imports);
  EXPECT_EQ(normalised(check)["after_import"], Json({"torch_fl"}));
}

TEST(CheckKinds, TorchRejectsContradictions) {
  EXPECT_EQ(single_error("- kind: torch\n  local: cpu\n  cuda: \"12.9\""),
            "contract.yaml:5:11: error: a '+cpu' torch build has no CUDA, so 'cuda: 12.9' of "
            "'torch' check can never pass");
  EXPECT_EQ(single_error("- kind: torch\n  version: 2.10.0+cpu\n  base: \"2.9.0\""),
            "contract.yaml:5:11: error: 'base' 2.9.0 contradicts 'version' 2.10.0+cpu of 'torch' "
            "check");
  EXPECT_EQ(single_error("- kind: torch\n  cuda: maybe"),
            "contract.yaml:4:11: error: 'cuda' of 'torch' check must be none, required, any or a "
            "version such as '12.9', got 'maybe'");
  EXPECT_EQ(single_error("- kind: torch"),
            "contract.yaml:3:5: error: 'torch' check checks nothing: give at least one of "
            "'version', 'base', 'local', 'cuda', 'hip', 'forbidden_paths', 'forbidden_path_parts', "
            "'required_paths'");
}

TEST(CheckKinds, TritonDefaultsToForbiddingStockTritonForAVendorProvider) {
  const auto check = single_check(R"(- kind: triton
  provider: FlagTree
  provider_version: "==0.7.0"
  version_prefix: "3.6."
  backends: [xpu])");
  EXPECT_EQ(normalised(check)["provider"], "flagtree");
  EXPECT_EQ(normalised(check)["provider_version"],
            Json::parse(R"([{"op":"==","version":"0.7.0"}])"));
  EXPECT_EQ(normalised(check)["version_prefix"], "3.6.");
  EXPECT_EQ(normalised(check)["backends"], Json({"xpu"}));
  EXPECT_EQ(normalised(check)["forbid_distributions"], Json({"triton"}));
  EXPECT_EQ(single_error("- kind: triton\n  provider_version: \"0.7\""),
            "contract.yaml:4:23: error: 'provider_version' of 'triton' check needs 'provider': "
            "which distribution's version is pinned?");
}

TEST(CheckKinds, PythonVersionIsAPrefixOrSpecifier) {
  EXPECT_EQ(normalised(single_check("- kind: python\n  version: \"3.10\""))["version"],
            Json::parse(R"([{"op":"==","version":"3.10.*"}])"));
  EXPECT_EQ(
      normalised(single_check("- kind: python\n  version: \">=3.10,<3.13\""))["version"].size(),
      2U);
  EXPECT_EQ(single_error("- kind: python"),
            "contract.yaml:3:5: error: 'python' check is missing the required key 'version'");
}

TEST(CheckKinds, DistributionsReadPinsAndAbsences) {
  const auto check = single_check(R"(- kind: distributions
  pins: {numpy: "<2", Transformers: ">=4.51,<5"}
  absent: [Triton])");
  EXPECT_EQ(normalised(check)["pins"]["numpy"], Json::parse(R"([{"op":"<","version":"2"}])"));
  EXPECT_EQ(normalised(check)["pins"]["transformers"].size(), 2U);
  EXPECT_EQ(normalised(check)["absent"], Json({"triton"}));
  EXPECT_EQ(single_error("- kind: distributions\n  pins: {numpy: \"<two\"}"),
            "contract.yaml:4:19: error: pin of 'numpy' in 'distributions' check: 'two' is not a "
            "valid version in specifier '<two'");
  EXPECT_EQ(single_error("- kind: distributions\n  pins: {numpy: \"<2\"}\n  absent: [numpy]"),
            "contract.yaml:5:13: error: 'numpy' is both pinned and required absent in "
            "'distributions' check");
  EXPECT_EQ(single_error("- kind: distributions\n  pins: {Flag_Gems: \"<2\", flag-gems: \">1\"}"),
            "contract.yaml:4:29: error: 'flag-gems' is pinned twice in 'distributions' check (as "
            "flag-gems, names are compared normalised)");
}

// What judges and probe requests read: each kind's parameters as plain
// types, defaults filled in, no JSON keys to spell.
TEST(CheckKinds, ParametersAreTypedPerKind) {
  const auto torch = single_check("- kind: torch\n  base: \"2.10.0\"\n  cuda: \"12.9\"");
  const auto& torch_params = torch.parameters<TorchParams>();
  EXPECT_EQ(torch_params.base, "2.10.0");
  ASSERT_TRUE(torch_params.cuda.has_value());
  EXPECT_EQ(torch_params.cuda->mode, ToolkitRule::Mode::exact);
  EXPECT_EQ(torch_params.cuda->version, "12.9");
  EXPECT_FALSE(torch_params.hip.has_value());
  EXPECT_THROW((void)torch.parameters<TritonParams>(), std::bad_variant_access);

  const auto devices =
      single_check("- kind: devices\n  expression: torch_fl.flagos.device_count()");
  const auto& device_params = devices.parameters<DevicesParams>();
  EXPECT_EQ(device_params.imports, Strings{"torch_fl"});
  EXPECT_EQ(device_params.count.op, ">");
  EXPECT_EQ(device_params.count.value, 0);
  EXPECT_EQ(device_params.timeout, std::chrono::seconds(60));

  const auto pins = single_check("- kind: distributions\n  pins: {Flag_Gems: \"==3.0\"}");
  const auto& pin_list = pins.parameters<DistributionsParams>().pins;
  ASSERT_EQ(pin_list.size(), 1U);
  EXPECT_EQ(pin_list[0].first, "flag-gems");
  ASSERT_EQ(pin_list[0].second.size(), 1U);
  EXPECT_EQ(pin_list[0].second[0].op, "==");

  const auto path =
      single_check("- kind: search_path\n  activation: bare\n  starts_with: [/opt/x]");
  EXPECT_EQ(path.parameters<SearchPathParams>().activation, ActivationMode::bare);
  EXPECT_EQ(path.parameters<SearchPathParams>().variable, "LD_LIBRARY_PATH");
}

TEST(CheckKinds, ModulesArePresentOrAbsent) {
  const auto check =
      single_check("- kind: modules\n  present: [torch_fl]\n  absent: [torch_xmlir]");
  EXPECT_EQ(normalised(check)["present"], Json({"torch_fl"}));
  EXPECT_EQ(normalised(check)["absent"], Json({"torch_xmlir"}));
  EXPECT_EQ(single_error("- kind: modules\n  absent: [torch-xmlir]"),
            "contract.yaml:4:14: error: 'torch-xmlir' in 'absent' of 'modules' check is not a "
            "Python module name");
}

TEST(CheckKinds, ImportsKeepTheirOrderAndTimeout) {
  const auto check =
      single_check("- kind: imports\n  modules: [torch_fl, flag_gems, triton]\n  timeout: 90s");
  EXPECT_EQ(check.stage, ProbeStage::imports);
  EXPECT_EQ(normalised(check)["modules"], Json({"torch_fl", "flag_gems", "triton"}));
  EXPECT_EQ(normalised(check)["ordered"], true);
  EXPECT_EQ(normalised(check)["timeout_ms"], 90000);
  EXPECT_EQ(single_error("- kind: imports\n  modules: []"),
            "contract.yaml:4:14: error: 'modules' of 'imports' check is empty");
}

TEST(CheckKinds, FilesAreAnchoredPatterns) {
  const auto check = single_check(
      "- kind: files\n  exist: [\"{prefix}/lib/libxpurt.so.1\"]\n  absent: "
      "[\"{site}/torch/lib/libtorch_cuda.so\", /opt/conda/lib/*.so]");
  EXPECT_EQ(normalised(check)["exist"], Json({"{prefix}/lib/libxpurt.so.1"}));
  EXPECT_EQ(normalised(check)["absent"].size(), 2U);
  EXPECT_EQ(single_error("- kind: files\n  absent: [\"{sites}/torch/lib/libtorch_cuda.so\"]"),
            "contract.yaml:4:14: error: path '{sites}/torch/lib/libtorch_cuda.so' in 'absent' of "
            "'files' check must start with {prefix}, {site} or / (did you mean '{site}'?)");
}

TEST(CheckKinds, LibrariesAreFileNames) {
  const auto check =
      single_check("- kind: libraries\n  present: [libbkcl.so]\n  absent: [libcuda.so.1]");
  EXPECT_EQ(normalised(check)["present"], Json({"libbkcl.so"}));
  EXPECT_EQ(single_error("- kind: libraries\n  present: [lib/libbkcl.so]"),
            "contract.yaml:4:15: error: 'lib/libbkcl.so' in 'present' of 'libraries' check is not "
            "a library file name such as 'libbkcl.so'");
}

TEST(CheckKinds, LinkageIsTransitiveByDefault) {
  const auto check = single_check(
      "- kind: linkage\n  library: \"{site}/torch_fl/lib/libtorch_fl.so\"\n  must_not_need: "
      "[libtorch_cuda.so]");
  EXPECT_EQ(normalised(check)["library"], "{site}/torch_fl/lib/libtorch_fl.so");
  EXPECT_EQ(normalised(check)["must_not_need"], Json({"libtorch_cuda.so"}));
  EXPECT_EQ(normalised(check)["transitive"], true);
  EXPECT_EQ(single_error("- kind: linkage\n  library: torch_fl/lib/libtorch_fl.so\n  must_need: "
                         "[libc10.so]"),
            "contract.yaml:4:14: error: 'library' of 'linkage' check "
            "('torch_fl/lib/libtorch_fl.so') must start with {prefix}, {site} or /");
}

TEST(CheckKinds, DeviceNodesCountDefaultsToAtLeastOne) {
  const auto check = single_check("- kind: device_nodes\n  glob: /dev/davinci*");
  EXPECT_EQ(normalised(check)["glob"], "/dev/davinci*");
  EXPECT_EQ(normalised(check)["count"], Json({{"op", ">="}, {"value", 1}}));
  EXPECT_EQ(single_error("- kind: device_nodes\n  glob: /sys/davinci*"),
            "contract.yaml:4:11: error: 'glob' of 'device_nodes' check must be a path under "
            "/dev/, got '/sys/davinci*'");
}

TEST(CheckKinds, EnvironmentReadsEqualsSetUnset) {
  const auto check = single_check(R"(- kind: environment
  equals: {XPU_ROOT: /usr/local/xpu}
  set: [XPU_ENABLE_PROFILER_TRACING]
  unset: [XPU_CUPTI_ENABLE_DEVICE])");
  EXPECT_EQ(normalised(check)["activation"], "activated");
  EXPECT_EQ(normalised(check)["equals"]["XPU_ROOT"], "/usr/local/xpu");
  EXPECT_EQ(normalised(check)["set"], Json({"XPU_ENABLE_PROFILER_TRACING"}));
  EXPECT_EQ(normalised(check)["unset"], Json({"XPU_CUPTI_ENABLE_DEVICE"}));
  EXPECT_EQ(single_error("- kind: environment\n  set: [CUDA_HOME]\n  unset: [CUDA_HOME]"),
            "contract.yaml:5:12: error: variable CUDA_HOME must be both set and unset in "
            "'environment' check");
}

TEST(CheckKinds, SearchPathDefaultsToLdLibraryPath) {
  const auto check = single_check(
      "- kind: search_path\n  starts_with: [\"${ASCEND_HOME}/lib64\", \"{prefix}/lib\"]\n  "
      "must_not_contain: [/opt/conda]");
  EXPECT_EQ(normalised(check)["variable"], "LD_LIBRARY_PATH");
  EXPECT_EQ(normalised(check)["starts_with"], Json({"${ASCEND_HOME}/lib64", "{prefix}/lib"}));
  EXPECT_EQ(normalised(check)["must_not_contain"], Json({"/opt/conda"}));
  EXPECT_EQ(single_error("- kind: search_path\n  starts_with: [lib64]"),
            "contract.yaml:4:19: error: 'lib64' in 'starts_with' of 'search_path' check is not an "
            "absolute directory (or one starting {prefix}, {site} or ${VARIABLE})");
}

TEST(CheckKinds, ToolsAndGlibc) {
  EXPECT_EQ(normalised(single_check("- kind: tools\n  on_path: [xpu-smi]"))["on_path"],
            Json({"xpu-smi"}));
  EXPECT_EQ(normalised(single_check("- kind: glibc\n  min_version: \"2.38\""))["min_version"],
            "2.38");
  EXPECT_EQ(single_error("- kind: glibc\n  min_version: \"2\""),
            "contract.yaml:4:18: error: 'min_version' of 'glibc' check must be a glibc version "
            "such as '2.38', got '2'");
}

TEST(CheckKinds, DevicesImportTheExpressionsModuleByDefault) {
  const auto check = single_check(
      "- kind: devices\n  expression: torch_fl.flagos.device_count()\n  count: \">= 8\"");
  EXPECT_EQ(check.stage, ProbeStage::devices);
  EXPECT_EQ(normalised(check)["imports"], Json({"torch_fl"}));
  EXPECT_EQ(normalised(check)["count"], Json({{"op", ">="}, {"value", 8}}));
  EXPECT_EQ(normalised(check)["timeout_ms"], 60000);
  EXPECT_EQ(single_error("- kind: devices\n  expression: torch.cuda.device_count()\n  count: "
                         "\"<= 8\""),
            "contract.yaml:5:12: error: 'count' of 'devices' check: only '==', '>=' and '>' "
            "compare counts here; got '<= 8'");
}

TEST(CheckKinds, SmokeHasCodeTimeoutAndOutputPattern) {
  const auto check = single_check(
      "- kind: smoke\n  code: |\n    import torch\n    print(torch.ones(2).sum())\n  timeout: "
      "45s\n  expect_output: \"tensor\\\\(2\\\\.\"");
  EXPECT_EQ(check.stage, ProbeStage::smoke);
  EXPECT_EQ(normalised(check)["code"], "import torch\nprint(torch.ones(2).sum())\n");
  EXPECT_EQ(normalised(check)["timeout_ms"], 45000);
  EXPECT_EQ(normalised(check)["expect_output"], "tensor\\(2\\.");
  EXPECT_EQ(single_error("- kind: smoke\n  code: x\n  expect_output: \"(unclosed\""),
            "contract.yaml:5:20: error: 'expect_output' of 'smoke' check is not a pattern "
            "envcontract can match: RE2 refuses it (missing ): (unclosed); the syntax is RE2's "
            "(https://github.com/google/re2/wiki/Syntax), close to Python's re without "
            "backreferences and lookaround");
}

TEST(CheckKinds, CommandHasExitCodeAndTimeout) {
  const auto check = single_check("- kind: command\n  run: xpu-smi -L\n  expect_exit: 0");
  EXPECT_EQ(normalised(check)["run"], "xpu-smi -L");
  EXPECT_EQ(normalised(check)["expect_exit"], 0);
  EXPECT_EQ(normalised(check)["timeout_ms"], 300000);
  EXPECT_EQ(single_error("- kind: command\n  run: \"true\"\n  expect_exit: 300"),
            "contract.yaml:5:18: error: 'expect_exit' of 'command' check must be between 0 and "
            "255, got 300");
}

TEST(CheckKinds, IntegrationTestSelectsAPlatformConfigEntryByNameOrId) {
  testing::TempDir dir;
  dir.write("configs/kunlunxin.yml", R"(ci_image: img:1
integration_tests:
  - name: Check device availability
    id: devices
    phase: preflight
    command: "python - <<'PY'\nimport torch_fl\nassert torch_fl.flagos.device_count() > 0\nPY"
  - name: Unit tests
    command: pytest -q
)");
  const auto contract = dir.write("contract.yaml", R"(schema_version: 1
checks:
  - kind: integration_test
    from: configs/kunlunxin.yml
    test: devices
  - kind: integration_test
    from: configs/kunlunxin.yml
    test: Unit tests
    timeout: 20m
)");
  const auto result = load_contract_file(contract);
  ASSERT_TRUE(result.contract) << joined(result);
  const auto& checks = result.contract->checks;
  ASSERT_EQ(checks.size(), 2U);
  EXPECT_EQ(checks[0].id, "integration_test");
  EXPECT_EQ(checks[1].id, "integration_test-2");
  EXPECT_EQ(normalised(checks[0])["entry"]["name"], "Check device availability");
  EXPECT_NE(normalised(checks[0])["entry"]["command"].get<std::string>().find("device_count"),
            std::string::npos);
  EXPECT_EQ(normalised(checks[1])["entry"]["command"], "pytest -q");
  EXPECT_EQ(normalised(checks[1])["timeout_ms"], 20 * 60 * 1000);

  dir.write("bad.yaml",
            "schema_version: 1\nchecks:\n  - kind: integration_test\n    from: "
            "configs/kunlunxin.yml\n    test: device\n");
  const auto bad = load_contract_file(dir.path() / "bad.yaml");
  ASSERT_EQ(messages(bad).size(), 1U) << joined(bad);
  EXPECT_EQ(messages(bad)[0],
            (dir.path() / "bad.yaml").string() +
                ":5:11: error: no integration test with id or name 'device' in " +
                (dir.path() / "configs/kunlunxin.yml").string() +
                " (did you mean 'devices'?); it has 'devices', 'Check device availability', "
                "'Unit tests'");
}

TEST(CheckKinds, CommonKeysIdSeverityDescription) {
  const auto check = single_check(
      "- id: smi\n  kind: tools\n  severity: advisory\n  description: xpu-smi helps operators\n  "
      "on_path: [xpu-smi]");
  EXPECT_EQ(check.id, "smi");
  EXPECT_EQ(check.severity, Severity::advisory);
  EXPECT_EQ(check.description, "xpu-smi helps operators");
  EXPECT_EQ(check.section, "checks");
  EXPECT_EQ(check.origin.to_string(), "contract.yaml:3:5");
  EXPECT_EQ(single_error("- kind: tools\n  severity: optional\n  on_path: [x]"),
            "contract.yaml:4:15: error: 'severity' of 'tools' check must be 'required' or "
            "'advisory', got 'optional'");
}

}  // namespace
}  // namespace envcontract::contracts
