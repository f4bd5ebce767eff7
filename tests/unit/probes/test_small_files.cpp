#include "probes/small_files.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/support/temp_dir.hpp"

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

TEST(SmallFiles, AFifoIsRefusedWithoutBlocking) {
  testing::TempDir dir;
  const auto fifo = dir.path() / "version.py";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  // No writer ever opens it: a blocking open would never return.
  const auto read = read_file_bounded(fifo, file_limits::python_source);
  EXPECT_FALSE(read.text.has_value());
  EXPECT_EQ(read.refusal, "is a FIFO, not a regular file");
}

TEST(SmallFiles, DevicesAndDirectoriesAreRefused) {
  EXPECT_EQ(read_file_bounded("/dev/zero", file_limits::small_text).refusal,
            "is a character device, not a regular file");
  EXPECT_EQ(read_file_bounded("/tmp", file_limits::small_text).refusal,
            "is a directory, not a regular file");
}

TEST(SmallFiles, OversizedFilesAreRefusedUnlessTheirTopIsEnough) {
  testing::TempDir dir;
  const auto big = dir.write("condarc", std::string(2 * 1024 * 1024, 'x'));
  const auto refused = read_file_bounded(big, file_limits::conda_config);
  EXPECT_FALSE(refused.text.has_value());
  EXPECT_EQ(refused.refusal, "is 2097152 bytes, over the 1 MiB limit for a conda configuration");

  const auto metadata =
      dir.write("METADATA", "Name: torch\nVersion: 2.10.0\n\n" + std::string(1024 * 1024, 'd'));
  const auto top = read_file_bounded(metadata, file_limits::metadata);
  ASSERT_TRUE(top.text.has_value());
  EXPECT_EQ(top.text->size(), file_limits::metadata.max_bytes);
  EXPECT_EQ(parse_headers(*top.text).at("Version"), "2.10.0");
}

TEST(SmallFiles, LongLinesAreRefusedWhereLinesAreShort) {
  testing::TempDir dir;
  const auto source =
      dir.write("version.py", "__version__ = '" + std::string(30 * 1024, '9') + "'\n");
  const auto read = read_file_bounded(source, file_limits::python_source);
  EXPECT_FALSE(read.text.has_value());
  EXPECT_EQ(read.refusal, "has a line of 30736 bytes, over the 4 KiB limit for a Python source");
  EXPECT_FALSE(read_file_bounded("/nonexistent/file", file_limits::small_text).text.has_value());
  EXPECT_TRUE(read_file_bounded("/nonexistent/file", file_limits::small_text).refusal.empty());
}

TEST(SmallFiles, RefusalsGoToTheInnermostLogOfTheThread) {
  testing::TempDir dir;
  const auto fifo = dir.path() / "METADATA";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const auto good = dir.write("INSTALLER", "pip\n");
  FileProblemLog outer;
  {
    FileProblemLog inner;
    EXPECT_FALSE(read_env_file(fifo, file_limits::metadata).has_value());
    EXPECT_EQ(read_env_file(good, file_limits::small_text), std::optional<std::string>("pip\n"));
    const auto problems = inner.take();
    ASSERT_EQ(problems.size(), 1U);
    EXPECT_EQ(problems[0].path, fifo);
    EXPECT_EQ(problems[0].problem, "is a FIFO, not a regular file");
  }
  EXPECT_TRUE(outer.take().empty());
  // Without any log, a refusal is simply not recorded.
}

// Each scanner meets a megabyte line: linear time, no recursion, no crash
// (std::regex overflowed the stack on 30 KB).
TEST(SmallFiles, ScannersTakeMegabyteLines) {
  const std::string digits(1024 * 1024, '7');
  const auto values = parse_python_assignments("__version__ = '" + digits + "'\n" + "x = '" +
                                               std::string(1024 * 1024, ' ') + "\n" +
                                               std::string(1024 * 1024, 'a') + " = None\n");
  EXPECT_EQ(values.at("__version__")->size(), digits.size());
  EXPECT_FALSE(values.contains("x"));
  EXPECT_EQ(values.size(), 2U);
  EXPECT_EQ(first_release_number(digits), "");
  EXPECT_EQ(first_release_number(digits + ".1"), digits + ".1");
  EXPECT_EQ(first_release_number(std::string(1024 * 1024, '.') + "3.10.13.final.0"), "3.10.13");
  EXPECT_EQ(first_release_number("version_info = 3.10.13.final.0"), "3.10.13");
  EXPECT_EQ(first_release_number("3..1 and 2.7"), "2.7");
  EXPECT_TRUE(is_python_identifier("torch_C"));
  EXPECT_FALSE(is_python_identifier("2to3"));
  EXPECT_FALSE(is_python_identifier(std::string(1024 * 1024, 'a') + "-"));
  EXPECT_EQ(parse_headers("Name: " + digits + "\n").at("Name").size(), digits.size());
  EXPECT_EQ(parse_key_values("version = " + digits + "\n").at("version").size(), digits.size());
}

TEST(SmallFiles, AssignmentsOnlyOfPlainLiterals) {
  const auto values = parse_python_assignments(
      "a = 'x\\'y'\n"          // an escape: not read
      "b == 'z'\n"             // a comparison
      "c = 'open\n"            // unterminated
      "d = None2\n"            // not None
      "e = \"ok\"   # note\n"  // a comment after
      "f: str = 'typed'\n"
      "g = 'one' 'two'\n");  // implicit concatenation: not a plain literal
  EXPECT_EQ(values.size(), 2U);
  EXPECT_EQ(values.at("e"), std::optional<std::string>("ok"));
  EXPECT_EQ(values.at("f"), std::optional<std::string>("typed"));
}

}  // namespace
}  // namespace envcontract::probes
