// libFuzzer target: any bytes as the environment the activation script
// dumps (NUL-separated NAME=value), which activate.d scripts of any user
// shape, then as conda's env_vars JSON, which any user can write.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/json_text.hpp"
#include "probes/activation.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace envcontract::probes;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto dumped = parse_environment_dump(text);
  ActivatedEnvironment activation;
  activation.activated = dumped;
  (void)environment_changes({}, dumped);
  (void)envcontract::common::json_text(to_json(activation));
  return 0;
}
