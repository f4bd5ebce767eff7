// daemon/secret_file.cpp: a secret (the API token, a webhook's key) read from
// a file of its own, which must be private to the agent's user and hold one
// value on one line; real files, modes and owners.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "daemon/secret_file.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::daemon {
namespace {

namespace fs = std::filesystem;

const std::string k_what = "token file";

fs::path secret_at(const testing::TempDir& dir, const std::string& name, const std::string& text,
                   mode_t mode = 0600) {
  const fs::path path = dir.write(name, text);
  EXPECT_EQ(::chmod(path.c_str(), mode), 0) << path;
  return path;
}

// A refusal names the file (absolute) and what it is for, and never shows
// the secret itself: errors go to logs others read.
void expect_refused(const common::Result<std::string>& read, const fs::path& shown,
                    const std::string& secret) {
  ASSERT_FALSE(read.ok()) << "read " << shown;
  EXPECT_EQ(read.error_code(), common::ErrorCode::failed);
  EXPECT_NE(read.error().find(k_what + " " + shown.string()), std::string::npos) << read.error();
  if (!secret.empty()) {
    EXPECT_EQ(read.error().find(secret), std::string::npos) << read.error();
  }
}

TEST(SecretFile, ReadsTheValueWithoutItsLineEnd) {
  testing::TempDir dir;
  for (const char* text : {"3f9a0c\n", "3f9a0c", "3f9a0c\r\n", "3f9a0c\n\n  \n"}) {
    const auto read = read_secret_file(secret_at(dir, "token", text), k_what);
    ASSERT_TRUE(read.ok()) << read.error();
    EXPECT_EQ(read.value(), "3f9a0c");
  }
}

// Several reads' worth (the file is read 4 KiB at a time) come back whole.
TEST(SecretFile, ReadsALongValueWhole) {
  testing::TempDir dir;
  const std::string value(3 * 4096 + 17, 'k');
  const auto read = read_secret_file(secret_at(dir, "token", value + "\n"), k_what);
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ(read.value(), value);
}

// The check is on the mode bits, not on whether the reader could open it:
// the agent runs as root in tests, and root reads any file.
TEST(SecretFile, AcceptsAFileOnlyItsOwnerMayUse) {
  testing::TempDir dir;
  for (const mode_t mode : {0600, 0400, 0700, 0500}) {
    const auto read =
        read_secret_file(secret_at(dir, "token-" + std::to_string(mode), "s3cret\n", mode), k_what);
    ASSERT_TRUE(read.ok()) << std::oct << mode << ": " << read.error();
    EXPECT_EQ(read.value(), "s3cret");
  }
}

TEST(SecretFile, RefusesAFileTheGroupOrOthersMayUse) {
  testing::TempDir dir;
  for (const mode_t mode : {0640, 0604, 0620, 0602, 0610, 0601, 0660, 0644, 0666, 0777}) {
    const fs::path path = secret_at(dir, "token", "s3cret\n", mode);
    const auto read = read_secret_file(path, k_what);
    expect_refused(read, path, "s3cret");
    char shown_mode[8];
    std::snprintf(shown_mode, sizeof shown_mode, "%04o", static_cast<unsigned>(mode));
    EXPECT_NE(read.error().find(std::string("mode ") + shown_mode), std::string::npos)
        << read.error();
  }
}

// Whoever owns the file knows the secret, however private its mode: a file
// of another user is refused even to root.
TEST(SecretFile, RefusesAFileOfAnotherOwner) {
  testing::TempDir dir;
  const fs::path path = secret_at(dir, "token", "s3cret\n");
  const uid_t other = ::geteuid() + 12345;
  if (::chown(path.c_str(), other, static_cast<gid_t>(-1)) != 0) {
    GTEST_SKIP() << "chown(2) to another user needs root: this test runs as root in CI";
  }
  const auto read = read_secret_file(path, k_what);
  expect_refused(read, path, "s3cret");
  EXPECT_NE(read.error().find("uid " + std::to_string(other)), std::string::npos) << read.error();

  // Reached through a link of the agent's own user: the file reached is judged.
  const fs::path link = dir.path() / "token-link";
  fs::create_symlink(path, link);
  expect_refused(read_secret_file(link, k_what), link, "s3cret");
}

// Config management and secret volumes link their files: the link is
// followed, and what it leads to must pass.
TEST(SecretFile, FollowsALinkAndJudgesTheFileItLeadsTo) {
  testing::TempDir dir;
  const fs::path link = dir.path() / "token";
  fs::create_symlink(secret_at(dir, "volume/..data/token", "s3cret\n"), link);
  const auto read = read_secret_file(link, k_what);
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ(read.value(), "s3cret");

  const fs::path open_link = dir.path() / "open-token";
  fs::create_symlink(secret_at(dir, "volume/open", "s3cret\n", 0644), open_link);
  expect_refused(read_secret_file(open_link, k_what), open_link, "s3cret");
}

// A FIFO would block a plain open until a writer came: refused at once.
TEST(SecretFile, RefusesWhatIsNotARegularFile) {
  testing::TempDir dir;
  const fs::path fifo = dir.path() / "token-fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(read_secret_file(fifo, k_what), fifo, "");
  const fs::path directory = dir.path() / "token-dir";
  fs::create_directory(directory);
  fs::permissions(directory, fs::perms::owner_all);
  expect_refused(read_secret_file(directory, k_what), directory, "");
}

TEST(SecretFile, AMissingFileIsNamedAbsoluteAndNormalised) {
  testing::TempDir dir;
  fs::create_directory(dir.path() / "sub");
  const auto read = read_secret_file(dir.path() / "sub/../missing", "webhook secret file");
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().find("webhook secret file " + (dir.path() / "missing").string()),
            std::string::npos)
      << read.error();
}

TEST(SecretFile, RefusesAnythingButOneValueOnOneLine) {
  testing::TempDir dir;
  for (const char* text : {"", "\n", "  \n\t\n", "two words\n", "tab\tin\n", "line1\nline2\n",
                           " leading\n", "carriage\rreturn\n"}) {
    const fs::path path = secret_at(dir, "token", text);
    expect_refused(read_secret_file(path, k_what), path, "");
  }
}

// A file past the bound (64 KiB) is refused whole, never cut: cut, a first
// line that fills the bound would hide the lines after it (two values taken
// as one), and a longer key would not be the file's.
TEST(SecretFile, AFileTooLongToReadWholeIsRefusedNotCut) {
  testing::TempDir dir;
  const std::string first(64 * 1024, 'a');
  const auto two_lines = read_secret_file(secret_at(dir, "token", first + "\nsecond\n"), k_what);
  EXPECT_FALSE(two_lines.ok()) << "two lines accepted as the value of its first";

  const std::string longer(70000, 'b');
  const auto cut = read_secret_file(secret_at(dir, "long-token", longer + "\n"), k_what);
  ASSERT_FALSE(cut.ok()) << "read as " << cut.value().size() << " of " << longer.size() << " bytes";
  EXPECT_NE(cut.error().find("more than 64 KiB"), std::string::npos) << cut.error();
}

}  // namespace
}  // namespace envcontract::daemon
