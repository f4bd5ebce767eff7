// loader/ld_cache.cpp: /etc/ld.so.cache read as the dynamic loader reads it,
// the host's own and crafted ones (truncated, foreign, pointing off the file).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loader/ld_cache.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::loader {
namespace {

namespace fs = std::filesystem;

using Library = std::pair<std::string, std::string>;  // soname, path as the cache holds it
using Paths = std::vector<fs::path>;

// glibc's cache_file_new as ldconfig writes it: magic and version, nlibs (at
// 20), len_strings (at 24), flags, extension offset and unused words make 48
// bytes; then 24-byte entries (flags, key, value, osversion, hwcap); then the
// strings, at offsets counted from the header's first byte.
constexpr std::string_view k_magic = "glibc-ld.so.cache1.1";
constexpr std::size_t k_header_size = 48;
constexpr std::size_t k_entry_size = 24;
constexpr std::uint32_t k_libc6_x86_64 = 0x0303;  // FLAG_ELF_LIBC6 | FLAG_X8664_LIB64

struct RawEntry {
  std::uint32_t key;    // offset of the soname
  std::uint32_t value;  // offset of the path
};

void put_u32(std::string& bytes, std::size_t offset, std::uint32_t value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

// A header saying `count` entries, `entries`, then `strings`.
std::string raw_cache(std::uint32_t count, const std::vector<RawEntry>& entries,
                      const std::string& strings, std::string_view magic = k_magic) {
  std::string bytes(k_header_size, '\0');
  bytes.replace(0, magic.size(), magic);
  put_u32(bytes, 20, count);
  put_u32(bytes, 24, static_cast<std::uint32_t>(strings.size()));
  for (const RawEntry& raw : entries) {
    std::string entry(k_entry_size, '\0');
    put_u32(entry, 0, k_libc6_x86_64);
    put_u32(entry, 4, raw.key);
    put_u32(entry, 8, raw.value);
    bytes += entry;
  }
  return bytes + strings;
}

// Where the strings of a cache of `entries` entries begin.
std::uint32_t strings_start(std::size_t entries) {
  return static_cast<std::uint32_t>(k_header_size + entries * k_entry_size);
}

// A well-formed cache of `libraries`, in that order, claiming `count`
// entries (by default as many as there are).
std::string cache_of(const std::vector<Library>& libraries,
                     std::optional<std::uint32_t> count = std::nullopt) {
  const std::uint32_t start = strings_start(libraries.size());
  std::vector<RawEntry> entries;
  std::string strings;
  for (const auto& [soname, path] : libraries) {
    RawEntry entry{};
    entry.key = start + static_cast<std::uint32_t>(strings.size());
    strings += soname + '\0';
    entry.value = start + static_cast<std::uint32_t>(strings.size());
    strings += path + '\0';
    entries.push_back(entry);
  }
  return raw_cache(count.value_or(static_cast<std::uint32_t>(libraries.size())), entries, strings);
}

// What `ldconfig -p` lists for the cache at `path`, in its order: glibc's
// own reading of it. nullopt when ldconfig is not there or refuses the file.
std::optional<std::vector<Library>> ldconfig_listing(const fs::path& path) {
  const fs::path ldconfig = "/sbin/ldconfig";
  if (!fs::exists(ldconfig)) {
    return std::nullopt;
  }
  const auto listed = testing::run_command({ldconfig.string(), "-p", "-C", path.string()});
  if (listed.exit_code != 0) {
    return std::nullopt;
  }
  // "N libs found in cache `PATH'", then "\tSONAME (FLAGS) => PATH" lines.
  std::vector<Library> libraries;
  std::size_t start = listed.out.find('\n');
  while (start != std::string::npos && start + 1 < listed.out.size()) {
    const std::size_t end = listed.out.find('\n', start + 1);
    const std::string line = listed.out.substr(start + 1, end - start - 1);
    start = end;
    const auto flags = line.find(" (");
    const auto arrow = line.rfind(" => ");
    if (flags == std::string::npos || arrow == std::string::npos) {
      continue;
    }
    const auto name_start = line.find_first_not_of('\t');
    libraries.emplace_back(line.substr(name_start, flags - name_start), line.substr(arrow + 4));
  }
  return libraries;
}

const fs::path k_host_cache = "/etc/ld.so.cache";

TEST(LdCache, TheHostsCacheResolvesLibcToAFileThatExists) {
  if (!fs::exists(k_host_cache)) {
    GTEST_SKIP() << k_host_cache << " does not exist on this machine";
  }
  const auto cache = LdCache::load(k_host_cache);
  EXPECT_EQ(cache.problem(), "");
  const Paths libc = cache.lookup("libc.so.6");
  ASSERT_FALSE(libc.empty()) << "every glibc system caches libc.so.6";
  for (const fs::path& path : libc) {
    EXPECT_TRUE(path.is_absolute()) << path;
  }
  // One of them (the others may be multilib ones) is a real file.
  EXPECT_TRUE(std::any_of(libc.begin(), libc.end(),
                          [](const fs::path& path) { return fs::is_regular_file(path); }));
  // The near-miss hints find the same files by their name.
  const Paths named_like = cache.paths_named_like("libc.so.");
  for (const fs::path& path : libc) {
    EXPECT_NE(std::find(named_like.begin(), named_like.end(), path), named_like.end()) << path;
  }
  EXPECT_TRUE(cache.lookup("libenvcontract-no-such-library.so.1").empty());
}

// ldconfig -p is glibc's own reading of the cache: every soname must have
// the same candidates, in the same order (the loader takes the first that
// fits).
TEST(LdCache, TheHostsCacheHoldsWhatLdconfigListsInItsOrder) {
  if (!fs::exists(k_host_cache)) {
    GTEST_SKIP() << k_host_cache << " does not exist on this machine";
  }
  const auto listing = ldconfig_listing(k_host_cache);
  if (!listing || listing->empty()) {
    GTEST_SKIP() << "ldconfig -p cannot list " << k_host_cache << " here";
  }
  std::map<std::string, Paths> expected;
  for (const auto& [soname, path] : *listing) {
    expected[soname].emplace_back(path);
  }
  const auto cache = LdCache::load(k_host_cache);
  EXPECT_EQ(cache.problem(), "");
  EXPECT_EQ(cache.size(), listing->size());
  for (const auto& [soname, paths] : expected) {
    EXPECT_EQ(cache.lookup(soname), paths) << soname;
  }
}

TEST(LdCache, ACacheInLdconfigsFormatIsReadInItsOrder) {
  testing::TempDir dir;
  const std::vector<Library> libraries = {{"libfoo.so.1", "/opt/a/libfoo.so.1"},
                                          {"libbar.so.2", "/usr/lib/libbar.so.2"},
                                          {"libfoo.so.1", "/opt/b/libfoo.so.1"}};
  const auto path = dir.write("ld.so.cache", cache_of(libraries));
  // The crafted file is one glibc reads the same way (where ldconfig is).
  if (const auto listing = ldconfig_listing(path)) {
    EXPECT_EQ(*listing, libraries);
  }
  const auto cache = LdCache::load(path);
  EXPECT_EQ(cache.problem(), "");
  EXPECT_EQ(cache.size(), 3U);
  EXPECT_EQ(cache.lookup("libfoo.so.1"), (Paths{"/opt/a/libfoo.so.1", "/opt/b/libfoo.so.1"}));
  EXPECT_EQ(cache.lookup("libbar.so.2"), (Paths{"/usr/lib/libbar.so.2"}));
}

// The soname must match whole: the loader asks for "libfoo.so.1", never for
// a prefix or an extension of it.
TEST(LdCache, LookupIsByTheWholeSoname) {
  testing::TempDir dir;
  const auto cache =
      LdCache::load(dir.write("ld.so.cache", cache_of({{"libfoo.so.1", "/opt/a/libfoo.so.1"}})));
  ASSERT_EQ(cache.size(), 1U);
  EXPECT_TRUE(cache.lookup("libfoo.so").empty());
  EXPECT_TRUE(cache.lookup("libfoo.so.1.0").empty());
  EXPECT_TRUE(cache.lookup("LIBFOO.SO.1").empty());
  EXPECT_TRUE(cache.lookup("").empty());
}

// Hints look at the file name only: a directory named like the library is
// no near miss.
TEST(LdCache, PathsNamedLikeComparesTheFileNameInCacheOrder) {
  testing::TempDir dir;
  const auto cache = LdCache::load(
      dir.write("ld.so.cache", cache_of({{"libfoo.so.2", "/opt/a/libfoo.so.2"},
                                         {"libbar.so.2", "/opt/libfoo-dir/libbar.so.2"},
                                         {"libfoo.so.1", "/opt/a/libfoo.so.1"},
                                         {"libfoo.so.3", "libfoo.so.3"}})));  // no directory at all
  ASSERT_EQ(cache.size(), 4U);
  EXPECT_EQ(cache.paths_named_like("libfoo.so."),
            (Paths{"/opt/a/libfoo.so.2", "/opt/a/libfoo.so.1", "libfoo.so.3"}));
  EXPECT_EQ(cache.paths_named_like("libbar"), (Paths{"/opt/libfoo-dir/libbar.so.2"}));
  EXPECT_TRUE(cache.paths_named_like("libfoo-dir").empty());
  EXPECT_TRUE(cache.paths_named_like("libbaz").empty());
  EXPECT_EQ(cache.paths_named_like("").size(), 4U);
}

// Older glibc wrote the libc5 format first and the new one after it; the
// loader reads the new part, whose string offsets count from its own header.
TEST(LdCache, AnOlderFormatPrefixIsSkipped) {
  testing::TempDir dir;
  std::string old_format = "ld.so-1.7.0";
  old_format.resize(16, '\0');  // glibc's struct cache_file: magic, padding, nlibs = 0
  const auto cache = LdCache::load(
      dir.write("ld.so.cache", old_format + cache_of({{"libfoo.so.1", "/opt/a/libfoo.so.1"}})));
  EXPECT_EQ(cache.problem(), "");
  EXPECT_EQ(cache.lookup("libfoo.so.1"), (Paths{"/opt/a/libfoo.so.1"}));
}

// A container's cache names the container's files: they are returned under
// its rootfs, and ".." cannot lead out of it to the host's.
TEST(LdCache, PathsAreReturnedUnderTheRootTheCacheBelongsTo) {
  testing::TempDir dir;
  const fs::path root = "/srv/rootfs";
  const auto cache = LdCache::load(
      dir.write("ld.so.cache", cache_of({{"libz.so.1", "/usr/lib/libz.so.1"},
                                         {"librel.so.1", "lib/librel.so.1"},
                                         {"libevil.so.1", "/../../etc/libevil.so.1"}})),
      root);
  EXPECT_EQ(cache.problem(), "");
  EXPECT_EQ(cache.lookup("libz.so.1"), (Paths{"/srv/rootfs/usr/lib/libz.so.1"}));
  EXPECT_EQ(cache.lookup("librel.so.1"), (Paths{"/srv/rootfs/lib/librel.so.1"}));
  EXPECT_EQ(cache.lookup("libevil.so.1"), (Paths{"/srv/rootfs/etc/libevil.so.1"}));
  EXPECT_EQ(cache.paths_named_like("libz"), (Paths{"/srv/rootfs/usr/lib/libz.so.1"}));
}

TEST(LdCache, ACacheThatCannotBeReadIsEmptyWithAProblem) {
  testing::TempDir dir;
  const fs::path fifo = dir.path() / "fifo.cache";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  fs::create_directories(dir.path() / "directory.cache");
  for (const fs::path& path :
       {dir.path() / "missing.cache", dir.path() / "directory.cache", fifo}) {
    // A FIFO with no writer would block an open for reading for good.
    const auto started = std::chrono::steady_clock::now();
    const auto cache = LdCache::load(path);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2)) << path;
    EXPECT_EQ(cache.size(), 0U) << path;
    EXPECT_NE(cache.problem(), "") << path;
  }
}

// Bigger than any real cache (the bound is 64 MiB): refused before it is
// read. Sparse, so the test writes almost nothing.
TEST(LdCache, ACacheTooLargeToBeRealIsNotRead) {
  testing::TempDir dir;
  const auto path = dir.write("ld.so.cache", cache_of({{"libfoo.so.1", "/opt/a/libfoo.so.1"}}));
  fs::resize_file(path, 65 * 1024 * 1024);
  const auto cache = LdCache::load(path);
  EXPECT_EQ(cache.size(), 0U);
  EXPECT_TRUE(cache.lookup("libfoo.so.1").empty());
  EXPECT_NE(cache.problem(), "");
}

TEST(LdCache, WhatIsNotACacheIsEmptyWithAProblem) {
  testing::TempDir dir;
  const std::string valid = cache_of({{"libfoo.so.1", "/opt/a/libfoo.so.1"}});
  std::string garbage(4096, '\0');
  for (std::size_t i = 0; i < garbage.size(); ++i) {
    garbage[i] = static_cast<char>(i * 37 % 251);
  }
  std::string old_only = "ld.so-1.7.0";
  old_only.resize(16, '\0');  // an old-format cache of no entries, with no new one after it
  const std::map<std::string, std::string> files = {
      {"empty", ""},
      {"garbage", garbage},
      {"text", "libfoo.so.1 => /opt/a/libfoo.so.1\n"},
      {"version 1.0", "glibc-ld.so.cache1.0" + valid.substr(k_magic.size())},
      {"old format only", old_only},
      {"magic alone", std::string(k_magic)},
      {"header cut short", valid.substr(0, k_header_size - 1)},
  };
  for (const auto& [name, bytes] : files) {
    const auto cache = LdCache::load(dir.write(name, bytes));
    EXPECT_EQ(cache.size(), 0U) << name;
    EXPECT_NE(cache.problem(), "") << name;
  }
}

// An entry whose soname or path lies off the file, or runs off its end with
// no NUL, is dropped; the entries around it are kept.
TEST(LdCache, EntriesWhoseStringsLieOffTheFileAreDropped) {
  testing::TempDir dir;
  const std::uint32_t start = strings_start(6);
  std::string strings;
  // Appends `text` to the string table and returns its offset.
  const auto add = [&](const std::string& text, bool terminated) {
    const auto offset = start + static_cast<std::uint32_t>(strings.size());
    strings += text;
    if (terminated) {
      strings += '\0';
    }
    return offset;
  };
  const std::uint32_t ok_key = add("libok.so.1", true);
  const std::uint32_t ok_value = add("/opt/libok.so.1", true);
  const std::uint32_t empty = add("", true);
  const std::uint32_t tail = add("libtail.so", false);  // runs to the end of the file
  const std::uint32_t end = start + static_cast<std::uint32_t>(strings.size());
  const auto cache = LdCache::load(dir.write("ld.so.cache", raw_cache(6,
                                                                      {{0xFFFFFFF0U, ok_value},
                                                                       {ok_key, end},
                                                                       {ok_key, ok_value},
                                                                       {tail, ok_value},
                                                                       {empty, ok_value},
                                                                       {ok_key, 0xFFFFFFFFU}},
                                                                      strings)));
  EXPECT_EQ(cache.size(), 1U);
  EXPECT_EQ(cache.lookup("libok.so.1"), (Paths{"/opt/libok.so.1"}));
  EXPECT_TRUE(cache.lookup("libtail.so").empty());
  EXPECT_TRUE(cache.lookup("").empty());
  EXPECT_EQ(cache.paths_named_like(""), (Paths{"/opt/libok.so.1"}));
}

// glibc's loader refuses a whole cache whose header counts more entries than
// the file holds ("Check for corruption" in dl-cache.c), and the header of
// LdCache promises corrupt caches are empty.
// Entries read before the end are not kept either: they would resolve
// libraries the real loader does not find through that cache.
TEST(LdCache, ATruncatedCacheIsRejectedWhole) {
  testing::TempDir dir;
  const std::vector<Library> libraries = {{"libfoo.so.1", "/opt/a/libfoo.so.1"},
                                          {"libbar.so.2", "/usr/lib/libbar.so.2"}};
  for (const std::uint32_t count : {5U, 0xFFFFFFFFU}) {
    const auto cache = LdCache::load(dir.write("ld.so.cache", cache_of(libraries, count)));
    EXPECT_NE(cache.problem(), "") << count;
    EXPECT_EQ(cache.size(), 0U) << count;
    EXPECT_TRUE(cache.lookup("libfoo.so.1").empty()) << count;
  }
}

// glibc (the loader, and ldconfig -p: "File is not a cache file") looks for
// the magic at the start of the file, or right after an old-format cache;
// any other file merely containing a cache is no cache.
TEST(LdCache, AFileThatMerelyContainsACacheIsNotOne) {
  testing::TempDir dir;
  const auto cache = LdCache::load(dir.write(
      "ld.so.cache", "not a loader cache\n" + cache_of({{"libfoo.so.1", "/opt/a/libfoo.so.1"}})));
  EXPECT_NE(cache.problem(), "");
  EXPECT_EQ(cache.size(), 0U);
}

}  // namespace
}  // namespace envcontract::loader
