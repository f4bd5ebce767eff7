// The contract's `provision:` section: what it accepts, and every mistake
// reported at its own line and column.
#include <gtest/gtest.h>

#include "contracts/contract_loader.hpp"
#include "tests/support/contract_text.hpp"

namespace envcontract::contracts {
namespace {

using testing::joined;
using testing::load_text;
using testing::messages;

const std::string k_head =
    "schema_version: 1\nchecks:\n  - kind: torch\n    base: \"2.10.0\"\n    cuda: none\n";

TEST(ProvisionRecipe, AFullRecipeIsReadWithEveryValue) {
  const auto result = load_text(k_head + R"(provision:
  python: "3.10"
  create: micromamba create --yes --prefix {prefix} "python=3.10"
  packages: [torch==2.10.0+cpu, "flagtree>=0.7,<0.8", torch_fl]
  wheelhouse: /srv/wheelhouse
  no_index: true
  env_vars: {XPU_ROOT: /usr/local/xpu}
  activate_d:
    xpu_env.sh: export LD_LIBRARY_PATH="$XPU_ROOT/lib"
  commands: ["{python} -m pip check", "echo {name}"]
)");
  ASSERT_TRUE(result.contract) << joined(result);
  ASSERT_TRUE(result.contract->provision);
  const auto& recipe = *result.contract->provision;
  EXPECT_EQ(recipe.python, "3.10");
  EXPECT_FALSE(recipe.creates_venv());
  EXPECT_EQ(recipe.packages,
            (std::vector<std::string>{"torch==2.10.0+cpu", "flagtree>=0.7,<0.8", "torch_fl"}));
  EXPECT_EQ(recipe.wheelhouse, "/srv/wheelhouse");
  EXPECT_TRUE(recipe.no_index);
  ASSERT_EQ(recipe.env_vars.size(), 1U);
  EXPECT_EQ(recipe.env_vars[0].second, "/usr/local/xpu");
  ASSERT_EQ(recipe.activate_scripts.size(), 1U);
  EXPECT_EQ(recipe.activate_scripts[0].first, "xpu_env.sh");
  EXPECT_EQ(recipe.commands.size(), 2U);
  EXPECT_EQ(recipe.origin.line, 7);
  // --print shows it
  const auto json = to_json(*result.contract);
  EXPECT_EQ(json["provision"]["create"], recipe.create);
  EXPECT_EQ(json["provision"]["env_vars"]["XPU_ROOT"], "/usr/local/xpu");
}

TEST(ProvisionRecipe, AContractWithoutOneHasNone) {
  const auto result = load_text(k_head);
  ASSERT_TRUE(result.contract) << joined(result);
  EXPECT_FALSE(result.contract->provision);
  EXPECT_TRUE(to_json(*result.contract)["provision"].is_null());
}

TEST(ProvisionRecipe, EveryMistakeIsReportedAtItsPosition) {
  const auto result = load_text(k_head + R"(provision:
  python: python3
  create: micromamba create --yes python=3.10
  packages: ["torch @ https://example.invalid/torch.whl", flagtree]
  wheelhouse: wheels/
  index_url: pypi.org/simple
  env_vars: {"1BAD": x}
  activate_d: {"../escape.sh": x}
  commands: ["{pyhton} -m pip check", "echo 'unterminated"]
  pip_options: [--pre]
)");
  EXPECT_FALSE(result.contract);
  const auto all = joined(result);
  for (const char* expected : {
           "contract.yaml:7:11: error: 'python' of 'provision' must be a version such as 3.10",
           "contract.yaml:8:11: error: 'create' is 'venv' or a command that makes the env at "
           "{prefix}",
           "contract.yaml:9:13: error: 'torch @ https://example.invalid/torch.whl' is not a "
           "requirement pip takes here",
           "contract.yaml:10:15: error: 'wheelhouse' must be an absolute directory",
           "contract.yaml:11:14: error: 'index_url' must be an http(s):// or file:// URL",
           "contract.yaml:12:",
           "contract.yaml:13:",
           "contract.yaml:14:13: error: unknown placeholder {pyhton} in '{pyhton} -m pip check'; "
           "known: {prefix}, {python}, {wheelhouse}, {name} (did you mean 'python'?)",
           "contract.yaml:14:13: error: a command of 'provision' 'echo 'unterminated' has an "
           "unterminated quote",
           "contract.yaml:15:3: error: unknown key 'pip_options' in 'provision'",
       }) {
    EXPECT_NE(all.find(expected), std::string::npos) << expected << "\nin:\n" << all;
  }
}

TEST(ProvisionRecipe, NoIndexNeedsAWheelhouseAndContradictsAnIndex) {
  auto result = load_text(k_head +
                          "provision:\n  python: \"3.11\"\n  packages: [torch]\n"
                          "  no_index: true\n");
  EXPECT_NE(joined(result).find("contract.yaml:9:13: error: 'no_index: true' installs from the "
                                "wheelhouse only: name one ('wheelhouse')"),
            std::string::npos)
      << joined(result);
  result = load_text(k_head +
                     "provision:\n  python: \"3.11\"\n  packages: [torch]\n"
                     "  wheelhouse: /w\n  index_url: https://download.pytorch.org/whl/cpu\n"
                     "  no_index: true\n");
  EXPECT_NE(joined(result).find("'index_url' and 'no_index: true' contradict each other"),
            std::string::npos)
      << joined(result);
}

TEST(ProvisionRecipe, CredentialsInTheIndexUrlAreRefused) {
  const auto result = load_text(k_head +
                                "provision:\n  python: \"3.11\"\n  packages: [torch]\n"
                                "  index_url: https://ci:s3cret@pypi.internal/simple\n");
  EXPECT_NE(joined(result).find("contract.yaml:9:14: error: 'index_url' holds credentials"),
            std::string::npos)
      << joined(result);
}

TEST(ProvisionRecipe, PackagesAndPythonAreRequired) {
  const auto result = load_text(k_head + "provision:\n  create: venv\n");
  EXPECT_EQ(messages(result),
            (std::vector<std::string>{
                "contract.yaml:7:3: error: 'provision' is missing the required key 'python'",
                "contract.yaml:7:3: error: 'provision' is missing the required key 'packages'",
            }))
      << joined(result);
}

TEST(ProvisionRecipe, CommandTemplatesSplitAsAShellSplitsWordsWithoutExpanding) {
  EXPECT_EQ(split_command_template(R"(a  'b c' "d \"e\"" f\ g $HOME {prefix})"),
            (std::vector<std::string>{"a", "b c", "d \"e\"", "f g", "$HOME", "{prefix}"}));
  EXPECT_EQ(split_command_template("''"), (std::vector<std::string>{""}));
  EXPECT_FALSE(split_command_template("echo \"open"));
}

}  // namespace
}  // namespace envcontract::contracts
