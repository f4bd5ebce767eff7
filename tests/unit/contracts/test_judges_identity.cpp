// contracts/judges_identity.cpp: the torch build's identity against the
// contract, judged from the facts of torch/version.py.
#include <gtest/gtest.h>

#include "common/json_text.hpp"
#include "contracts/judgement.hpp"
#include "tests/support/contract_text.hpp"

namespace envcontract {
namespace {

using contracts::CheckStatus;
using testing::cause_of;

// The torch check's result for an env whose torch/version.py says `version`,
// `cuda` and `hip`, under a torch check written as `rule` (YAML flow).
contracts::CheckResult judge_torch(const std::string& rule, const std::string& version,
                                   std::optional<std::string> cuda,
                                   std::optional<std::string> hip) {
  auto loaded = testing::load_text(
      "schema_version: 1\nchecks:\n  - {id: torch-build, kind: torch, " + rule + "}\n");
  EXPECT_TRUE(loaded.contract) << testing::joined(loaded);
  if (!loaded.contract) {
    return {};
  }
  facts::EnvFacts env;
  env.env.name = "e";
  env.env.prefix = "/opt/envs/e";
  auto& torch = env.static_facts.torch;
  torch.present = true;
  torch.location = "/opt/envs/e/lib/python3.11/site-packages/torch";
  torch.version = version;
  torch.base = version.substr(0, version.find('+'));
  torch.local = version.find('+') == std::string::npos ? "" : version.substr(version.find('+') + 1);
  torch.cuda = std::move(cuda);
  torch.hip = std::move(hip);
  const auto judged = contracts::judge_env(*loaded.contract, env);
  for (const auto& check : judged.checks) {
    if (check.id == "torch-build") {
      return check;
    }
  }
  ADD_FAILURE() << "no torch-build check";
  return {};
}

TEST(TorchJudge, ACudaBuildWhereTheContractWantsCpu) {
  const auto result = judge_torch("base: '2.10.0', cuda: none", "2.10.0+cu129", "12.9", {});
  EXPECT_EQ(result.status, CheckStatus::fail);
  EXPECT_EQ(cause_of(result), "cuda_build");
  EXPECT_EQ(result.diagnosis->evidence["cuda"], "12.9");
  EXPECT_NE(result.diagnosis->remedy.find("pip install torch==2.10.0 --index-url "
                                          "https://download.pytorch.org/whl/cpu"),
            std::string::npos)
      << result.diagnosis->remedy;
}

// A ROCm build is told as one, not as a version mismatch nor as CUDA's: the
// cause is what alerts and fleet views count by.
TEST(TorchJudge, AHipBuildWhereTheContractWantsCpu) {
  const auto result =
      judge_torch("base: '2.5.1', hip: none", "2.5.1+rocm6.2", {}, std::string("6.2.41133"));
  EXPECT_EQ(result.status, CheckStatus::fail);
  EXPECT_EQ(cause_of(result), "hip_build");
  EXPECT_EQ(result.diagnosis->evidence["hip"], "6.2.41133");
  EXPECT_NE(result.diagnosis->summary.find("HIP build of torch (2.5.1+rocm6.2"), std::string::npos)
      << result.diagnosis->summary;
  EXPECT_NE(result.diagnosis->remedy.find("CPU build of torch 2.5.1"), std::string::npos)
      << result.diagnosis->remedy;
}

TEST(TorchJudge, ACpuBuildWhereTheContractNeedsAToolkit) {
  const auto no_cuda = judge_torch("cuda: required", "2.10.0+cpu", {}, {});
  EXPECT_EQ(cause_of(no_cuda), "cuda_missing");
  const auto no_hip = judge_torch("hip: required", "2.5.1+cpu", {}, {});
  EXPECT_EQ(cause_of(no_hip), "hip_missing");
  EXPECT_EQ(no_hip.diagnosis->summary,
            "torch.version.hip is None: torch 2.5.1+cpu is not a HIP (ROCm) build, which the "
            "contract needs");
  const auto cuda_not_hip = judge_torch("hip: required", "2.5.1+cu124", std::string("12.4"), {});
  EXPECT_EQ(cause_of(cuda_not_hip), "hip_missing");
  EXPECT_EQ(cuda_not_hip.diagnosis->summary.find("a CPU build"), std::string::npos)
      << "a CUDA build is not called a CPU one";
  const auto exact = judge_torch("cuda: '12.9'", "2.10.0+cpu", {}, {});
  EXPECT_EQ(cause_of(exact), "cuda_missing") << "an exact version needs the toolkit too";
}

TEST(TorchJudge, AnExactToolkitVersionIsComparedAsWritten) {
  const auto other = judge_torch("cuda: '12.9'", "2.10.0+cu126", "12.6", {});
  EXPECT_EQ(cause_of(other), "version_mismatch");
  EXPECT_EQ(other.diagnosis->summary, "torch.version.cuda is '12.6', the contract wants '12.9'");
  EXPECT_EQ(judge_torch("cuda: '12.9'", "2.10.0+cu129", "12.9", {}).status, CheckStatus::pass);
  EXPECT_EQ(judge_torch("cuda: any, hip: any", "2.10.0+cpu", {}, {}).status, CheckStatus::pass);
  EXPECT_EQ(judge_torch("cuda: none, hip: none", "2.10.0+cpu", {}, {}).status, CheckStatus::pass);
}

}  // namespace
}  // namespace envcontract
