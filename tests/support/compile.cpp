#include "tests/support/compile.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/run_command.hpp"

namespace envcontract::testing {

void build_shared_library(const std::filesystem::path& output, const std::string& source,
                          const std::vector<std::string>& arguments) {
  std::filesystem::create_directories(output.parent_path());
  const auto source_path = output.string() + ".c";
  std::ofstream(source_path) << source;
  std::vector<std::string> argv = {
      "/usr/bin/cc", "-shared", "-fPIC", "-o", output.string(), source_path, "-Wl,--no-as-needed"};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  const auto result = run_command(argv);
  ASSERT_EQ(result.exit_code, 0) << "cc failed for " << output << ":\n" << result.err;
}

}  // namespace envcontract::testing
