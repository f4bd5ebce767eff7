#include "tests/support/hostile_yaml.hpp"

namespace envcontract::testing {

std::string billion_laughs(LaughsLayout layout) {
  std::string text;
  for (int level = 0; level < 10; ++level) {
    const std::string name = "lol" + std::to_string(level);
    text += layout == LaughsLayout::mapping ? name + ": &" + name + " [" : "  - &" + name + " [";
    for (int item = 0; item < 10; ++item) {
      text += item == 0 ? "" : ", ";
      text += level == 0 ? "lol" : "*lol" + std::to_string(level - 1);
    }
    text += "]\n";
  }
  return text;
}

}  // namespace envcontract::testing
