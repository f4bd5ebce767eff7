// daemon/ready_file.cpp: the URL a started server is reached at, written to
// the ready file whole (through a rename) and then told to systemd; real
// files and a socket standing where systemd's would be.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "daemon/ready_file.hpp"
#include "tests/support/notify_socket.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::daemon {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ReadyFile, TheServedUrlNamesTheBoundPortAndBracketsIpv6Hosts) {
  EXPECT_EQ(served_url({"127.0.0.1", 8080}, 8080), "http://127.0.0.1:8080/");
  EXPECT_EQ(served_url({"::1", 9100}, 9100), "http://[::1]:9100/");
  EXPECT_EQ(served_url({"fd00:1::20", 80}, 80), "http://[fd00:1::20]:80/");
  EXPECT_EQ(served_url({"localhost", 443}, 443), "http://localhost:443/");
  // Port 0 asks for any port: the URL has the one bound.
  EXPECT_EQ(served_url({"127.0.0.1", 0}, 41234), "http://127.0.0.1:41234/");
}

TEST(ReadyFile, WritesTheUrlAndANewlineAndNothingElse) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "ready";
  const auto written = write_ready_file(file, "http://127.0.0.1:41234/");
  ASSERT_TRUE(written.ok()) << written.error();
  EXPECT_EQ(written.value(), file);
  EXPECT_EQ(read_text(file), "http://127.0.0.1:41234/\n");
  EXPECT_EQ(entries(dir.path()), (std::vector<fs::path>{"ready"})) << "no temporary file left";
}

// A reader that opened the old file keeps reading it whole: the new one
// replaces it by a rename, and is never written over it in place.
TEST(ReadyFile, ReplacesAnOldFileWholeInsteadOfWritingOverIt) {
  testing::TempDir dir;
  const fs::path file = dir.write("ready", "http://[::1]:9100/ from the previous start\n");
  const fs::path reader = dir.path() / "reader";
  fs::create_hard_link(file, reader);  // stands for the old file as a reader holds it
  struct stat before {};
  ASSERT_EQ(::stat(file.c_str(), &before), 0);

  const auto written = write_ready_file(file, "http://127.0.0.1:8080/");
  ASSERT_TRUE(written.ok()) << written.error();
  EXPECT_EQ(read_text(file), "http://127.0.0.1:8080/\n");
  EXPECT_EQ(read_text(reader), "http://[::1]:9100/ from the previous start\n");
  struct stat after {};
  ASSERT_EQ(::stat(file.c_str(), &after), 0);
  EXPECT_NE(after.st_ino, before.st_ino);
  EXPECT_EQ(entries(dir.path()), (std::vector<fs::path>{"reader", "ready"}));
}

TEST(ReadyFile, NoFileGivenNothingIsWritten) {
  const auto written = write_ready_file({}, "http://127.0.0.1:8080/");
  ASSERT_TRUE(written.ok()) << written.error();
  EXPECT_EQ(written.value(), fs::path());
}

// Root may write into any directory by its mode; a missing directory, a
// file where a directory should be and procfs refuse it too.
TEST(ReadyFile, AFileThatCannotBeMadeIsAnErrorNamingItAndLeavesNothing) {
  testing::TempDir dir;
  const fs::path plain = dir.write("plain", "");
  for (const fs::path& file :
       {dir.path() / "absent" / "ready", plain / "ready", fs::path("/proc/envcontract-ready")}) {
    const auto written = write_ready_file(file, "http://127.0.0.1:8080/");
    ASSERT_FALSE(written.ok()) << file;
    EXPECT_NE(written.error().find(file.string()), std::string::npos) << written.error();
    std::error_code ignored;
    EXPECT_FALSE(fs::exists(file, ignored)) << file;
  }
  EXPECT_EQ(entries(dir.path()), (std::vector<fs::path>{"plain"}));
}

// The temporary file is written, but the rename over the name fails (a
// directory stands there): the temporary file is removed and the directory
// left as it was.
TEST(ReadyFile, ARenameThatFailsLeavesNoTemporaryFileBehind) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "ready";
  dir.write("ready/kept", "x");
  const auto written = write_ready_file(file, "http://127.0.0.1:8080/");
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.error().find(file.string()), std::string::npos) << written.error();
  EXPECT_EQ(entries(dir.path()), (std::vector<fs::path>{"ready"}));
  EXPECT_TRUE(fs::is_directory(file));
  EXPECT_EQ(read_text(file / "kept"), "x");
}

// systemd hears READY=1 only once the file is there for scripts to read,
// and not at all when it could not be written (the start-up fails).
TEST(ReadyFile, SystemdIsToldReadyOnlyOnceTheFileIsWritten) {
  testing::TempDir dir;
  testing::NotifySocket systemd(dir.path() / "notify");
  const auto ready = [](const std::vector<std::string>& messages) {
    return testing::count_messages(messages, "READY=1") > 0;
  };

  const auto failed = announce_ready(dir.path() / "absent" / "ready", "http://127.0.0.1:8080/");
  EXPECT_FALSE(failed.ok());
  const auto after_failure = systemd.receive(300ms, ready);
  EXPECT_EQ(testing::count_messages(after_failure, "READY=1"), 0U)
      << ::testing::PrintToString(after_failure);

  const fs::path file = dir.path() / "ready";
  const auto announced = announce_ready(file, "http://127.0.0.1:8080/");
  ASSERT_TRUE(announced.ok()) << announced.error();
  EXPECT_EQ(announced.value(), file);
  EXPECT_EQ(read_text(file), "http://127.0.0.1:8080/\n");
  const auto told = systemd.receive(5s, ready);
  EXPECT_EQ(testing::count_messages(told, "READY=1"), 1U) << ::testing::PrintToString(told);

  // No file asked for: systemd is told all the same.
  const auto without_file = announce_ready({}, "http://127.0.0.1:8080/");
  ASSERT_TRUE(without_file.ok()) << without_file.error();
  EXPECT_EQ(without_file.value(), fs::path());
  const auto told_again = systemd.receive(5s, ready);
  EXPECT_EQ(testing::count_messages(told_again, "READY=1"), 1U)
      << ::testing::PrintToString(told_again);
}

}  // namespace
}  // namespace envcontract::daemon
