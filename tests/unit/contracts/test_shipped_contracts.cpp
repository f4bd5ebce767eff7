// The contracts we ship validate cleanly and cover the fleet's platforms.
#include <gtest/gtest.h>

#include <set>

#include "contracts/check_kind.hpp"
#include "contracts/contract_loader.hpp"
#include "tests/support/contract_text.hpp"

namespace envcontract::contracts {
namespace {

const std::filesystem::path k_platforms = ENVCONTRACT_SOURCE_DIR "/contracts/platforms";

std::vector<std::filesystem::path> shipped_contracts() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(k_platforms)) {
    if (entry.path().extension() == ".yaml") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ShippedContracts, EveryOneValidatesWithoutWarnings) {
  const auto files = shipped_contracts();
  ASSERT_FALSE(files.empty());
  for (const auto& file : files) {
    const auto result = load_contract_file(file);
    EXPECT_TRUE(result.contract) << testing::joined(result);
    EXPECT_TRUE(result.diagnostics.all().empty()) << testing::joined(result);
  }
}

TEST(ShippedContracts, CoverEveryPlatformOfTheFleet) {
  std::set<std::string> platforms;
  for (const auto& file : shipped_contracts()) {
    const auto result = load_contract_file(file);
    if (result.contract && !result.contract->platform.empty()) {
      platforms.insert(result.contract->platform);
      EXPECT_FALSE(result.contract->detect.device_nodes.empty())
          << file << ": contract: auto needs device nodes to recognise the platform";
    }
  }
  for (const char* platform :
       {"kunlunxin", "cuda", "ascend", "metax", "dcu", "musa", "ppu", "gcu"}) {
    EXPECT_TRUE(platforms.contains(platform)) << "no shipped contract for " << platform;
  }
}

TEST(ShippedContracts, KunlunxinNativeContractSaysWhatTheIncidentNeeded) {
  const auto result = load_contract_file(k_platforms / "kunlunxin.yaml");
  ASSERT_TRUE(result.contract) << testing::joined(result);
  std::set<std::string> kinds;
  for (const auto& check : result.contract->checks) {
    kinds.insert(check.kind);
  }
  for (const char* kind :
       {"torch", "files", "linkage", "modules", "triton", "imports", "devices", "smoke"}) {
    EXPECT_TRUE(kinds.contains(kind)) << kind;
  }
  EXPECT_EQ(result.contract->targets.at(0).image,
            "harbor.example/flagos-runtime/flagos-runtime-kunlunxin-xre5.37.1:2.2.0");
}

}  // namespace
}  // namespace envcontract::contracts
