// libFuzzer target: any bytes as a contract. The loader must answer with a
// contract or diagnostics, never crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/json_text.hpp"
#include "contracts/contract_loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto result = envcontract::contracts::load_contract_text(text, "fuzz.yaml");
  if (result.contract) {
    (void)envcontract::common::json_text(envcontract::contracts::to_json(*result.contract));
  }
  return 0;
}
