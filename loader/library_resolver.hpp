#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "common/result.hpp"
#include "facts/linkage.hpp"
#include "loader/elf_file.hpp"
#include "loader/ld_cache.hpp"
#include "process/system_root.hpp"

namespace envcontract::loader {

// Parsed ELF files shared across the envs of one scan (libc is read once),
// known by path and by the file a path names (device, inode, size,
// modification and change time: hard links to one file share its parse),
// and read again when the file changes. The
// scanner clears it after each scan: a parsed library keeps its symbol
// tables in memory (tens of MB for a real libtorch), which an idle agent on
// a training host must not hold (docs/performance.md, "Footprint").
class ElfCache {
 public:
  common::Result<std::shared_ptr<const ElfFile>> get(const std::filesystem::path& path);

  // Forgets every file (a caller still holding one keeps it alive). A
  // reader still parsing then (one left blocked past its deadline on a
  // stalled mount) does not put its file back.
  void clear();
  std::size_t size() const;
  std::uint64_t bytes_held() const;  // what the kept files hold (ElfFile::bytes_held)

  // Past `max_bytes` the cache keeps no more files (each is still returned).
  explicit ElfCache(std::uint64_t max_bytes = 512ULL * 1024 * 1024) : m_max_bytes(max_bytes) {}

 private:
  // Which file was parsed: a file rewritten in place keeps its inode, and
  // can be given its old size and modification time, not its change time.
  // Hard links to one file (conda's package cache links every env's
  // libraries to its own copy; trees copied with `cp -al`) are one file,
  // parsed once whatever path names them.
  struct Identity {
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    std::uintmax_t size = 0;
    std::int64_t mtime = 0;
    std::int64_t ctime = 0;
    auto operator<=>(const Identity&) const = default;
  };
  // What a path was last found to be.
  struct Entry {
    Identity identity;
    common::Result<std::shared_ptr<const ElfFile>> file = common::Error{"not read yet"};
  };
  mutable std::mutex m_mutex;
  std::map<std::filesystem::path, Entry> m_entries;
  std::map<Identity, std::shared_ptr<const ElfFile>> m_parsed;  // each file parsed, once
  std::uint64_t m_max_bytes;
  std::uint64_t m_bytes = 0;       // bytes_held of the parsed files kept
  std::uint64_t m_generation = 0;  // clear() calls so far
};

// What this host's loader expands $PLATFORM to: glibc picks it from the CPU
// ("haswell", "xeon_phi" on some Intel CPUs; "x86_64" otherwise), so it is
// asked once (ld.so --list-diagnostics) rather than assumed.
std::string host_loader_platform();

// What the dynamic loader of this host would search, for one process.
struct SearchEnvironment {
  std::vector<std::string> ld_library_path;  // LD_LIBRARY_PATH, split
  std::shared_ptr<const LdCache> cache;
  std::vector<std::filesystem::path> system_dirs = {
      "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"};
  std::string lib = "lib/x86_64-linux-gnu";       // $LIB on Debian amd64
  std::string platform = host_loader_platform();  // $PLATFORM
  // The system tree the process runs in (a container's rootfs, or "/"):
  // absolute directories (RPATH, RUNPATH, LD_LIBRARY_PATH, the system's)
  // are that tree's. `cache` and `system_dirs` are already under it.
  std::filesystem::path root = "/";
  // What the parsed objects of one closure may hold at once: past it the
  // closure is cut short (LinkClosure::incomplete). libtorch_cuda's whole
  // closure holds under 100 MB.
  std::uint64_t max_closure_bytes = 512ULL * 1024 * 1024;
};

// The most directories one search list (LD_LIBRARY_PATH, an RPATH or a
// RUNPATH) gives the resolver; real ones name a few dozen at most.
inline constexpr std::size_t k_max_search_list_dirs = 1024;

// LD_LIBRARY_PATH of `environment` split as the loader splits it (":" or ";";
// empty entries dropped), at most k_max_search_list_dirs + 1 of them (the one
// more tells a list that was cut).
std::vector<std::string> split_search_path(const std::string& value);

struct LoadedObject {
  std::filesystem::path path;
  std::shared_ptr<const ElfFile> elf;
  std::string needed_as;            // the DT_NEEDED name (or the root's path)
  std::filesystem::path needed_by;  // empty for the root and preloaded objects
  std::string found_via;            // path, RPATH, LD_LIBRARY_PATH, RUNPATH, ld.so.cache, system
  bool system = false;              // found through ld.so.cache or a system dir
};

using facts::MissingLibrary;

struct LinkClosure {
  std::vector<LoadedObject> objects;  // load order: preloaded, root, then breadth-first
  std::vector<MissingLibrary> missing;
  std::vector<std::string> errors;  // unreadable or non-ELF files met on the way
  // Set when a bound stopped the resolution (a crafted library's thousands
  // of DT_NEEDED entries or search directories): what it says, the rest
  // of the closure unknown.
  std::string incomplete;
};

// Resolves the dependency closure of `root` the way ld.so would when a
// process whose executable is `executable` (empty: none) dlopens it: DT_RPATH
// of each loader in the chain (unless the object has DT_RUNPATH),
// LD_LIBRARY_PATH, DT_RUNPATH, ld.so.cache, system dirs; $ORIGIN, $LIB and
// $PLATFORM expanded; objects already loaded reused by name or soname;
// candidates of the wrong class or machine skipped.
LinkClosure resolve_closure(const std::filesystem::path& root,
                            const std::filesystem::path& executable,
                            const SearchEnvironment& search, ElfCache& cache);

// Where the loader finds `name` when a process whose executable is
// `executable` calls dlopen("name"): the executable's own dependencies first,
// then its RPATH/RUNPATH, LD_LIBRARY_PATH, ld.so.cache and the system dirs.
std::variant<LoadedObject, MissingLibrary> locate_library(const std::string& name,
                                                          const std::filesystem::path& executable,
                                                          const SearchEnvironment& search,
                                                          ElfCache& cache);

}  // namespace envcontract::loader
