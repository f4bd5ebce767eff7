// contracts/contract.cpp: the digest a gate compares to know that it and
// the agent judge by the same contract.
#include <gtest/gtest.h>

#include "contracts/contract.hpp"
#include "contracts/contract_loader.hpp"

namespace envcontract::contracts {
namespace {

const std::string k_contract =
    "schema_version: 1\n"
    "name: kunlunxin\n"
    "checks:\n"
    "  - {id: torch-cpu-build, kind: torch, base: '2.10.0', cuda: none}\n"
    "  - {id: no-stock, kind: distributions, absent: [origin]}\n"
    "  - {id: vendor, kind: environment, equals: {origin: a}}\n";

std::string digest(const std::string& text, const std::string& path = "/etc/envcontract/a.yaml") {
  const auto loaded = load_contract_text(text, path);
  EXPECT_TRUE(loaded.contract) << text;
  return loaded.contract ? judged_sha256(*loaded.contract) : "";
}

TEST(ContractDigest, TheSameContractFromAnotherPlaceOrWithOtherCommentsIsTheSame) {
  const std::string here = digest(k_contract);
  EXPECT_EQ(here.size(), 64U);
  EXPECT_EQ(digest(k_contract, "/home/ci/checkout/.envcontract/kunlunxin.yaml"), here);
  // Comments move every line: the checks' origins change, not what is judged.
  EXPECT_EQ(digest("# the CI's copy\n\n" + k_contract + "# end\n"), here);
}

TEST(ContractDigest, AnythingJudgedChangesIt) {
  const std::string here = digest(k_contract);
  std::string other_base = k_contract;
  other_base.replace(other_base.find("2.10.0"), 6, "2.10.1");
  EXPECT_NE(digest(other_base), here);
  std::string advisory = k_contract;
  advisory.replace(advisory.find("cuda: none}"), 11, "cuda: none, severity: advisory}");
  EXPECT_NE(digest(advisory), here);
  // A parameter may be named origin (a distribution, a variable): it is
  // judged, kept, as a value and as a key.
  std::string other_name = k_contract;
  other_name.replace(other_name.find("[origin]"), 8, "[triton]");
  EXPECT_NE(digest(other_name), here);
  std::string other_value = k_contract;
  other_value.replace(other_value.find("{origin: a}"), 11, "{origin: b}");
  EXPECT_NE(digest(other_value), here);
  std::string fewer = k_contract.substr(0, k_contract.find("  - {id: no-stock"));
  EXPECT_NE(digest(fewer), here);
}

TEST(ContractDigest, ItsJsonKeepsWhereEachCheckCameFrom) {
  const auto loaded = load_contract_text(k_contract, "/etc/envcontract/a.yaml");
  ASSERT_TRUE(loaded.contract);
  const Json json = to_json(*loaded.contract);
  EXPECT_EQ(json["path"], "/etc/envcontract/a.yaml");
  ASSERT_EQ(json["checks"].size(), 3U);
  EXPECT_EQ(json["checks"][0]["id"], "torch-cpu-build");
  EXPECT_EQ(json["checks"][0]["stage"], "static");
  EXPECT_NE(json["checks"][0]["origin"].get<std::string>().find("a.yaml:4"), std::string::npos)
      << json["checks"][0]["origin"];
}

}  // namespace
}  // namespace envcontract::contracts
