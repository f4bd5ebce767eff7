// An env as discovery finds it: paths as its own tree names them, who its
// code runs as, and what is wrong with it, said in words.
#include "facts/env.hpp"

#include <gtest/gtest.h>

namespace envcontract::facts {
namespace {

TEST(EnvFacts, APathIsNamedAsItsTreeNamesIt) {
  EXPECT_EQ(path_inside_root("/var/lib/containers/x/merged", "/var/lib/containers/x/merged/opt/v"),
            "/opt/v");
  EXPECT_EQ(path_inside_root("/var/lib/containers/x/merged/", "/var/lib/containers/x/merged"), "/");
  EXPECT_EQ(path_inside_root("/", "/opt/v"), "/opt/v") << "the host's own tree";
  EXPECT_EQ(path_inside_root("", "/opt/v"), "/opt/v");
  EXPECT_EQ(path_inside_root("/srv/root", "/srv/rootfs/opt/v"), "/srv/rootfs/opt/v")
      << "a sibling whose name starts the same is not under the root";
}

TEST(EnvFacts, ModesAreWrittenAsPeopleWriteThem) {
  EXPECT_EQ(mode_text(0755), "0755");
  EXPECT_EQ(mode_text(040777), "0777") << "the file type bits are not permissions";
  EXPECT_EQ(mode_text(01777), "1777");
}

TEST(EnvFacts, AUserWithoutANameIsShownAsAUid) {
  RunAs named;
  named.user = "ci";
  EXPECT_EQ(named.who(), "ci");
  RunAs numeric;
  numeric.user = "100042";
  EXPECT_EQ(numeric.who(), "uid 100042");
  EXPECT_TRUE(RunAs{}.is_root());
}

TEST(EnvFacts, ItsProblemsAreReportedByTheirTexts) {
  PythonEnv env;
  env.name = "broken";
  env.prefix = "/opt/envs/broken";
  env.kind = EnvKind::venv;
  env.problems = {{EnvProblem::Kind::no_interpreter, "bin/python is a dangling link"},
                  {EnvProblem::Kind::unknown_version, "nothing tells its Python version"}};
  EXPECT_EQ(problem_texts(env.problems),
            (std::vector<std::string>{"bin/python is a dangling link",
                                      "nothing tells its Python version"}));
  const Json json = to_json(env);
  EXPECT_EQ(json["kind"], "venv");
  EXPECT_EQ(json["problems"][0], "bin/python is a dangling link");
  EXPECT_EQ(json["run_as"]["problem"], nullptr) << "no problem is null, not an empty string";
  EXPECT_EQ(to_string(EnvKind::interpreter), "interpreter");
}

TEST(EnvFacts, AnUnsafePathSaysWhoCanWriteIt) {
  const Json json =
      to_json(UnsafePath{"/opt/envs/e/lib", "bob", "users", 040777, "anyone can write it"});
  EXPECT_EQ(json, Json({{"path", "/opt/envs/e/lib"},
                        {"owner", "bob"},
                        {"group", "users"},
                        {"mode", "0777"},
                        {"why", "anyone can write it"}}));
}

}  // namespace
}  // namespace envcontract::facts
