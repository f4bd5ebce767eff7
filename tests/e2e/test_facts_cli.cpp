// `envcontractd facts` on the demo host, as the real binary.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/demo_host.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

using testing::demo_host;
using testing::run_command;

TEST(FactsCli, PrintsEveryEnvWithStaticFactsAndActivation) {
  const auto host = demo_host().string();
  const auto result = run_command(
      {ENVCONTRACTD_PATH, "facts", "--root", host, "--image-tag-file", host + "/etc/flagos-image"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto facts = nlohmann::json::parse(result.out);
  EXPECT_EQ(facts["schema_version"], 1);
  EXPECT_EQ(facts["image"]["value"],
            "harbor.example/flagos-runtime/flagos-runtime-kunlunxin-xre5.37.1:2.1.2");
  ASSERT_EQ(facts["envs"].size(), 8U);
  for (const auto& env : facts["envs"]) {
    EXPECT_TRUE(env.contains("static")) << env["name"];
    EXPECT_EQ(env["activation"]["problem"], "") << env["name"];
    if (env["name"] == "torch-fl-hf-test") {
      EXPECT_EQ(env["static"]["torch"]["cuda"], "12.9");
      EXPECT_EQ(env["activation"]["changes"]["XPU_ROOT"]["activated"], host + "/usr/local/xpu");
    }
    if (env["name"] == "torch-fl-cpu") {
      EXPECT_TRUE(env["static"]["torch"]["cuda"].is_null());
      EXPECT_EQ(env["static"]["triton"]["backends"], nlohmann::json({"xpu"}));
    }
  }
  // The stale environments.txt entry is in the report and on stderr.
  ASSERT_EQ(facts["problems"].size(), 1U);
  EXPECT_NE(result.err.find("torch-old-removed"), std::string::npos);
  EXPECT_TRUE(facts["timing_ms"]["static"].is_number());
}

TEST(FactsCli, NoEnvFoundExitsOne) {
  testing::TempDir empty;
  const auto result = run_command({ENVCONTRACTD_PATH, "facts", "--root", empty.path().string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("no Python environment found"), std::string::npos);
}

}  // namespace
}  // namespace envcontract
