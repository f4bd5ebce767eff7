// libFuzzer target: any bytes as conda-meta/state or an env_vars.d file:
// names must never reach bash unless they are plain shell names that do not
// change bash itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "probes/activation.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> refused;
  const auto variables = envcontract::probes::parse_conda_env_vars(text, "state", refused);
  for (const auto& [name, value] : variables) {
    const bool shell_name =
        !name.empty() && !(name[0] >= '0' && name[0] <= '9') &&
        name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
            std::string::npos;
    if (!shell_name || name == "BASH_ENV" || name == "ENV" || name.starts_with("BASH_FUNC_")) {
      std::abort();  // a variable that could run code in our bash got through
    }
    (void)value;
  }
  return 0;
}
