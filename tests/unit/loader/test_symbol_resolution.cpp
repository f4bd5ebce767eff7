#include "loader/symbol_resolution.hpp"

#include <gtest/gtest.h>

namespace envcontract::loader {
namespace {

TEST(SymbolResolution, DemanglesCxxNamesAndLeavesCNamesAlone) {
  EXPECT_EQ(demangle("_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib"),
            "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)");
  EXPECT_EQ(demangle("xpu_wait"), "xpu_wait");
}

TEST(SymbolResolution, ParsesSignaturesWithTemplatesAndQualifiers) {
  const auto signature =
      parse_signature("ns::f(std::pair<int, int>, void (*)(int, long), char const*) const");
  ASSERT_TRUE(signature.has_value());
  EXPECT_EQ(signature->qualified_name, "ns::f");
  EXPECT_EQ(
      signature->parameters,
      (std::vector<std::string>{"std::pair<int, int>", "void (*)(int, long)", "char const*"}));
  EXPECT_EQ(signature->qualifiers, " const");
  EXPECT_EQ(parse_signature("ns::g()")->parameters.size(), 0U);
  EXPECT_FALSE(parse_signature("a_variable").has_value());
}

TEST(SymbolResolution, SpellsOutTheDifferingParameters) {
  const auto wanted = parse_signature(
      "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)");
  const auto defined = parse_signature(
      "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, unsigned int, "
      "bool)");
  EXPECT_EQ(signature_differences(*wanted, *defined, "libc10_cuda.so"),
            std::vector<std::string>{
                "4th parameter: int (wanted) vs unsigned int (defined in libc10_cuda.so)"});
  const auto shorter = parse_signature("c10::cuda::c10_cuda_check_implementation(int)");
  EXPECT_EQ(signature_differences(*wanted, *shorter, "x.so").back(),
            "wanted 5 parameters, the definition has 1 (defined in x.so)");
}

}  // namespace
}  // namespace envcontract::loader
