#pragma once

#include <fcntl.h>

#include <cstdint>
#include <filesystem>
#include <string>

// How the change watch (freshness/change_watch.hpp) names what changed and
// what was read, so that the two can be matched: a path by its filesystem
// and its place there (a "key"), and a file by its identity.
namespace envcontract::freshness {

// statfs's and fanotify's filesystem id, as one number.
std::uint64_t fsid_of(const void* fsid);

// "major:minor:/path": a path within one filesystem (as its root sees it),
// whatever mount it was reached by.
std::string key_of(const std::string& device, const std::string& path);

// A file's identity (its filesystem and handle, hashed), whatever names it has.
// Starts with NUL: a path's key starts with its device's major number.
std::string object_key(std::uint64_t fsid, const file_handle& handle);
bool is_object_key(const std::string& key);

// The path of a key, for people.
std::string path_of_key(const std::string& key);

// The key of the directory holding `key`'s path; "" for a filesystem's root.
std::string parent_key(const std::string& key);

// What a file read is: its identity (object_key) and where its links lead;
// no key when it is absent. A file with several names that cannot be
// identified cannot be watched (a change through another of its names
// would not be seen): `problem` says so.
struct Identity {
  std::string key;
  std::uint64_t fsid = 0;  // its filesystem's id, as statfs gives it
  std::filesystem::path real;
  std::string problem;
};
Identity identify(const std::filesystem::path& file);

}  // namespace envcontract::freshness
