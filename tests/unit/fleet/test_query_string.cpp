// fleet/query_string.cpp: parameters for the agent's and Prometheus' APIs,
// percent-encoded as RFC 3986 has it.
#include <gtest/gtest.h>

#include "fleet/query_string.hpp"

namespace envcontract::fleet {
namespace {

TEST(QueryString, EveryByteButTheUnreservedIsEncoded) {
  EXPECT_EQ(query_string({{"env", "/opt/envs/torch fl"}}), "?env=%2Fopt%2Fenvs%2Ftorch%20fl");
  EXPECT_EQ(query_string({{"q", "a-b.c_d~e"}}), "?q=a-b.c_d~e");
  EXPECT_EQ(query_string({{"q", "a&b=c+d#e"}}), "?q=a%26b%3Dc%2Bd%23e")
      << "no value can add a parameter or end the query";
  EXPECT_EQ(query_string({{"q", "é"}}), "?q=%C3%A9") << "UTF-8, byte by byte";
  EXPECT_EQ(query_string({{"a b", "1"}}), "?a%20b=1") << "names too";
}

TEST(QueryString, EmptyValuesAreLeftOut) {
  EXPECT_EQ(query_string({}), "");
  EXPECT_EQ(query_string({{"env", ""}}), "");
  EXPECT_EQ(query_string({{"env", ""}, {"check", "torch"}, {"limit", "10"}}),
            "?check=torch&limit=10");
}

}  // namespace
}  // namespace envcontract::fleet
