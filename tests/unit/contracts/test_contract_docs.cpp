// docs/contracts.md shows an example for every check kind, and every YAML
// example in it loads: the documentation cannot drift from the loader.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "contracts/check_kind.hpp"
#include "tests/support/contract_text.hpp"

namespace envcontract::contracts {
namespace {

std::vector<std::string> yaml_blocks(const char* file = ENVCONTRACT_SOURCE_DIR
                                     "/docs/contracts.md") {
  std::ifstream in(file);
  std::vector<std::string> blocks;
  std::string line;
  std::string block;
  std::size_t fence_indent = 0;
  bool inside = false;
  while (std::getline(in, line)) {
    const auto start = line.find_first_not_of(' ');
    const std::string trimmed = start == std::string::npos ? "" : line.substr(start);
    if (!inside && trimmed == "```yaml") {
      inside = true;
      fence_indent = start;
      block.clear();
    } else if (inside && trimmed == "```") {
      inside = false;
      blocks.push_back(block);
    } else if (inside) {
      // Examples nested in a list item are indented like their fence.
      block += line.substr(std::min(fence_indent, line.size())) + "\n";
    }
  }
  return blocks;
}

TEST(ContractDocs, EveryYamlExampleLoads) {
  const auto blocks = yaml_blocks();
  ASSERT_GE(blocks.size(), check_kinds().size());
  for (const auto& block : blocks) {
    const auto result =
        block.starts_with("- ") ? testing::load_checks(block) : testing::load_text(block);
    EXPECT_TRUE(result.contract) << block << testing::joined(result);
  }
}

// docs/provisioning.md's recipes load as a contract's provision: section.
TEST(ContractDocs, EveryRecipeOfTheProvisioningGuideLoads) {
  int recipes = 0;
  for (const auto& block : yaml_blocks(ENVCONTRACT_SOURCE_DIR "/docs/provisioning.md")) {
    if (!block.starts_with("provision:")) {
      continue;  // the agent's config: test_agent_config.cpp
    }
    ++recipes;
    const auto result = testing::load_text(
        "schema_version: 1\nchecks:\n  - kind: python\n    version: \">=3.10\"\n" + block);
    EXPECT_TRUE(result.contract && result.contract->provision) << block << testing::joined(result);
  }
  EXPECT_GE(recipes, 3);
}

TEST(ContractDocs, EveryKindHasAnExample) {
  std::set<std::string> documented;
  const std::regex kind_line(R"(^- kind: ([a-z_]+))");
  for (const auto& block : yaml_blocks()) {
    std::smatch match;
    if (std::regex_search(block, match, kind_line)) {
      documented.insert(match[1]);
    }
  }
  std::ifstream in(ENVCONTRACT_SOURCE_DIR "/docs/contracts.md");
  std::stringstream text;
  text << in.rdbuf();
  for (const auto& kind : check_kinds()) {
    const std::string name(kind.name);
    EXPECT_NE(text.str().find("### " + name + "\n"), std::string::npos) << name;
    if (name != "integration_test") {  // needs a platform config file beside it
      EXPECT_TRUE(documented.contains(name)) << "no loadable example for " << name;
    }
  }
}

}  // namespace
}  // namespace envcontract::contracts
