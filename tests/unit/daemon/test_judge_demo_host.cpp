// The judge over the demo host's real facts (static, activation, linkage and
// dynamic): every env's verdict and distinct reasons, as the demo host's
// README lists them. One test, so the host is probed once; another reads
// its facts (without probing) two ways.
#include <gtest/gtest.h>

#include <map>

#include "contracts/contract_loader.hpp"
#include "contracts/judgement.hpp"
#include "daemon/probe_plan.hpp"
#include "probes/host_facts.hpp"
#include "tests/support/contract_text.hpp"
#include "tests/support/demo_host.hpp"

namespace envcontract {
namespace {

using contracts::CheckStatus;
using contracts::EnvVerdict;
using testing::demo_host;

const contracts::CheckResult& check(const contracts::EnvJudgement& judgement,
                                    const std::string& id) {
  for (const auto& result : judgement.checks) {
    if (result.id == id) {
      return result;
    }
  }
  static const contracts::CheckResult missing;
  ADD_FAILURE() << "no check " << id;
  return missing;
}

std::string cause(const contracts::EnvJudgement& judgement, const std::string& id) {
  const auto& result = check(judgement, id);
  return result.diagnosis ? result.diagnosis->cause : "";
}

std::string summary(const contracts::EnvJudgement& judgement, const std::string& id) {
  const auto& result = check(judgement, id);
  return result.diagnosis ? result.diagnosis->summary : "";
}

TEST(JudgeDemoHost, EveryEnvDriftsForItsOwnReasons) {
  auto loaded = contracts::load_contract_file(ENVCONTRACT_SOURCE_DIR
                                              "/tests/fixtures/demo_host/kunlunxin-demo.yaml");
  ASSERT_TRUE(loaded.contract) << testing::joined(loaded);
  auto contract = *loaded.contract;
  for (auto& c : contract.checks) {
    if (c.kind == "smoke") {
      // The hang is the point, not the wait; long enough for a loaded machine
      // (sanitizers, parallel tests) to reach the spin before the sample.
      std::get<contracts::SmokeParams>(c.params).timeout = std::chrono::seconds(6);
    }
  }
  const auto plan = daemon::plan_from_contract(&contract);
  probes::HostFactsOptions options;
  options.discovery.roots = {demo_host()};
  options.request = plan;  // what the contract's files, tools, libraries checks look for
  auto host = probes::gather_host_facts(options, std::make_shared<probes::FactCaches>());

  std::map<std::string, contracts::EnvJudgement> judged;
  for (auto& env : host.envs) {
    env.dynamic = probes::probe_env(env.env, env.activation, plan);
    judged[env.env.name] = contracts::judge_env(contract, env);
  }
  for (const auto& [name, judgement] : judged) {
    EXPECT_EQ(judgement.verdict, EnvVerdict::drift) << name;
  }

  const auto& hf = judged.at("torch-fl-hf-test");
  EXPECT_EQ(cause(hf, "torch-cpu-build"), "cuda_build");
  EXPECT_EQ(summary(hf, "torch-cpu-build"),
            "CUDA build of torch (2.10.0+cu129, torch.version.cuda == '12.9') where the contract "
            "requires a CPU build");
  EXPECT_EQ(cause(hf, "no-libtorch-cuda"), "forbidden_file");
  EXPECT_EQ(cause(hf, "no-torch-xmlir"), "forbidden_package");
  const auto& xmlir_notes = check(hf, "no-torch-xmlir").notes;
  ASSERT_EQ(xmlir_notes.size(), 1U);
  EXPECT_EQ(xmlir_notes[0].cause, "abi_signature_mismatch");
  EXPECT_NE(xmlir_notes[0].summary.find(
                "4th parameter: int (wanted) vs unsigned int (defined in libc10_cuda.so)"),
            std::string::npos)
      << xmlir_notes[0].summary;
  EXPECT_EQ(cause(hf, "import-order"), "missing_library");
  EXPECT_EQ(summary(hf, "import-order"),
            "import torch_fl fails: libbkcl.so cannot be found (needed by libtorch_fl.so)");
  EXPECT_EQ(check(hf, "flagtree-xpu").status, CheckStatus::pass);
  EXPECT_EQ(check(hf, "torch-fl-not-linked-to-cuda").status, CheckStatus::pass);

  const auto& py310 = judged.at("torch-fl-xpu-py310");
  EXPECT_EQ(cause(py310, "flagtree-xpu"), "stock_triton");
  EXPECT_EQ(cause(py310, "import-order"), "missing_library");

  const auto& runtime = judged.at("torch-xpu-py310");
  const auto& runtime_notes = check(runtime, "no-torch-xmlir").notes;
  ASSERT_EQ(runtime_notes.size(), 1U);
  EXPECT_EQ(runtime_notes[0].cause, "missing_library");
  EXPECT_NE(
      runtime_notes[0].summary.find("a different version exists: " +
                                    (demo_host() / "usr/local/xpu/lib/libxpurt.so.1").string()),
      std::string::npos)
      << runtime_notes[0].summary;

  const auto& py311 = judged.at("torch-fl-xpu-py311");
  EXPECT_EQ(cause(py311, "torch-cpu-build"), "cuda_build");
  EXPECT_EQ(cause(py311, "flagtree-xpu"), "stock_triton");
  EXPECT_EQ(check(py311, "import-order").status, CheckStatus::pass);
  EXPECT_EQ(cause(py311, "flagos-devices"), "too_few_devices");
  EXPECT_EQ(summary(py311, "flagos-devices"),
            "torch_fl.flagos.device_count() is 0, the contract wants >= 1");

  const auto& venv = judged.at("xpu210v");
  const auto& venv_notes = check(venv, "no-torch-xmlir").notes;
  ASSERT_EQ(venv_notes.size(), 1U);
  EXPECT_EQ(venv_notes[0].cause, "undefined_symbol");
  EXPECT_EQ(venv_notes[0].summary,
            "libxpytorch.so needs at::_ops::triu_::redispatch(c10::DispatchKeySet, at::Tensor&, "
            "long), which nothing it loads defines");

  const auto& cpu = judged.at("torch-fl-cpu");
  for (const char* passing :
       {"torch-cpu-build", "no-libtorch-cuda", "torch-fl-not-linked-to-cuda", "no-torch-xmlir",
        "flagtree-xpu", "import-order", "vendor-first-library-path", "flagos-devices"}) {
    EXPECT_EQ(check(cpu, passing).status, CheckStatus::pass)
        << passing << ": " << summary(cpu, passing);
  }
  EXPECT_EQ(cause(cpu, "first-device-op"), "hang");
  EXPECT_NE(summary(cpu, "first-device-op").find("1 of 66 threads running at ~"),
            std::string::npos);

  const auto& activate = judged.at("torch-fl-activate");
  EXPECT_EQ(check(activate, "import-order").status, CheckStatus::pass);
  ASSERT_EQ(check(activate, "import-order").notes.size(), 1U);
  EXPECT_EQ(check(activate, "import-order").notes[0].cause, "activation_required");
  EXPECT_EQ(cause(activate, "flagtree-xpu"), "triton_backend_missing");

  const auto& base = judged.at("base");
  EXPECT_EQ(cause(base, "torch-cpu-build"), "missing_package");
  EXPECT_EQ(check(base, "first-device-op").status, CheckStatus::skip);
}

// Envs are read side by side: the facts are the same, env for env and in the
// same order, as when they are read one at a time.
TEST(JudgeDemoHost, EnvsReadSideBySideGiveTheFactsReadOneAtATime) {
  auto loaded = contracts::load_contract_file(ENVCONTRACT_SOURCE_DIR
                                              "/tests/fixtures/demo_host/kunlunxin-demo.yaml");
  ASSERT_TRUE(loaded.contract) << testing::joined(loaded);
  const auto plan = daemon::plan_from_contract(&*loaded.contract);
  probes::HostFactsOptions options;
  options.discovery.roots = {demo_host()};
  options.request = plan;  // the contract's files, tools, libraries and devices too
  options.concurrency = 1;
  const auto one_at_a_time =
      facts::to_json(probes::gather_host_facts(options, std::make_shared<probes::FactCaches>()));
  options.concurrency = 4;
  const auto side_by_side =
      facts::to_json(probes::gather_host_facts(options, std::make_shared<probes::FactCaches>()));
  ASSERT_EQ(one_at_a_time["envs"].size(), 8U);
  EXPECT_EQ(side_by_side["envs"], one_at_a_time["envs"]);
  EXPECT_EQ(side_by_side["problems"], one_at_a_time["problems"]);
}

}  // namespace
}  // namespace envcontract
