// Plans made of a real scan of the demo host: for each env, the steps that
// answer what tests/fixtures/README.md says is wrong with it, each naming the
// checks it fixes; with the contract's recipe and without one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "common/json_text.hpp"
#include "contracts/contract_loader.hpp"
#include "provisioning/plan.hpp"
#include "report/report_json.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/report_schema.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::provisioning {
namespace {

using testing::demo_host;

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The demo host's contract with its recipe, its first device op given 6 s.
std::filesystem::path quick_provision_contract(const testing::TempDir& dir) {
  std::string text = read_file(demo_host() / "kunlunxin-provision.yaml");
  text = std::regex_replace(text, std::regex("timeout: 20s"), "timeout: 6s");
  return dir.write("kunlunxin-provision.yaml", text);
}

// The report of one scan of the demo host, kept beside it for this ctest
// run (ctest runs each test in a process of its own; one scan serves all).
std::string cached_scan(const std::filesystem::path& contract) {
  namespace fs = std::filesystem;
  const fs::path cache =
      demo_host().parent_path() / (demo_host().filename().string() + ".provision-report.json");
  std::error_code error;
  const auto built = fs::last_write_time(demo_host() / "kunlunxin-provision.yaml", error);
  if (!error && fs::exists(cache) && fs::last_write_time(cache, error) >= built) {
    return read_file(cache);
  }
  const auto scan = testing::run_command(
      {ENVCONTRACTD_PATH, "scan", "--contract", contract.string(), "--root", demo_host().string(),
       "--image-tag-file", (demo_host() / "etc/flagos-image").string(), "-o", "json"});
  const auto report = Json::parse(scan.out, nullptr, false);
  if (report.is_object() && report.contains("envs")) {
    const fs::path temporary = cache.string() + "." + std::to_string(::getpid());
    std::ofstream(temporary) << scan.out;
    fs::rename(temporary, cache, error);  // atomic: a parallel test reads all or nothing
  }
  return scan.out;
}

class DemoHostPlans : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(demo_host() / "kunlunxin-provision.yaml")) {
      s_skip = "the demo host has no wheelhouse (python3-setuptools, python3-wheel)";
      return;
    }
    s_dir = new testing::TempDir();
    const auto contract = quick_provision_contract(*s_dir);
    try {
      s_report = new Json(Json::parse(cached_scan(contract), nullptr, false));
    } catch (const std::exception& e) {
      s_problem = std::string("the scan did not run: ") + e.what();
      return;
    }
    auto with = contracts::load_contract_file(contract);
    if (!with.contract) {
      s_problem = "the demo host's kunlunxin-provision.yaml does not load";
      return;
    }
    s_with_recipe = new contracts::Contract(*with.contract);
    s_without_recipe = new contracts::Contract(*with.contract);
    s_without_recipe->provision.reset();
  }

  void SetUp() override {
    if (!s_skip.empty()) {
      GTEST_SKIP() << s_skip;
    }
    ASSERT_EQ(s_problem, "");
    ASSERT_TRUE(s_report != nullptr && s_report->is_object() && s_report->contains("envs"))
        << "the scan of the demo host printed no report";
  }

  static EnvPlan plan_of(const std::string& env, bool recipe = true) {
    const auto plan = build_plan(report::report_from_json(*s_report),
                                 recipe ? *s_with_recipe : *s_without_recipe, env);
    EXPECT_EQ(plan.envs.size(), 1U) << env;
    return plan.envs.empty() ? EnvPlan{} : plan.envs[0];
  }

  static const PlanStep* step(const EnvPlan& plan, StepAction action, const std::string& target) {
    for (const auto& candidate : plan.steps) {
      if (candidate.action == action && (target.empty() || candidate.target == target)) {
        return &candidate;
      }
    }
    return nullptr;
  }

  static bool fixes(const PlanStep* step, const std::string& check) {
    return step != nullptr &&
           std::find(step->fixes.begin(), step->fixes.end(), check) != step->fixes.end();
  }

  static std::vector<std::string> actions(const EnvPlan& plan) {
    std::vector<std::string> names;
    for (const auto& candidate : plan.steps) {
      names.push_back(to_string(candidate.action) + " " + candidate.target);
    }
    return names;
  }

  static inline std::string s_skip;
  static inline std::string s_problem;
  static inline testing::TempDir* s_dir = nullptr;
  static inline Json* s_report = nullptr;
  static inline contracts::Contract* s_with_recipe = nullptr;
  static inline contracts::Contract* s_without_recipe = nullptr;
};

TEST_F(DemoHostPlans, TheIncidentEnvIsRebuiltFreshAndEachStepNamesWhatItFixes) {
  const auto plan = plan_of("torch-fl-hf-test");
  EXPECT_TRUE(plan.fresh_env);
  EXPECT_NE(plan.fresh_env_why.find("torch itself is replaced"), std::string::npos);
  // Removals first, torch before what is built on it.
  EXPECT_EQ(actions(plan), (std::vector<std::string>{"remove_distribution torch_xmlir",
                                                     "install_distribution torch",
                                                     "install_distribution torch_fl"}));
  const auto* torch = step(plan, StepAction::install_distribution, "torch");
  ASSERT_NE(torch, nullptr);
  EXPECT_EQ(torch->value, "torch==2.10.0+cpu");
  EXPECT_TRUE(fixes(torch, "torch-cpu-build"));
  EXPECT_TRUE(fixes(torch, "no-libtorch-cuda"));  // libtorch_cuda.so goes with the CUDA torch
  EXPECT_NE(torch->command.find("pip install --no-index --find-links"), std::string::npos);
  EXPECT_TRUE(fixes(step(plan, StepAction::remove_distribution, "torch_xmlir"), "no-torch-xmlir"));
  // libbkcl.so is needed by torch_fl's build: the recipe's build replaces it.
  const auto* torch_fl = step(plan, StepAction::install_distribution, "torch_fl");
  ASSERT_NE(torch_fl, nullptr) << common::json_text(to_json(plan), 2);
  EXPECT_TRUE(fixes(torch_fl, "import-order"));
  EXPECT_NE(torch_fl->command.find("--force-reinstall"), std::string::npos);
  EXPECT_NE(torch_fl->why.find("libbkcl.so"), std::string::npos);
  // The device and smoke checks wait for import-order.
  ASSERT_EQ(plan.unplanned.size(), 2U);
  EXPECT_EQ(plan.unplanned[0].cause, "blocked");
  EXPECT_EQ(plan.unplanned[0].why, "runs once import-order passes");
}

TEST_F(DemoHostPlans, WithoutARecipeWhatOnlyTheVendorCanSupplyIsManual) {
  const auto plan = plan_of("torch-fl-hf-test", false);
  const auto* manual = step(plan, StepAction::manual, "");
  ASSERT_NE(manual, nullptr) << common::json_text(to_json(plan), 2);
  EXPECT_TRUE(fixes(manual, "import-order"));
  EXPECT_NE(manual->ask.find("build of torch_fl"), std::string::npos) << manual->ask;
  EXPECT_TRUE(manual->command.empty());
  const auto* torch = step(plan, StepAction::install_distribution, "torch");
  ASSERT_NE(torch, nullptr);
  EXPECT_EQ(torch->value, "torch==2.10.0+cpu");
  EXPECT_EQ(torch->command.find("--no-index"), std::string::npos);
}

TEST_F(DemoHostPlans, StockTritonIsRemovedThenFlagTreeInstalled) {
  const auto plan = plan_of("torch-fl-xpu-py310");
  const auto* removal = step(plan, StepAction::remove_distribution, "triton");
  const auto* flagtree = step(plan, StepAction::install_distribution, "flagtree");
  ASSERT_NE(removal, nullptr);
  ASSERT_NE(flagtree, nullptr);
  EXPECT_LT(removal, flagtree);
  EXPECT_EQ(flagtree->value, "flagtree==0.7.0");
  EXPECT_TRUE(fixes(removal, "flagtree-xpu"));
  EXPECT_TRUE(fixes(flagtree, "flagtree-xpu"));
}

TEST_F(DemoHostPlans, DevicesAndHangsAreAskedForNotInstalled) {
  const auto looks_healthy = plan_of("torch-fl-xpu-py311");
  const auto* devices = step(looks_healthy, StepAction::manual, "");
  ASSERT_NE(devices, nullptr);
  EXPECT_TRUE(fixes(devices, "flagos-devices"));
  EXPECT_NE(devices->ask.find("device nodes"), std::string::npos);

  const auto hangs = plan_of("torch-fl-cpu");
  EXPECT_FALSE(hangs.fresh_env);  // a new env would hang the same way
  ASSERT_EQ(hangs.steps.size(), 1U) << common::json_text(to_json(hangs));
  EXPECT_EQ(hangs.steps[0].action, StepAction::manual);
  EXPECT_TRUE(fixes(&hangs.steps[0], "first-device-op"));
  EXPECT_NE(hangs.steps[0].why.find("xpu_wait"), std::string::npos);
}

TEST_F(DemoHostPlans, TheGenericFlagTreeIsReplacedByTheRecipesBuild) {
  const auto plan = plan_of("torch-fl-activate");
  const auto* flagtree = step(plan, StepAction::install_distribution, "flagtree");
  ASSERT_NE(flagtree, nullptr);
  EXPECT_NE(flagtree->command.find("--force-reinstall"), std::string::npos);
  EXPECT_TRUE(fixes(flagtree, "flagtree-xpu"));
  const auto bare = plan_of("torch-fl-activate", false);
  const auto* manual = step(bare, StepAction::manual, "");
  ASSERT_NE(manual, nullptr);
  EXPECT_EQ(manual->fixes, (std::vector<std::string>{"flagtree-xpu"}));
}

TEST_F(DemoHostPlans, AVenvWithoutActivationGetsTheRecipesVariables) {
  const auto plan = plan_of("xpu210v");
  const auto* xpu_root = step(plan, StepAction::set_variable, "XPU_ROOT");
  ASSERT_NE(xpu_root, nullptr) << common::json_text(to_json(plan), 2);
  EXPECT_EQ(xpu_root->value, (demo_host() / "usr/local/xpu").string());
  EXPECT_NE(xpu_root->command.find("xpu210v/bin/activate"), std::string::npos);
  EXPECT_TRUE(fixes(xpu_root, "vendor-first-library-path"));
  // Without the recipe nobody knows XPU_ROOT's value: asked for.
  const auto bare = plan_of("xpu210v", false);
  EXPECT_EQ(step(bare, StepAction::set_variable, "XPU_ROOT"), nullptr);
  EXPECT_NE(step(bare, StepAction::manual, ""), nullptr);
}

TEST_F(DemoHostPlans, ABareCondaBaseGetsTheContractsTorchBuild) {
  const auto plan = plan_of("base");
  const auto* torch = step(plan, StepAction::install_distribution, "torch");
  ASSERT_NE(torch, nullptr);
  EXPECT_EQ(torch->value, "torch==2.10.0+cpu");
  EXPECT_TRUE(fixes(torch, "torch-cpu-build"));
  EXPECT_TRUE(fixes(torch, "import-order"));  // No module named 'torch'
  // A conda env's activation is conda's: activate.d, with the recipe's value.
  const auto* xpu_root = step(plan, StepAction::set_variable, "XPU_ROOT");
  ASSERT_NE(xpu_root, nullptr);
  EXPECT_NE(xpu_root->command.find("miniconda3/etc/conda/activate.d/envcontract.sh"),
            std::string::npos);
}

TEST_F(DemoHostPlans, TheHostsImageIsAManualHostStep) {
  const auto plan = build_plan(report::report_from_json(*s_report), *s_with_recipe);
  ASSERT_EQ(plan.host_steps.size(), 1U);
  EXPECT_EQ(plan.host_steps[0].action, StepAction::manual);
  EXPECT_NE(plan.host_steps[0].ask.find(":2.2.0"), std::string::npos);
  EXPECT_EQ(plan.host_steps[0].fixes, (std::vector<std::string>{"target:ci"}));
  EXPECT_EQ(plan.envs.size(), 8U);  // no env of the demo host complies
  EXPECT_TRUE(plan.recipe);
  const auto text = render_plan(plan);
  EXPECT_NE(text.find("torch-fl-hf-test (drift, "), std::string::npos);
  EXPECT_NE(text.find("     fixes: torch-cpu-build, no-libtorch-cuda"), std::string::npos);
}

TEST_F(DemoHostPlans, ThePlanIsValidAgainstItsSchema) {
  const auto violations = testing::schema_violations(
      to_json(build_plan(report::report_from_json(*s_report), *s_with_recipe)), "plan.schema.json");
  if (!violations) {
    GTEST_SKIP() << "python3-jsonschema is not installed (scripts/test installs it)";
  }
  EXPECT_EQ(*violations, "");
}

// Reports the agent did not write (an older schema, a hand-made one): no
// exception, no plan for an entry without a name or prefix, and a waived
// check is accepted, not planned.
TEST(PlanInput, OddReportsGiveNoExceptionAndNoBogusSteps) {
  contracts::Contract contract;
  contract.name = "c";
  const auto plan = build_plan(report::report_from_json(Json::parse(R"({
    "host": "h",
    "targets": "not a list",
    "envs": [null, 3, "x", {"name": "no-prefix", "verdict": "drift", "checks": []},
      {"name": "e", "prefix": "/srv/e", "verdict": "drift", "kind": "venv", "checks": [
        7, {"id": "w", "kind": "torch", "status": "waived",
            "diagnosis": {"cause": "cuda_build", "summary": "CUDA build, waived until 2026-12-31"},
            "expected": {"base": "2.10.0", "cuda": {"mode": "none"}}},
        {"id": "s", "kind": "search_path", "status": "fail",
         "expected": {"variable": "LD_LIBRARY_PATH", "starts_with": [3, null, "/opt/x/lib"]},
         "diagnosis": {"cause": "search_path_mismatch", "summary": "LD_LIBRARY_PATH does not start with /opt/x/lib",
                       "evidence": {"variable": "LD_LIBRARY_PATH"}}},
        {"id": "u", "status": "fail", "diagnosis": {"cause": "something_new", "summary": "?"}}]}]})")),
                               contract);
  ASSERT_EQ(plan.envs.size(), 1U);
  const auto& env = plan.envs[0];
  EXPECT_EQ(env.env, "e");
  EXPECT_FALSE(env.fresh_env);  // the waived CUDA build is not acted on
  ASSERT_EQ(env.steps.size(), 1U) << common::json_text(to_json(env), 2);
  EXPECT_EQ(env.steps[0].action, StepAction::set_variable);
  EXPECT_EQ(env.steps[0].value, "/opt/x/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}");
  ASSERT_EQ(env.unplanned.size(), 2U);
  EXPECT_EQ(env.unplanned[0].cause, "waived");
  EXPECT_EQ(env.unplanned[1].why, "no plan for this cause (docs/provisioning.md): ?");
}

// Every cause of the report's vocabulary (docs/contracts.md's table) is
// planned or said not to be, and docs/provisioning.md lists it.
TEST(PlanCauses, EveryCauseOfTheReportIsPlannedOrSaidNotToBe) {
  const std::string contracts_doc = read_file(ENVCONTRACT_SOURCE_DIR "/docs/contracts.md");
  const std::string provisioning_doc = read_file(ENVCONTRACT_SOURCE_DIR "/docs/provisioning.md");
  const auto table_start = contracts_doc.find("| cause | from | example summary |");
  ASSERT_NE(table_start, std::string::npos);
  const auto table_end = contracts_doc.find("\n\n", table_start);
  std::set<std::string> causes;
  std::istringstream lines(contracts_doc.substr(table_start, table_end - table_start));
  std::string line;
  const std::regex code("`([a-z_]+)`");
  while (std::getline(lines, line)) {
    const auto second_bar = line.find('|', 1);
    const std::string first_cell = line.substr(0, second_bar);
    for (auto it = std::sregex_iterator(first_cell.begin(), first_cell.end(), code);
         it != std::sregex_iterator(); ++it) {
      causes.insert((*it)[1]);
    }
  }
  ASSERT_GT(causes.size(), 30U);
  std::set<std::string> planned;
  for (const auto& entry : cause_planning()) {
    planned.insert(entry.cause);
    EXPECT_NE(provisioning_doc.find("| `" + entry.cause + "` |"), std::string::npos)
        << entry.cause << " is not in docs/provisioning.md's table";
  }
  for (const auto& cause : causes) {
    EXPECT_TRUE(planned.count(cause) == 1) << cause << " has no entry in cause_planning()";
  }
}

}  // namespace
}  // namespace envcontract::provisioning
