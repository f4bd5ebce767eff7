// probes/ci_runner.cpp: a CI config's variables and commands as its runner
// would apply and run them.
#include <gtest/gtest.h>

#include "probes/ci_runner.hpp"

namespace envcontract::probes {
namespace {

TEST(CiRunner, VariablesExpandAsPythonsExpandvars) {
  const facts::Environment environment = {{"A", "1"}, {"B_2", "two"}, {"EMPTY", ""}};
  EXPECT_EQ(expand_variables("$A/${B_2}/$C", environment), "1/two/$C")
      << "an unset variable stays as written, so its mistake shows";
  EXPECT_EQ(expand_variables("x${EMPTY}y", environment), "xy");
  EXPECT_EQ(expand_variables("$A$A", environment), "11");
  EXPECT_EQ(expand_variables("cost: 5$", environment), "cost: 5$");
  EXPECT_EQ(expand_variables("${A", environment), "${A") << "unclosed";
  EXPECT_EQ(expand_variables("${}", environment), "${}");
  EXPECT_EQ(expand_variables("$-A", environment), "$-A");
  EXPECT_EQ(expand_variables("${A}B", environment), "1B");
  EXPECT_EQ(expand_variables("$AB", environment), "$AB") << "the name runs to its last letter";
}

// Each layer sees the ones before it (integration_environment, then an
// entry's own environment): PATH=$PATH:/x appends.
TEST(CiRunner, LayersApplyInOrder) {
  const auto environment =
      layered_environment({{"PATH", "/usr/bin"}}, {{"PATH", "$PATH:/opt/xre/bin"},
                                                   {"XRE", "/opt/xre"},
                                                   {"LIB", "${XRE}/lib"},
                                                   {"PATH", "$PATH:$XRE/tools"}});
  EXPECT_EQ(environment.at("PATH"), "/usr/bin:/opt/xre/bin:/opt/xre/tools");
  EXPECT_EQ(environment.at("LIB"), "/opt/xre/lib");
  // A value is expanded once: a '$' a value brings stays as it is.
  const auto once = layered_environment({}, {{"A", "$$B"}, {"B", "${A}"}});
  EXPECT_EQ(once.at("B"), "$$B");
}

TEST(CiRunner, CommandsRunInBashThatStopsAtTheFirstFailure) {
  const auto argv = ci_runner_argv("make test");
  ASSERT_EQ(argv.size(), 5U);
  EXPECT_EQ(argv[0], "/bin/bash");
  EXPECT_EQ(argv[1], "--noprofile");
  EXPECT_EQ(argv[2], "--norc");
  EXPECT_EQ(argv[3], "-c");
  EXPECT_EQ(argv[4], "set -euo pipefail\nmake test");
}

}  // namespace
}  // namespace envcontract::probes
