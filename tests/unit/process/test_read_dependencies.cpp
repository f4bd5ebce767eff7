// process/read_dependencies.cpp: what each read depended on (trees, a
// directory's entries, single paths), recorded per thread, compacted, and
// followed through the symbolic links on the way.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include "process/read_dependencies.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::process {
namespace {

namespace fs = std::filesystem;
using Paths = std::set<fs::path>;

// The temporary directory as the kernel names it: a link on the way to it
// (a /tmp that is one) would show up in every chain otherwise.
fs::path real(const testing::TempDir& dir) {
  return fs::canonical(dir.path());
}

// Recording is per thread: a reader on another thread (a stall guard's
// worker, another env's) never adds to this read's dependencies, and
// nothing is recorded once the recording has ended.
TEST(ReadDependencies, EachThreadRecordsOnlyItsOwnReads) {
  ReadDependencies mine;
  ReadDependencies theirs;
  {
    RecordingReads recording(mine);
    std::thread other([&theirs] {
      record_read("/other/thread/without/recording");
      RecordingReads own(theirs);
      record_read("/other/thread/file");
      record_listing("/other/thread");
    });
    other.join();
    record_read("/mine/file");
  }
  record_read("/after/the/recording");
  EXPECT_EQ(mine.paths, Paths{"/mine/file"});
  EXPECT_TRUE(mine.entries.empty());
  EXPECT_EQ(theirs.paths, Paths{"/other/thread/file"});
  EXPECT_EQ(theirs.entries, Paths{"/other/thread"});
}

// A read inside a read (one env's facts inside a scan's) records into the
// inner one; the outer one records again once the inner ends.
TEST(ReadDependencies, AnInnerRecordingTakesOverUntilItEnds) {
  ReadDependencies outer;
  ReadDependencies inner;
  RecordingReads outer_recording(outer);
  record_read("/before");
  {
    RecordingReads inner_recording(inner);
    record_read("/during");
  }
  record_read("/after");
  EXPECT_EQ(outer.paths, (Paths{"/before", "/after"}));
  EXPECT_EQ(inner.paths, Paths{"/during"});
}

// Paths are kept as a watch would match them: "." and ".." resolved
// lexically. An empty entry (a PATH ending in ':') read nothing, so it is
// neither a path nor a reason to distrust the read.
TEST(ReadDependencies, PathsAreKeptNormalAndAnEmptyOneIsNothing) {
  ReadDependencies dependencies;
  RecordingReads recording(dependencies);
  record_read("/usr/lib/../lib64/./libc.so.6");
  record_listing("/opt//env/bin/.");
  record_read("");
  record_listing("");
  EXPECT_EQ(dependencies.paths, Paths{"/usr/lib64/libc.so.6"});
  EXPECT_EQ(dependencies.entries, Paths{"/opt/env/bin/"});
  EXPECT_EQ(dependencies.incomplete, "");
}

// The first reason a read cannot be trusted is the one kept: a later one
// would hide what happened first.
TEST(ReadDependencies, TheFirstReasonForAnIncompleteReadIsKept) {
  ReadDependencies dependencies;
  RecordingReads recording(dependencies);
  record_listing("bin");
  const std::string first = dependencies.incomplete;
  EXPECT_NE(first.find("(bin)"), std::string::npos) << first;
  record_read("lib/other");
  EXPECT_EQ(dependencies.incomplete, first);
}

// The bound counts single paths and listed directories together: an env
// with many PATH directories cannot push its reads past it uncounted.
TEST(ReadDependencies, PathsAndListingsShareOneBound) {
  ReadDependencies dependencies;
  RecordingReads recording(dependencies);
  const std::size_t half = k_max_recorded_paths / 2;
  for (std::size_t i = 0; i < half; ++i) {
    record_listing("/dir/" + std::to_string(i));
  }
  for (std::size_t i = 0; i < k_max_recorded_paths - half; ++i) {
    record_read("/file/" + std::to_string(i));
  }
  EXPECT_EQ(dependencies.incomplete, "");
  record_listing("/one/more");
  EXPECT_EQ(dependencies.entries.size() + dependencies.paths.size(), k_max_recorded_paths);
  EXPECT_FALSE(dependencies.incomplete.empty());
  EXPECT_FALSE(dependencies.entries.contains("/one/more"));
}

// A tree covers what lies under it by path components, never by a common
// string prefix: /opt/env does not cover /opt/env2. Files are followed by
// identity as well, so compact() leaves them all.
TEST(ReadDependencies, CompactDropsOnlyWhatATreeReallyCovers) {
  ReadDependencies dependencies;
  dependencies.trees = {"/opt/env", "/opt/env/lib", "/opt/env/lib/python3.11", "/opt/env2"};
  dependencies.entries = {"/opt/env/bin", "/opt/env2/bin", "/opt/envx/bin", "/usr/bin"};
  dependencies.paths = {"/opt/env/lib/libz.so", "/opt/env", "/opt/env-other/x", "/usr/lib/x"};
  dependencies.files = {"/opt/env/lib/python3.11/os.py", "/usr/lib/x"};
  dependencies.compact();
  EXPECT_EQ(dependencies.trees, (Paths{"/opt/env", "/opt/env2"}));
  EXPECT_EQ(dependencies.entries, (Paths{"/opt/envx/bin", "/usr/bin"}));
  EXPECT_EQ(dependencies.paths, (Paths{"/opt/env-other/x", "/usr/lib/x"}));
  EXPECT_EQ(dependencies.files, (Paths{"/opt/env/lib/python3.11/os.py", "/usr/lib/x"}));
}

TEST(ReadDependencies, TheWholeFilesystemAsATreeCoversEverything) {
  ReadDependencies dependencies;
  dependencies.trees = {"/", "/opt/env"};
  dependencies.entries = {"/usr/bin"};
  dependencies.paths = {"/etc/ld.so.cache"};
  dependencies.compact();
  EXPECT_EQ(dependencies.trees, Paths{"/"});
  EXPECT_TRUE(dependencies.entries.empty());
  EXPECT_TRUE(dependencies.paths.empty());
}

TEST(ReadDependencies, APathWithoutLinksHasNoLinkChain) {
  testing::TempDir dir;
  dir.write("usr/bin/python3", "");
  EXPECT_TRUE(link_chain(real(dir) / "usr/bin/python3").empty());
  EXPECT_TRUE(link_chain(real(dir) / "absent/python3").empty());
  EXPECT_TRUE(link_chain("usr/bin/python3").empty()) << "relative: names no place";
}

// A relative link is resolved from its own directory, a link in the middle
// of a path is replaced with the rest kept, and ".." in a target climbs
// from where the link lies.
TEST(ReadDependencies, RelativeAndMiddleLinksAreResolvedFromWhereTheyLie) {
  testing::TempDir dir;
  const fs::path root = real(dir);
  dir.write("opt/real/lib/site-packages/torch/__init__.py", "");
  fs::create_directories(root / "env");
  fs::create_symlink("../opt/real/lib", root / "env/lib");
  EXPECT_EQ(link_chain(root / "env/lib/site-packages/torch"),
            (std::vector<fs::path>{root / "opt/real/lib/site-packages/torch"}));

  fs::create_directories(root / "a/b");
  fs::create_symlink("../../opt/real", root / "a/b/up");
  fs::create_symlink("b/up/lib", root / "a/lib");
  EXPECT_EQ(link_chain(root / "a/lib/site-packages"),
            (std::vector<fs::path>{root / "a/b/up/lib/site-packages",
                                   root / "opt/real/lib/site-packages"}));
}

// A link to nothing yet: where it leads is in the chain, so that creating
// it there is seen as a change.
TEST(ReadDependencies, ADanglingLinksTargetIsInItsLinkChain) {
  testing::TempDir dir;
  const fs::path root = real(dir);
  fs::create_directories(root / "env/bin");
  fs::create_symlink(root / "usr/bin/python3.12", root / "env/bin/python");
  EXPECT_EQ(link_chain(root / "env/bin/python"),
            (std::vector<fs::path>{root / "usr/bin/python3.12"}));
}

// A loop of links an env planted ends at the kernel's own bound, not never.
TEST(ReadDependencies, ALoopOfLinksEndsAtTheKernelsBound) {
  testing::TempDir dir;
  const fs::path root = real(dir);
  fs::create_symlink(root / "pong", root / "ping");
  fs::create_symlink(root / "ping", root / "pong");
  const auto chain = link_chain(root / "ping/python");
  ASSERT_EQ(chain.size(), 40U);
  EXPECT_EQ(chain[0], root / "pong/python");
  EXPECT_EQ(chain[1], root / "ping/python");
}

// A tree or a listed directory that is a link is watched where it leads
// too (compact() would otherwise take it as covered by the prefix); a path
// looked for in a directory reached through a link is watched in the real
// directory; anything else adds nothing.
TEST(ReadDependencies, TreesListingsAndMissedPathsAreFollowedThroughLinks) {
  testing::TempDir dir;
  const fs::path root = real(dir);
  fs::create_directories(root / "shared/site-packages");
  fs::create_directories(root / "shared/bin");
  fs::create_directories(root / "real/lib");
  fs::create_directories(root / "env/lib/python3.11");
  fs::create_symlink(root / "shared/site-packages", root / "env/lib/python3.11/site-packages");
  fs::create_symlink(root / "shared/bin", root / "env/bin");
  fs::create_symlink(root / "real/lib", root / "lib");

  ReadDependencies dependencies;
  dependencies.trees = {root / "env", root / "env/lib/python3.11/site-packages"};
  dependencies.entries = {root / "env/bin"};
  dependencies.paths = {root / "lib/libabsent.so", root / "real/lib/libother.so",
                        root / "nowhere/libz.so"};
  add_link_targets(dependencies);
  EXPECT_EQ(dependencies.trees, (Paths{root / "env", root / "env/lib/python3.11/site-packages",
                                       root / "shared/site-packages"}));
  EXPECT_EQ(dependencies.entries, (Paths{root / "env/bin", root / "shared/bin"}));
  EXPECT_EQ(dependencies.paths, (Paths{root / "lib/libabsent.so", root / "real/lib/libabsent.so",
                                       root / "real/lib/libother.so", root / "nowhere/libz.so"}));

  // Once compacted, the link's target is still watched: it lies outside
  // the prefix's tree.
  dependencies.compact();
  EXPECT_TRUE(dependencies.trees.contains(root / "shared/site-packages"));
}

}  // namespace
}  // namespace envcontract::process
