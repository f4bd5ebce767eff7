#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace envcontract::loader {

// /etc/ld.so.cache, read as the dynamic loader reads it (the "glibc-ld.so.
// cache1.1" format; an older prefix is skipped): soname -> paths, in the
// cache's order. Unreadable or corrupt caches are empty, with a problem.
class LdCache {
 public:
  // `root`: the system tree the cache belongs to (a container's rootfs):
  // its paths are that tree's, and are returned under `root`.
  static LdCache load(const std::filesystem::path& path = "/etc/ld.so.cache",
                      const std::filesystem::path& root = "/");

  // Candidate paths for `soname` (callers check class and machine).
  std::vector<std::filesystem::path> lookup(const std::string& soname) const;
  std::size_t size() const { return m_entries.size(); }
  const std::string& problem() const { return m_problem; }
  // The paths in the cache whose file name starts with `prefix`, for "a
  // different version exists" hints (compared as text: a cache holds
  // thousands of paths, and this runs for every missing library).
  std::vector<std::filesystem::path> paths_named_like(std::string_view prefix) const;

 private:
  std::multimap<std::string, std::filesystem::path> m_entries;
  std::vector<std::string> m_order;
  std::string m_problem;
};

}  // namespace envcontract::loader
