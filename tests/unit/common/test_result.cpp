#include "common/result.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <variant>

namespace envcontract::common {
namespace {

Result<int> half(int number) {
  if (number % 2 != 0) {
    return Error{std::to_string(number) + " is odd: give an even number"};
  }
  return number / 2;
}

TEST(Result, HoldsTheValueOrWhyThereIsNone) {
  const auto even = half(8);
  ASSERT_TRUE(even.ok());
  EXPECT_EQ(*even, 4);
  EXPECT_EQ(even.error(), "");

  const auto odd = half(7);
  EXPECT_FALSE(odd);
  EXPECT_EQ(odd.error(), "7 is odd: give an even number");
  // Asking a failure for its value is a bug, and says so.
  EXPECT_THROW((void)odd.value(), std::bad_variant_access);
}

// A string value and a string error never mix up, and move-only values move out.
TEST(Result, StringValuesAndMoveOnlyValues) {
  const Result<std::string> text = std::string("value");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "value");
  const Result<std::string> failed = Error{"why"};
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.error(), "why");

  Result<std::unique_ptr<int>> owned = std::make_unique<int>(3);
  ASSERT_TRUE(owned);
  const std::unique_ptr<int> taken = std::move(owned).value();
  EXPECT_EQ(*taken, 3);
}

// A caller tells failures apart by their code, never by their words; a
// value has no failure to tell.
TEST(Result, AFailureCarriesItsCode) {
  const Result<int> refused = Error{"refused: a crafted file", ErrorCode::refused};
  EXPECT_EQ(refused.error_code(), ErrorCode::refused);
  const Result<int> plain = Error{"cannot open"};
  EXPECT_EQ(plain.error_code(), ErrorCode::failed);
  const Result<int> value = 3;
  EXPECT_EQ(value.error_code(), ErrorCode::failed);
  EXPECT_EQ(value.error(), "");
}

}  // namespace
}  // namespace envcontract::common
