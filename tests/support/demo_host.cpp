#include "tests/support/demo_host.hpp"

#include <cstdlib>
#include <stdexcept>

#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::testing {

void build_demo_host(const std::filesystem::path& directory) {
  const auto result =
      run_command({"/usr/bin/env", "python3",
                   ENVCONTRACT_SOURCE_DIR "/tests/fixtures/make_demo_host.py", directory.string()});
  if (result.exit_code != 0) {
    throw std::runtime_error("make_demo_host.py failed: " + result.err);
  }
}

const std::filesystem::path& demo_host() {
  static const std::filesystem::path path = [] {
    if (const char* prebuilt = std::getenv("ENVCONTRACT_DEMO_HOST")) {
      return std::filesystem::path(prebuilt);
    }
    static TempDir directory;  // lives until the test binary exits
    build_demo_host(directory.path() / "host");
    return directory.path() / "host";
  }();
  return path;
}

}  // namespace envcontract::testing
