#include "common/python_names.hpp"

#include <gtest/gtest.h>

namespace envcontract::common {
namespace {

TEST(PythonNames, NormalizesDistributionNamesAsPep503) {
  EXPECT_EQ(normalize_distribution_name("Flag__Gems.x"), "flag-gems-x");
  EXPECT_EQ(normalize_distribution_name("torch_fl"), "torch-fl");
  EXPECT_EQ(normalize_distribution_name("FlagTree"), "flagtree");
  EXPECT_EQ(normalize_distribution_name("a-_.-b"), "a-b");
}

}  // namespace
}  // namespace envcontract::common
