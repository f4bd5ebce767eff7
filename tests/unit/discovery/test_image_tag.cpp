// discovery/image_tag.cpp: the host's image reference, read from a file, an
// environment variable or a command, none of which is trusted.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "discovery/image_tag.hpp"
#include "process/process_runner.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::discovery {
namespace {

namespace fs = std::filesystem;
using Kind = ImageTagSource::Kind;
using Clock = std::chrono::steady_clock;

constexpr const char* k_variable = "ENVCONTRACT_TEST_IMAGE_TAG";

// A variable of the agent's own environment, for one test.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : m_name(name) { ::setenv(name, value, 1); }
  ~ScopedVariable() { ::unsetenv(m_name); }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* m_name;
};

ImageTag from_file(const fs::path& path) {
  return read_image_tag({Kind::file, path.string()});
}

ImageTag from_command(const std::string& command) {
  return read_image_tag({Kind::command, command});
}

TEST(ImageTag, NoSourceGivesNoTagAndSaysSo) {
  const auto tag = read_image_tag({});
  EXPECT_EQ(tag.value, "");
  EXPECT_NE(tag.problem, "");
}

// Hand-edited files have comments, blank lines, stray spaces and CRLF.
TEST(ImageTag, AFileGivesItsFirstLineThatIsNeitherBlankNorAComment) {
  testing::TempDir dir;
  const auto path =
      dir.write("image",
                "# the image this host was built from\r\n\r\n \t \n   # indented note\n"
                "  harbor.example/flagos/runtime:2.1.2 \r\nharbor.example/other:1\n");
  const auto tag = from_file(path);
  EXPECT_EQ(tag.value, "harbor.example/flagos/runtime:2.1.2");
  EXPECT_EQ(tag.source, "file " + path.string());
  EXPECT_EQ(tag.problem, "");
}

TEST(ImageTag, AFileWithNoReferenceGivesAProblem) {
  testing::TempDir dir;
  for (const std::string& text :
       std::vector<std::string>{"", "# only a comment\n\n", " \t\n\r\n"}) {
    const auto tag = from_file(dir.write("image", text));
    EXPECT_EQ(tag.value, "") << text;
    EXPECT_NE(tag.problem, "") << text;
  }
}

TEST(ImageTag, AMissingFileGivesAProblemNotATag) {
  testing::TempDir dir;
  const auto path = dir.path() / "absent";
  const auto tag = from_file(path);
  EXPECT_EQ(tag.value, "");
  EXPECT_EQ(tag.source, "file " + path.string());
  EXPECT_NE(tag.problem, "");
}

// A FIFO with no writer would block the scan for good if it were opened.
TEST(ImageTag, WhatIsNotARegularFileIsRefusedWithoutBlocking) {
  testing::TempDir dir;
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  for (const fs::path& path : {fifo, dir.path()}) {
    const auto started = Clock::now();
    const auto tag = from_file(path);
    EXPECT_LT(Clock::now() - started, std::chrono::seconds(2)) << path;
    EXPECT_EQ(tag.value, "") << path;
    EXPECT_NE(tag.problem, "") << path;
  }
}

// Any user may have written the file: one far bigger than a reference, or
// with an absurd line, is refused whole, even when its first line is fine.
TEST(ImageTag, AnOversizedFileIsRefusedWhole) {
  testing::TempDir dir;
  std::string padded = "harbor.example/flagos/runtime:2.1.2\n";
  while (padded.size() <= 64 * 1024) {
    padded += "# padding\n";
  }
  const std::string long_line =
      "harbor.example/flagos/runtime:2.1.2\n# " + std::string(8192, 'x') + "\n";
  for (const auto& [name, text] : {std::pair{"padded", padded}, std::pair{"long", long_line}}) {
    const auto tag = from_file(dir.write(name, text));
    EXPECT_EQ(tag.value, "") << name;
    EXPECT_NE(tag.problem, "") << name;
  }
}

// The line is taken as bytes: a NUL does not end it early.
TEST(ImageTag, BinaryBytesOfTheFirstLineAreKeptWhole) {
  testing::TempDir dir;
  const std::string line("\x01\x02\0image\xff", 9);
  const auto tag = from_file(dir.write("image", line + "\n\x89PNG\r\n\x1a\n"));
  EXPECT_EQ(tag.value, line);
  EXPECT_EQ(tag.value.size(), 9U);
  EXPECT_EQ(tag.problem, "");
}

TEST(ImageTag, AVariableGivesItsTrimmedValue) {
  const ScopedVariable variable(k_variable, "  harbor.example/flagos/runtime:2.1.2 \n");
  const auto tag = read_image_tag({Kind::environment, k_variable});
  EXPECT_EQ(tag.value, "harbor.example/flagos/runtime:2.1.2");
  EXPECT_EQ(tag.source, std::string("environment ") + k_variable);
  EXPECT_EQ(tag.problem, "");
}

TEST(ImageTag, AnUnsetOrBlankVariableGivesAProblem) {
  ::unsetenv(k_variable);
  const auto unset = read_image_tag({Kind::environment, k_variable});
  EXPECT_EQ(unset.value, "");
  EXPECT_NE(unset.problem, "");
  const ScopedVariable variable(k_variable, " \t\n");
  const auto blank = read_image_tag({Kind::environment, k_variable});
  EXPECT_EQ(blank.value, "");
  EXPECT_NE(blank.problem, "");
}

TEST(ImageTag, ACommandGivesItsFirstMeaningfulLine) {
  const std::string command =
      "printf '# from the registry\\n\\n  harbor.example/flagos/runtime:2.1.2  \\nignored\\n'";
  const auto tag = from_command(command);
  EXPECT_EQ(tag.value, "harbor.example/flagos/runtime:2.1.2");
  EXPECT_EQ(tag.source, "command " + command);
  EXPECT_EQ(tag.problem, "");
}

// The command sees none of the agent's environment, only the system PATH.
TEST(ImageTag, TheCommandRunsWithACleanEnvironment) {
  const ScopedVariable variable(k_variable, "leaked");
  const auto tag = from_command(std::string("printf '%s|%s\\n' \"${") + k_variable +
                                ":-not-inherited}\" \"$PATH\"");
  EXPECT_EQ(tag.value, std::string("not-inherited|") + process::k_system_path);
  EXPECT_EQ(tag.problem, "");
}

// Output of a command that failed is no reference, whatever it printed;
// what it said on stderr is the reason.
TEST(ImageTag, AFailingCommandGivesItsErrorNotItsOutput) {
  const auto failed = from_command(
      "echo harbor.example/flagos/runtime:2.1.2; echo registry unreachable >&2; exit 3");
  EXPECT_EQ(failed.value, "");
  EXPECT_NE(failed.problem.find("registry unreachable"), std::string::npos) << failed.problem;
  const auto missing = from_command("/nonexistent/envcontract-image-tool");
  EXPECT_EQ(missing.value, "");
  EXPECT_NE(missing.problem, "");
}

TEST(ImageTag, ACommandThatPrintsNoReferenceGivesAProblem) {
  for (const std::string command : {"true", "echo '# nothing here'; echo", "printf '\\n\\t\\n'"}) {
    const auto tag = from_command(command);
    EXPECT_EQ(tag.value, "") << command;
    EXPECT_NE(tag.problem, "") << command;
  }
}

// Output is bounded (its head is kept): a flood after the reference still
// gives the reference, without holding the flood.
TEST(ImageTag, AFloodingCommandStillGivesItsFirstLine) {
  const auto tag = from_command(
      "echo harbor.example/flagos/runtime:2.1.2; head -c 4000000 /dev/zero | tr '\\0' x");
  EXPECT_EQ(tag.value, "harbor.example/flagos/runtime:2.1.2");
  EXPECT_EQ(tag.problem, "");
}

// A child left running with the command's stdout must not hold the scan
// until the 10 s timeout.
TEST(ImageTag, ACommandThatLeavesAChildHoldingItsOutputReturnsPromptly) {
  const auto started = Clock::now();
  const auto tag = from_command("sleep 30 & echo harbor.example/flagos/runtime:2.1.2");
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(5));
  EXPECT_EQ(tag.value, "harbor.example/flagos/runtime:2.1.2");
  EXPECT_EQ(tag.problem, "");
}

}  // namespace
}  // namespace envcontract::discovery
