// What activation changes: variables added, removed or changed, by name.
#include "facts/activation.hpp"

#include <gtest/gtest.h>

namespace envcontract::facts {
namespace {

TEST(ActivationFacts, ChangesAreAddedRemovedOrChangedVariablesInNameOrder) {
  const Environment bare = {{"PATH", "/usr/bin"}, {"HOME", "/home/ci"}, {"CONDA_SHLVL", "0"}};
  const Environment activated = {{"PATH", "/opt/conda/envs/e/bin:/usr/bin"},
                                 {"HOME", "/home/ci"},
                                 {"XPU_ROOT", "/usr/local/xpu"}};
  const auto changes = environment_changes(bare, activated);
  ASSERT_EQ(changes.size(), 3U);
  EXPECT_EQ(changes[0].name, "CONDA_SHLVL");
  EXPECT_EQ(changes[0].before, "0");
  EXPECT_EQ(changes[0].after, "") << "removed";
  EXPECT_EQ(changes[1].name, "PATH");
  EXPECT_EQ(changes[1].after, "/opt/conda/envs/e/bin:/usr/bin");
  EXPECT_EQ(changes[2].name, "XPU_ROOT");
  EXPECT_EQ(changes[2].before, "") << "added";
  EXPECT_TRUE(environment_changes(bare, bare).empty());
}

TEST(ActivationFacts, ItsJsonListsTheChangesAndBothEnvironments) {
  ActivatedEnvironment activation;
  activation.scripts = {"/opt/conda/envs/e/etc/conda/activate.d/xpu.sh"};
  activation.bare = {{"PATH", "/usr/bin"}};
  activation.activated = {{"PATH", "/usr/bin"}, {"XPU_ROOT", "/usr/local/xpu"}};
  activation.refused_variables = {"BASH_ENV: changes how bash starts"};
  const Json json = to_json(activation);
  EXPECT_EQ(json["scripts"][0], "/opt/conda/envs/e/etc/conda/activate.d/xpu.sh");
  EXPECT_EQ(json["changes"], Json({{"XPU_ROOT", {{"bare", ""}, {"activated", "/usr/local/xpu"}}}}));
  EXPECT_EQ(json["refused_variables"][0], "BASH_ENV: changes how bash starts");
  EXPECT_EQ(json["activated"]["XPU_ROOT"], "/usr/local/xpu");
  EXPECT_EQ(json["problem"], "");
}

}  // namespace
}  // namespace envcontract::facts
