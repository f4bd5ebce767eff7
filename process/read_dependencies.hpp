#pragma once

#include <cstddef>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

// What one read of an env's files depended on, so that its facts can be
// kept until one of those paths changes (freshness/change_watch.hpp). Three
// kinds, from the widest: a tree (a directory and everything under it, such
// as the env's prefix or a source tree an editable install maps to), a
// directory's own entries (a PATH or LD_LIBRARY_PATH directory: a file
// added there changes what is found), and one path, present or absent (a
// library the loader found in /usr/lib, or a candidate it looked for and did
// not find: one created there later changes the resolution).
namespace envcontract::process {

struct ReadDependencies {
  std::set<std::filesystem::path> trees;
  std::set<std::filesystem::path> entries;
  std::set<std::filesystem::path> paths;
  // The files read, followed by identity as well (a tree does not cover a
  // change made through another of a file's names).
  std::set<std::filesystem::path> files;
  // Why these are not all the read depended on (more paths than are kept):
  // the facts are then never kept.
  std::string incomplete;

  // Drops what a tree already covers.
  void compact();
};

// Records, while it lives, every path the calling thread's readers note
// (note_reading: each file read, each candidate looked for) into `into`. At
// most k_max_recorded_paths; past them `into.incomplete` says so.
class RecordingReads {
 public:
  explicit RecordingReads(ReadDependencies& into);
  ~RecordingReads();
  RecordingReads(const RecordingReads&) = delete;
  RecordingReads& operator=(const RecordingReads&) = delete;

 private:
  ReadDependencies* m_outer;
};

inline constexpr std::size_t k_max_recorded_paths = 65536;

// Where `path` leads through each symbolic link on the way, in order: the
// path with its first link replaced by the link's target, then with the
// next, to the last (not `path` itself; empty when no link is on the way).
// Watching each (and so every directory on the way to each) sees any link
// of the chain changed: a venv's python -> /usr/bin/python3 ->
// /etc/alternatives/python3 -> python3.9 changes with the alternative.
// At most 40 links (the kernel's own bound); stops at what is absent.
std::vector<std::filesystem::path> link_chain(const std::filesystem::path& path);

// Adds where each tree and entries directory leads through links: a
// site-packages (or a package) inside the prefix that is a link to
// elsewhere must be watched there, and compact() would otherwise drop it as
// covered by the prefix.
void add_link_targets(ReadDependencies& dependencies);

// Called for every path noted by a reader (stall_guard.cpp's note_reading).
void record_read(const std::filesystem::path& path);
// A directory whose listing the facts depend on.
void record_listing(const std::filesystem::path& dir);
}  // namespace envcontract::process
