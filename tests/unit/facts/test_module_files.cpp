// The index of where each top-level module of an env is found, which holds
// directories once and each module by name and file name.
#include "facts/module_files.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace envcontract::facts {
namespace {

const std::string k_site = "/opt/envs/a/lib/python3.11/site-packages";

TEST(ModuleFiles, GivesBackEachModulesLocationAndRealPath) {
  ModuleFiles modules;
  modules.add("torch", k_site + "/torch", k_site + "/torch");
  // A module that is a link: its real path is elsewhere, under another name.
  modules.add("linked", k_site + "/linked.py", "/srv/src/real_linked.py");
  // A site dir reached through a link: the same file name, another directory.
  modules.add("six", k_site + "/six.py", "/data/envs/a/lib/python3.11/site-packages/six.py");
  modules.add("top", "/top", "/top");
  // Text as it was given: a relative path (an editable install's hook may
  // say anything), a doubled slash.
  modules.add("relative", "relative", "relative");
  modules.add("doubled", "/srv//doubled.py", "/srv//doubled.py");
  modules.finish();

  EXPECT_EQ(modules.at("torch").location, k_site + "/torch");
  EXPECT_EQ(modules.at("torch").real, k_site + "/torch");
  EXPECT_EQ(modules.at("linked").location, k_site + "/linked.py");
  EXPECT_EQ(modules.at("linked").real, "/srv/src/real_linked.py");
  EXPECT_EQ(modules.at("six").real, "/data/envs/a/lib/python3.11/site-packages/six.py");
  EXPECT_EQ(modules.at("top").location, "/top");
  EXPECT_EQ(modules.at("top").real, "/top");
  EXPECT_EQ(modules.at("relative").location, "relative");
  EXPECT_EQ(modules.at("doubled").location, "/srv//doubled.py");
  EXPECT_EQ(modules.at("doubled").real, "/srv//doubled.py");
}

TEST(ModuleFiles, GivesBackPathsWhoseSlashesAreAllThereIs) {
  ModuleFiles modules;
  // A module linked to the root directory: its real path has no file name,
  // which must not read as "the same file name as its location".
  modules.add("evil", k_site + "/evil", "/");
  modules.add("rooted", "//rooted.py", "//rooted.py");
  modules.add("root", "/", "/");
  modules.finish();
  EXPECT_EQ(modules.at("evil").location, k_site + "/evil");
  EXPECT_EQ(modules.at("evil").real, "/");
  EXPECT_EQ(modules.at("rooted").location, "//rooted.py");
  EXPECT_EQ(modules.at("rooted").real, "//rooted.py");
  EXPECT_EQ(modules.at("root").real, "/");
  ASSERT_EQ(modules.name(0), "evil");
  EXPECT_EQ(modules.real_directory(0), "/");
  ASSERT_EQ(modules.name(2), "rooted");
  EXPECT_EQ(modules.real_directory(2), "/");
}

TEST(ModuleFiles, HoldsAModuleInADirectoryOfItsOwnForEachOfMany) {
  // A hostile env can link each of tens of thousands of modules from a
  // directory of its own; each directory is then looked up among all the
  // others (searched one by one, 80,000 took 16 s), and each module put in
  // its place moves all after it. This is 100,000 in both orders, the second
  // half added after finish().
  constexpr int k_count = 50000;
  ModuleFiles modules;
  const auto add = [&](int i) {
    const auto name = "m" + std::to_string(i);
    modules.add(name, k_site + "/" + name, "/srv/own/" + name + "/" + name);
  };
  for (int i = 0; i < k_count; ++i) {
    add(i);
  }
  modules.finish();
  for (int i = 2 * k_count; i-- > k_count;) {
    add(i);
  }
  modules.finish();
  ASSERT_EQ(modules.size(), 2U * k_count);
  EXPECT_EQ(modules.at("m77777").real, "/srv/own/m77777/m77777");
  EXPECT_EQ(modules.at("m0").location, k_site + "/m0");
  EXPECT_EQ(modules.at("m99999").real, "/srv/own/m99999/m99999");
}

TEST(ModuleFiles, ListsModulesInNameOrderAndKeepsTheFirstOfAName) {
  ModuleFiles modules;
  modules.add("zlib", "/usr/lib/python3.11/lib-dynload/zlib.so",
              "/usr/lib/python3.11/lib-dynload/zlib.so");
  modules.add("json", "/usr/lib/python3.11/json", "/usr/lib/python3.11/json");
  modules.add("json", k_site + "/json", k_site + "/json");  // hidden by the first
  modules.add("abc", "/usr/lib/python3.11/abc.py", "/usr/lib/python3.11/abc.py");
  // Read out of order, the list would not be in order: finish() comes first.
  EXPECT_THROW(modules.find("abc"), std::logic_error);
  modules.finish();
  ASSERT_EQ(modules.size(), 3U);
  EXPECT_EQ(modules.name(0), "abc");
  EXPECT_EQ(modules.name(1), "json");
  EXPECT_EQ(modules.name(2), "zlib");
  EXPECT_EQ(modules.file(1).location, "/usr/lib/python3.11/json");
  EXPECT_EQ(modules.real_directory(2), "/usr/lib/python3.11/lib-dynload");
  EXPECT_EQ(modules.names(), (std::vector<std::string>{"abc", "json", "zlib"}));
}

// Names, file names and the real path's file name where it differs share
// one buffer; each module still gives back exactly its own, whatever the
// order of adding, and after more are added to a finished list.
TEST(ModuleFiles, EachModuleGivesBackItsOwnTextAfterReordering) {
  ModuleFiles modules;
  modules.add("b", k_site + "/b.py", "/srv/real/b_real.py");
  modules.add("a", k_site + "/a.py", k_site + "/a.py");
  modules.add("c", k_site + "/c", "/srv/c");
  modules.finish();
  modules.add("aa", "/opt/aa.so", "/opt/lib/aa.cpython-311-x86_64-linux-gnu.so");
  modules.finish();
  EXPECT_EQ(modules.names(), (std::vector<std::string>{"a", "aa", "b", "c"}));
  EXPECT_EQ(modules.at("a").real, k_site + "/a.py");
  EXPECT_EQ(modules.at("aa").location, "/opt/aa.so");
  EXPECT_EQ(modules.at("aa").real, "/opt/lib/aa.cpython-311-x86_64-linux-gnu.so");
  EXPECT_EQ(modules.at("b").location, k_site + "/b.py");
  EXPECT_EQ(modules.at("b").real, "/srv/real/b_real.py");
  EXPECT_EQ(modules.at("c").real, "/srv/c");
  EXPECT_TRUE(modules.contains("aa"));
  EXPECT_FALSE(modules.contains("a."));
}

TEST(ModuleFiles, AnUnknownModuleIsNotFound) {
  ModuleFiles modules;
  modules.add("torch", k_site + "/torch", k_site + "/torch");
  modules.finish();
  EXPECT_FALSE(modules.find("tor").has_value());
  EXPECT_FALSE(modules.find("torchvision").has_value());
  EXPECT_EQ(modules.count("torch"), 1U);
  EXPECT_EQ(modules.count("triton"), 0U);
  EXPECT_THROW(modules.at("triton"), std::out_of_range);
}

}  // namespace
}  // namespace envcontract::facts
