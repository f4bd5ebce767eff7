// libFuzzer target: any bytes as a user's .condarc (read for envs_dirs).
#include <cstddef>
#include <cstdint>
#include <string>

#include "discovery/discovery.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)envcontract::discovery::parse_condarc_envs_dirs(text);
  return 0;
}
