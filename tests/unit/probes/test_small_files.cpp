#include "probes/small_files.hpp"

#include <gtest/gtest.h>

namespace envcontract::probes {
namespace {

TEST(SmallFiles, PythonAssignmentsAreReadWithoutRunningCode) {
  const auto values = parse_python_assignments(
      "__version__ = '2.10.0+cu129'\n"
      "debug = False\n"
      "cuda: Optional[str] = \"12.9\"  # from the build\n"
      "hip = None\r\n"
      "git_version = compute()\n"
      "    indented = 'ignored'\n"
      "__version__ = '2.10.0+cu129.post1'\n");
  EXPECT_EQ(values.at("__version__"), std::optional<std::string>("2.10.0+cu129.post1"));
  EXPECT_EQ(values.at("cuda"), std::optional<std::string>("12.9"));
  EXPECT_EQ(values.at("hip"), std::nullopt);
  EXPECT_FALSE(values.contains("debug"));
  EXPECT_FALSE(values.contains("git_version"));
  EXPECT_FALSE(values.contains("indented"));
}

TEST(SmallFiles, HeadersStopAtTheBody) {
  const auto headers =
      parse_headers("Metadata-Version: 2.1\nName: torch\nVersion: 2.10.0\n\nName: body\n");
  EXPECT_EQ(headers.at("Name"), "torch");
  EXPECT_EQ(headers.at("Version"), "2.10.0");
}

TEST(SmallFiles, KeyValuesOfPyvenvCfg) {
  const auto values = parse_key_values(
      "home = /usr/bin\ninclude-system-site-packages = false\nVersion = 3.10.13\n");
  EXPECT_EQ(values.at("home"), "/usr/bin");
  EXPECT_EQ(values.at("version"), "3.10.13");
}

TEST(SmallFiles, ReadingIsCapped) {
  const auto text = read_small_file("/dev/zero", 1000);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(text->size(), 1000U);
  EXPECT_FALSE(read_small_file("/nonexistent/file").has_value());
}

}  // namespace
}  // namespace envcontract::probes
