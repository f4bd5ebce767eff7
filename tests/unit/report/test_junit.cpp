// JUnit XML from typed reports: one suite per env and per host's targets,
// a case per check, a failing check a <failure>, one not judged an <error>.
#include "report/junit.hpp"

#include <gtest/gtest.h>

namespace envcontract::report {
namespace {

CheckReport check(const std::string& id, contracts::CheckStatus status,
                  const std::string& summary = "") {
  CheckReport check;
  check.id = id;
  check.status = status;
  if (status != contracts::CheckStatus::pass) {
    check.diagnosis = contracts::Diagnosis{"cause_" + id, summary, {{"k", "v"}}, "do this"};
  }
  return check;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t found = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++found;
  }
  return found;
}

TEST(Junit, EachCheckIsACaseOfItsEnvsSuite) {
  Report report;
  report.targets = {{"ci", "img:2.2.0", {check("image", contracts::CheckStatus::pass)}}};
  EnvReport env;
  env.name = "xpu210v";
  env.checks = {check("torch", contracts::CheckStatus::fail, "CUDA build <of> torch"),
                check("smoke", contracts::CheckStatus::error, "hang\nat line 3"),
                check("gpu", contracts::CheckStatus::skip, "blocked"),
                check("python", contracts::CheckStatus::pass)};
  env.checks[0].since = "2026-12-01T00:00:00Z";
  report.envs = {env};
  const std::string xml = junit_xml({{"h1", &report, ""}, {"h2", nullptr, "connection refused"}});

  EXPECT_NE(xml.find("<testsuites name=\"envcontract\" tests=\"6\" failures=\"1\" errors=\"2\" "
                     "skipped=\"1\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testsuite name=\"h1/target:ci\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testsuite name=\"h1/xpu210v\" hostname=\"h1\" tests=\"4\" failures=\"1\" "
                     "errors=\"1\" skipped=\"1\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<failure message=\"CUDA build &lt;of&gt; torch\" type=\"cause_torch\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("evidence: {&quot;k&quot;:&quot;v&quot;}&#10;remedy: do this&#10;since: "
                     "2026-12-01T00:00:00Z"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<error message=\"hang&#10;at line 3\""), std::string::npos)
      << "a line break never starts a line of its own: " << xml;
  EXPECT_NE(xml.find("<skipped message=\"skip: blocked\"/>"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<error message=\"connection refused\" type=\"unavailable\"/>"),
            std::string::npos)
      << xml;
  EXPECT_EQ(count(xml, "<testcase "), 6U);
}

}  // namespace
}  // namespace envcontract::report
