// contracts/other_python.cpp: a package the env's interpreter does not see but that its prefix
// holds for another Python fails the check as `wrong_python`.
#include "contracts/other_python.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "common/python_names.hpp"

namespace envcontract::contracts {
namespace {

// A conda env whose upgrade to Python 3.11 stopped half-way: conda-meta says
// 3.11, bin/python is still 3.10, and the packages went to lib/python3.11.
constexpr const char* k_prefix = "/opt/conda/envs/torch";
constexpr const char* k_foreign_site = "/opt/conda/envs/torch/lib/python3.11/site-packages";
constexpr const char* k_conflict =
    "conda-meta/python-3.11.7-h955ad1f_0.json says Python 3.11.7, but bin/python -> python3.10 "
    "is Python 3.10";

facts::Distribution distribution(const std::string& name, const std::string& version,
                                 std::vector<std::string> top_level) {
  facts::Distribution found;
  found.name = name;
  found.normalized = common::normalize_distribution_name(name);
  found.version = version;
  found.installer = "pip";
  found.source = "dist-info";
  found.metadata = std::string(k_foreign_site) + "/" + name + "-" + version + ".dist-info";
  found.top_level = std::move(top_level);
  return found;
}

facts::ForeignSite foreign_site(const std::string& path, const std::string& python,
                                std::vector<std::string> modules,
                                std::vector<facts::Distribution> distributions) {
  return {path, python, std::move(modules), std::move(distributions)};
}

facts::EnvFacts env_with(std::vector<facts::ForeignSite> sites) {
  facts::EnvFacts env;
  env.env.name = "torch";
  env.env.prefix = k_prefix;
  env.env.python = std::string(k_prefix) + "/bin/python";
  env.env.python_version = "3.10.14";
  env.env.python_version_conflict = k_conflict;
  env.static_facts.site_packages = {std::string(k_prefix) + "/lib/python3.10/site-packages"};
  env.static_facts.other_python_sites = std::move(sites);
  return env;
}

facts::EnvFacts torch_for_311() {
  return env_with(
      {foreign_site(k_foreign_site, "3.11", {"functorch", "torch", "torchgen"},
                    {distribution("torch", "2.5.1", {"functorch", "torch", "torchgen"})})});
}

CheckResult unjudged() {
  CheckResult result;
  result.id = "torch-build";
  result.kind = "torch";
  return result;
}

TEST(OtherPython, NothingInstalledForAnotherPythonLeavesTheResultAlone) {
  const auto env = torch_for_311();
  auto result = unjudged();
  EXPECT_FALSE(fail_if_installed_for_another_python(result, EnvFactsView(env), "triton"));
  EXPECT_EQ(result.status, CheckStatus::skip);
  EXPECT_FALSE(result.diagnosis);

  const auto none = env_with({});
  EXPECT_FALSE(fail_if_installed_for_another_python(result, EnvFactsView(none), "torch"));
  EXPECT_FALSE(result.diagnosis);
}

TEST(OtherPython, ADistributionForAnotherPythonFailsAsWrongPython) {
  const auto env = torch_for_311();
  auto result = unjudged();
  ASSERT_TRUE(fail_if_installed_for_another_python(result, EnvFactsView(env), "torch"));
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.status, CheckStatus::fail);
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->cause, "wrong_python");
  const auto& evidence = result.diagnosis->evidence;
  EXPECT_EQ(evidence["other_python_site"], k_foreign_site);
  EXPECT_EQ(evidence["other_python"], "3.11");
  EXPECT_EQ(evidence["python_version"], "3.10.14");
  EXPECT_EQ(evidence["python_version_conflict"], k_conflict);
  EXPECT_EQ(evidence["distribution"]["name"], "torch");
  EXPECT_EQ(evidence["distribution"]["version"], "2.5.1");
}

TEST(OtherPython, NoRecordedConflictIsNull) {
  auto env = torch_for_311();
  env.env.python_version_conflict.clear();
  auto result = unjudged();
  ASSERT_TRUE(fail_if_installed_for_another_python(result, EnvFactsView(env), "torch"));
  ASSERT_TRUE(result.diagnosis);
  EXPECT_TRUE(result.diagnosis->evidence["python_version_conflict"].is_null());
}

// A contract's distribution name is matched as pip normalises it.
TEST(OtherPython, DistributionNamesAreMatchedAsPipNormalisesThem) {
  const auto env =
      env_with({foreign_site(k_foreign_site, "3.11", {}, {distribution("Flag_Gems", "2.1", {})})});
  for (const char* name : {"flag-gems", "flag_gems", "Flag.Gems", "FLAG__GEMS"}) {
    auto result = unjudged();
    ASSERT_TRUE(fail_if_installed_for_another_python(result, EnvFactsView(env), name)) << name;
    ASSERT_TRUE(result.diagnosis);
    EXPECT_EQ(result.diagnosis->evidence["distribution"]["version"], "2.1") << name;
  }
}

// "torch" is not "torchvision": names are whole.
TEST(OtherPython, ANameIsNotMatchedByItsPrefix) {
  const auto env =
      env_with({foreign_site(k_foreign_site, "3.11", {"torchvision"},
                             {distribution("torchvision", "0.20.1", {"torchvision"})})});
  auto result = unjudged();
  EXPECT_FALSE(fail_if_installed_for_another_python(result, EnvFactsView(env), "torch"));
  EXPECT_FALSE(fail_if_installed_for_another_python(result, EnvFactsView(env), "vision"));
  EXPECT_FALSE(result.diagnosis);
}

// A module without metadata (copied in, or its dist-info removed) counts.
TEST(OtherPython, AModuleWithoutADistributionIsFoundToo) {
  const auto env = env_with({foreign_site(k_foreign_site, "3.11", {"vendor_plugin"}, {})});
  auto result = unjudged();
  ASSERT_TRUE(fail_if_installed_for_another_python(result, EnvFactsView(env), "vendor_plugin"));
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->cause, "wrong_python");
  EXPECT_FALSE(result.diagnosis->evidence.contains("distribution"));
  EXPECT_FALSE(fail_if_installed_for_another_python(result, EnvFactsView(env), "Vendor_Plugin"))
      << "import is case-sensitive";
}

// Two Pythons left behind: the first site that holds it is named.
TEST(OtherPython, TheFirstSiteHoldingItIsNamed) {
  const std::string site_39 = std::string(k_prefix) + "/lib/python3.9/site-packages";
  const auto env =
      env_with({foreign_site(site_39, "3.9", {"six"}, {distribution("six", "1.16.0", {"six"})}),
                foreign_site(k_foreign_site, "3.11", {"torch"},
                             {distribution("torch", "2.5.1", {"torch"})})});
  auto result = unjudged();
  ASSERT_TRUE(fail_if_installed_for_another_python(result, EnvFactsView(env), "torch"));
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->evidence["other_python"], "3.11");
  EXPECT_EQ(result.diagnosis->evidence["other_python_site"], k_foreign_site);
}

// An env of a container's rootfs: the contract and the people fixing it
// name paths as the container does.
TEST(OtherPython, PathsAreNamedAsTheEnvSeesThem) {
  const std::string root = "/var/lib/containers/storage/overlay/abc/merged";
  auto env = env_with({foreign_site(root + "/opt/conda/lib/python3.11/site-packages", "3.11",
                                    {"torch"}, {distribution("torch", "2.5.1", {"torch"})})});
  env.env.system_root = root;
  env.env.prefix = root + "/opt/conda";
  env.env.python = root + "/opt/conda/bin/python";
  auto result = unjudged();
  ASSERT_TRUE(fail_if_installed_for_another_python(result, EnvFactsView(env), "torch"));
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->evidence["other_python_site"],
            "/opt/conda/lib/python3.11/site-packages");
  EXPECT_NE(result.diagnosis->remedy.find("/opt/conda/bin/python -m pip install torch"),
            std::string::npos)
      << result.diagnosis->remedy;
  EXPECT_EQ(result.diagnosis->remedy.find(root), std::string::npos) << result.diagnosis->remedy;
}

// A `modules` check names an importable module, which is often not the
// distribution pip installs (PIL from Pillow, yaml from PyYAML, sklearn from
// scikit-learn, whose "sklearn" on PyPI refuses to install): the site's
// distribution that provides it is named, and installed by the remedy.
TEST(OtherPython, AModuleIsTracedToTheDistributionThatProvidesIt) {
  const auto env = env_with(
      {foreign_site(k_foreign_site, "3.11", {"PIL"}, {distribution("Pillow", "10.4.0", {"PIL"})})});
  auto result = unjudged();
  ASSERT_TRUE(fail_if_installed_for_another_python(result, EnvFactsView(env), "PIL"));
  ASSERT_TRUE(result.diagnosis);
  EXPECT_EQ(result.diagnosis->evidence["distribution"]["name"], "Pillow");
  EXPECT_NE(result.diagnosis->remedy.find("-m pip install Pillow"), std::string::npos)
      << result.diagnosis->remedy;
}

}  // namespace
}  // namespace envcontract::contracts
