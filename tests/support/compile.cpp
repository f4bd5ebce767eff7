#include "tests/support/compile.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/run_command.hpp"

namespace envcontract::testing {

namespace {

void build(const std::string& compiler, const std::string& extension,
           const std::filesystem::path& output, const std::string& source,
           const std::vector<std::string>& arguments) {
  std::filesystem::create_directories(output.parent_path());
  const auto source_path = output.string() + extension;
  std::ofstream(source_path) << source;
  std::vector<std::string> argv = {compiler,    "-shared",           "-fPIC", "-o", output.string(),
                                   source_path, "-Wl,--no-as-needed"};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  const auto result = run_command(argv);
  ASSERT_EQ(result.exit_code, 0) << compiler << " failed for " << output << ":\n" << result.err;
}

}  // namespace

void build_shared_library(const std::filesystem::path& output, const std::string& source,
                          const std::vector<std::string>& arguments) {
  build("/usr/bin/cc", ".c", output, source, arguments);
}

void build_cxx_shared_library(const std::filesystem::path& output, const std::string& source,
                              const std::vector<std::string>& arguments) {
  build("/usr/bin/g++", ".cpp", output, source, arguments);
}

}  // namespace envcontract::testing
