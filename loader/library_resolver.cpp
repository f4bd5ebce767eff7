#include "loader/library_resolver.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <set>
#include <unordered_set>

#include "process/process_runner.hpp"
#include "process/read_dependencies.hpp"
#include "process/small_files.hpp"
#include "process/stall_guard.hpp"

namespace envcontract::loader {
namespace fs = std::filesystem;

namespace {

// A file refused as no linker's is a hostile file of the env being read,
// each time an env meets it (the cache serves every env).
const common::Result<std::shared_ptr<const ElfFile>>& noted(
    const fs::path& path, const common::Result<std::shared_ptr<const ElfFile>>& file) {
  if (!file && file.error_code() == common::ErrorCode::refused) {
    process::FileProblemLog::record(
        path, "is refused as a shared library: " + file.error().substr(k_refused_elf.size()));
  }
  return file;
}

}  // namespace

common::Result<std::shared_ptr<const ElfFile>> ElfCache::get(const fs::path& path) {
  process::note_reading(path);
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return common::Error{"cannot read: no such file"};
  }
  if (!S_ISREG(info.st_mode) && !S_ISDIR(info.st_mode)) {
    // A FIFO or device where a library should be: never opened (a FIFO
    // would block), and reported as a hostile file of the env being read.
    process::FileProblemLog::record(path,
                                    "is not a regular file, where a shared library was expected");
    return common::Error{"cannot read: not a regular file"};
  }
  // The cache serves every env: whether this env's user may read the file
  // is asked anew each time, by opening it (the calling thread reads as that
  // user, ReadingAs), and the file looked up is the one opened: the path may
  // name another file by now (a link of the env's changed under the reader),
  // and a parse of a file the user may not read is never theirs.
  // (Non-blocking: a FIFO put there meanwhile is refused below, never waited
  // on.)
  const int opened = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (opened < 0) {
    return common::Error{std::string("cannot read: ") + std::strerror(errno)};
  }
  const bool stated = ::fstat(opened, &info) == 0;
  ::close(opened);
  if (!stated || (!S_ISREG(info.st_mode) && !S_ISDIR(info.st_mode))) {
    process::FileProblemLog::record(path,
                                    "is not a regular file, where a shared library was expected");
    return common::Error{"cannot read: not a regular file"};
  }
  const std::int64_t mtime = info.st_mtim.tv_sec * 1'000'000'000LL + info.st_mtim.tv_nsec;
  const std::int64_t ctime = info.st_ctim.tv_sec * 1'000'000'000LL + info.st_ctim.tv_nsec;
  const Identity identity{info.st_dev, info.st_ino, static_cast<std::uintmax_t>(info.st_size),
                          mtime, ctime};
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(m_mutex);
    generation = m_generation;
    const auto it = m_entries.find(path);
    if (it != m_entries.end() && it->second.identity == identity) {
      return noted(path, it->second.file);
    }
    // Another name of a file already parsed: the same bytes.
    if (const auto parsed = m_parsed.find(identity); parsed != m_parsed.end()) {
      m_entries[path] = {identity, parsed->second};
      return parsed->second;
    }
  }
  auto file = ElfFile::open(path);
  // A file replaced between the stat above and the open is not kept under
  // the old file's signature: the next asker reads it again.
  struct stat after {};
  const bool unchanged = ::stat(path.c_str(), &after) == 0 && after.st_size == info.st_size &&
                         after.st_ino == info.st_ino && after.st_dev == info.st_dev &&
                         after.st_mtim.tv_sec == info.st_mtim.tv_sec &&
                         after.st_mtim.tv_nsec == info.st_mtim.tv_nsec &&
                         after.st_ctim.tv_sec == info.st_ctim.tv_sec &&
                         after.st_ctim.tv_nsec == info.st_ctim.tv_nsec;
  std::lock_guard lock(m_mutex);
  // Past its bound the cache keeps no more: a file is then parsed again by
  // the next env that needs it, rather than crafted files of one env
  // filling the agent's memory until the scan ends. (A file replaced since
  // keeps its old bytes until the cache is cleared: another name may still
  // be the old file.)
  if (m_generation == generation && unchanged) {
    if (!file) {
      m_entries[path] = {identity, file};
    } else if (const auto [parsed, added] = m_parsed.try_emplace(identity, nullptr); !added) {
      // Parsed meanwhile by another reader: that copy is the one kept.
      m_entries[path] = {identity, parsed->second};
    } else if (const std::uint64_t bytes = file.value()->bytes_held();
               m_bytes + bytes <= m_max_bytes) {
      m_bytes += bytes;
      parsed->second = file.value();
      m_entries[path] = {identity, file};
    } else {
      m_parsed.erase(parsed);
      m_entries.erase(path);
    }
  }
  return noted(path, file);
}

void ElfCache::clear() {
  decltype(m_entries) entries;
  decltype(m_parsed) parsed;
  {
    std::lock_guard lock(m_mutex);
    entries.swap(m_entries);
    parsed.swap(m_parsed);
    m_bytes = 0;
    ++m_generation;
  }
  // The files are freed here, outside the lock.
}

std::size_t ElfCache::size() const {
  std::lock_guard lock(m_mutex);
  return m_entries.size();
}

std::uint64_t ElfCache::bytes_held() const {
  std::lock_guard lock(m_mutex);
  return m_bytes;
}

std::string host_loader_platform() {
  static const std::string platform = [] {
    process::ProcessSpec spec;
    spec.argv = {"/lib64/ld-linux-x86-64.so.2", "--list-diagnostics"};
    spec.environment = {{"PATH", "/usr/bin:/bin"}};
    process::ProcessLimits limits;
    limits.timeout = std::chrono::seconds(10);
    const auto run = process::run_process(spec, limits);
    const std::string key = "dl_platform=\"";
    const auto start = run.out.find(key);
    if (!run.succeeded() || start == std::string::npos) {
      return std::string("x86_64");
    }
    const auto end = run.out.find('"', start + key.size());
    const std::string value = run.out.substr(start + key.size(), end - start - key.size());
    return value.empty() || end == std::string::npos ? std::string("x86_64") : value;
  }();
  return platform;
}

std::vector<std::string> split_search_path(const std::string& value) {
  std::vector<std::string> dirs;
  std::string current;
  for (const char c : value + ":") {
    if (c == ':' || c == ';') {
      if (!current.empty()) {
        dirs.push_back(current);
        if (dirs.size() > k_max_search_list_dirs) {
          return dirs;
        }
      }
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  return dirs;
}

namespace {

// A directory no real layout fills this much: past it, the listing stops.
constexpr std::size_t k_max_listed_names = 100000;

// Bounds of one closure, far above any real one (libtorch_cuda's closure has
// a few dozen objects, each needing a few dozen libraries) and far below
// what a crafted library can ask: a DT_NEEDED entry followed or a candidate
// file tried is one step.
constexpr std::size_t k_max_closure_objects = 1024;
constexpr std::size_t k_max_resolver_steps = 100000;
constexpr std::size_t k_max_search_order = 4 * k_max_search_list_dirs;
constexpr std::size_t k_max_search_list_bytes = 64 * 1024;
// Other versions of a missing library are looked for (each searched
// directory listed) for the first few misses only: they are a hint for
// people, and a crafted library can miss thousands.
constexpr std::size_t k_max_hinted_misses = 16;
// What a closure keeps of its misses: each holds its search order, and a
// crafted library can miss thousands of names through thousands of
// directories.
constexpr std::size_t k_max_kept_misses = 64;
constexpr std::size_t k_max_searched_per_miss = 256;

// Calls `visit` with the name of each entry of `dir` (nothing when it cannot
// be listed), resolved as the env sees it (process/small_files.hpp's list_names).
template <typename Visit>
void for_each_name(const fs::path& dir, Visit visit) {
  process::record_listing(dir);
  std::error_code unlisted;
  for (const std::string& name : process::list_names(dir, unlisted, k_max_listed_names)) {
    visit(std::string_view(name));
  }
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

class Resolver {
 public:
  Resolver(const SearchEnvironment& search, ElfCache& cache) : m_search(search), m_cache(cache) {}

  // Loads `path` as a root (dlopen by path) and everything it needs.
  void load_root(const fs::path& path, bool preloaded) {
    auto file = m_cache.get(path);
    if (!file) {
      m_closure.errors.push_back(path.string() + ": " + file.error());
      return;
    }
    const auto& elf = file.value();
    if (m_reference == nullptr) {
      m_reference = elf;
    }
    LoadedObject object;
    object.path = path;
    object.elf = elf;
    object.needed_as = path.string();
    object.found_via = preloaded ? "executable" : "path";
    const std::size_t index = m_closure.objects.size();
    add_object(std::move(object), -1);
    if (preloaded) {
      m_executable = index;
    }
    load_dependencies(index);
  }

  LinkClosure take() { return std::move(m_closure); }

  // What dlopen(name) from the executable loaded by load_root would find.
  std::variant<LoadedObject, MissingLibrary> lookup(const std::string& name) {
    for (const auto& object : m_closure.objects) {
      if (object.needed_as == name || object.elf->soname() == name) {
        return object;  // already loaded with the executable
      }
    }
    const std::size_t requester = m_executable.value_or(0);
    if (m_closure.objects.empty()) {
      MissingLibrary miss;
      miss.name = name;
      miss.searched.push_back("(the executable could not be read)");
      return miss;
    }
    if (const auto found = locate(name, requester)) {
      return m_closure.objects[*found];
    }
    if (!m_closure.incomplete.empty()) {
      MissingLibrary miss;
      miss.name = name;
      miss.incomplete = m_closure.incomplete;
      return miss;
    }
    return m_closure.missing.back();
  }

 private:
  struct Candidate {
    fs::path dir;
    std::string how;
  };

  // Breadth-first, as the loader maps DT_NEEDED entries.
  void load_dependencies(std::size_t first) {
    std::deque<std::size_t> queue = {first};
    while (!queue.empty()) {
      const std::size_t index = queue.front();
      queue.pop_front();
      const auto elf = m_closure.objects[index].elf;
      for (const auto needed : elf->needed()) {
        if (!take_step()) {
          return;
        }
        const std::string name(needed);
        if (already_loaded(name)) {
          continue;
        }
        if (const auto found = locate(name, index)) {
          queue.push_back(*found);
        }
      }
    }
  }

  bool already_loaded(const std::string& name) const { return m_loaded_names.contains(name); }

  // One more step of the resolution, or false (the closure then marked
  // incomplete) once a bound is reached.
  bool take_step() {
    if (!m_closure.incomplete.empty()) {
      return false;
    }
    if (++m_steps > k_max_resolver_steps) {
      cut_short("resolving it took more than " + std::to_string(k_max_resolver_steps) +
                " steps (libraries needed and files tried)");
      return false;
    }
    return true;
  }

  // A search list cut at its bound leaves the closure incomplete, since the
  // loader would search on.
  void cut_short(const std::string& why) {
    if (m_closure.incomplete.empty()) {
      m_closure.incomplete = why + ", so what it loads is unknown";
    }
  }

  void check_list_length(std::size_t dirs, const std::string& what) {
    if (dirs > k_max_search_list_dirs) {
      cut_short(what + " names more than " + std::to_string(k_max_search_list_dirs) +
                " directories: only the first are searched");
    }
  }

  void add_object(LoadedObject object, int loader) {
    m_closure_bytes += object.elf->bytes_held();
    if (m_closure_bytes > m_search.max_closure_bytes) {
      const std::uint64_t bound = m_search.max_closure_bytes;
      cut_short("the libraries it loads hold more than " +
                (bound >= (1U << 20) ? std::to_string(bound >> 20) + " MiB"
                                     : std::to_string(bound >> 10) + " KiB") +
                " of symbol tables");
    }
    m_loaded_names.insert(object.needed_as);
    m_loaded_names.insert(std::string(object.elf->soname()));
    m_closure.objects.push_back(std::move(object));
    m_loader_of.push_back(loader);
  }

  std::vector<fs::path> expand(std::string_view list, const LoadedObject& owner,
                               const std::string& what) {
    std::vector<fs::path> dirs;
    // Only the start of a list longer than any real one is split: the list
    // is expanded again for every library its object needs.
    if (list.size() > k_max_search_list_bytes) {
      cut_short(what + " of " + owner.path.filename().string() + " is longer than " +
                std::to_string(k_max_search_list_bytes / 1024) +
                " KiB: only its start is searched");
      list = list.substr(0, k_max_search_list_bytes);
    }
    auto listed = split_search_path(std::string(list));
    check_list_length(listed.size(), what + " of " + owner.path.filename().string());
    listed.resize(std::min(listed.size(), k_max_search_list_dirs));
    for (auto dir : listed) {
      // $ORIGIN is the directory of the object as it was found, symlinks kept.
      const std::string origin = owner.path.parent_path().string();
      replace_all(dir, "${ORIGIN}", origin);
      replace_all(dir, "$ORIGIN", origin);
      replace_all(dir, "${LIB}", m_search.lib);
      replace_all(dir, "$LIB", m_search.lib);
      replace_all(dir, "${PLATFORM}", m_search.platform);
      replace_all(dir, "$PLATFORM", m_search.platform);
      dirs.push_back(process::under_root(m_search.root, fs::path(dir).lexically_normal()));
    }
    return dirs;
  }

  std::vector<Candidate> search_order(std::size_t requester) {
    std::vector<Candidate> order;
    // False once the order is as long as it may be (the closure is then
    // incomplete): a chain of loaders each with a long RPATH multiplies.
    auto room = [&] {
      if (order.size() < k_max_search_order) {
        return true;
      }
      cut_short("a search order is longer than " + std::to_string(k_max_search_order) +
                " directories (loaders' RPATHs, LD_LIBRARY_PATH, RUNPATH): only the first are "
                "searched");
      return false;
    };
    const auto& object = m_closure.objects[requester];
    // DT_RPATH of the requester and of every object up its loader chain, each
    // only when that object has no DT_RUNPATH; none at all when the requester
    // has DT_RUNPATH.
    if (object.elf->runpath().empty()) {
      for (int at = static_cast<int>(requester); at >= 0 && room(); at = m_loader_of[at]) {
        const auto& loader = m_closure.objects[at];
        if (loader.elf->runpath().empty() && !loader.elf->rpath().empty()) {
          for (const auto& dir : expand(loader.elf->rpath(), loader, "the RPATH")) {
            order.push_back({dir, "RPATH of " + loader.path.filename().string()});
          }
        }
      }
      // Then the executable's own DT_RPATH, for objects it dlopens.
      if (m_executable && *m_executable != requester && room()) {
        const auto& executable = m_closure.objects[*m_executable];
        if (executable.elf->runpath().empty() && !executable.elf->rpath().empty()) {
          for (const auto& dir : expand(executable.elf->rpath(), executable, "the RPATH")) {
            order.push_back({dir, "RPATH of " + executable.path.filename().string()});
          }
        }
      }
    }
    check_list_length(m_search.ld_library_path.size(), "LD_LIBRARY_PATH");
    for (std::size_t i = 0; i < std::min(m_search.ld_library_path.size(), k_max_search_list_dirs);
         ++i) {
      order.push_back({m_search.ld_library_path[i], "LD_LIBRARY_PATH"});
    }
    if (room()) {
      for (const auto& dir : expand(object.elf->runpath(), object, "the RUNPATH")) {
        order.push_back({dir, "RUNPATH of " + object.path.filename().string()});
      }
    }
    return order;
  }

  // Why `elf` cannot be used by this process, or "" when it can.
  std::string incompatibility(const ElfFile& elf) const {
    if (m_reference == nullptr) {
      return {};
    }
    if (elf.elf_class() != m_reference->elf_class()) {
      return std::to_string(elf.elf_class()) + "-bit, the process is " +
             std::to_string(m_reference->elf_class()) + "-bit";
    }
    if (elf.machine() != m_reference->machine()) {
      return "machine " + std::to_string(elf.machine()) + ", the process is machine " +
             std::to_string(m_reference->machine());
    }
    return {};
  }

  // Tries one candidate file; true when it was loaded.
  bool try_candidate(const fs::path& raw_path, const std::string& name, std::size_t requester,
                     const std::string& how, MissingLibrary& miss) {
    if (!take_step()) {
      return false;
    }
    const fs::path path = raw_path.lexically_normal();
    if (!process::path_exists(path)) {
      return false;
    }
    auto file = m_cache.get(path);
    if (!file) {
      miss.rejected.push_back(path.string() + ": " + file.error());
      return false;
    }
    const auto& elf = file.value();
    if (const auto why = incompatibility(*elf); !why.empty()) {
      miss.rejected.push_back(path.string() + ": " + why);
      return false;
    }
    if (m_closure.objects.size() >= k_max_closure_objects) {
      cut_short("it loads more than " + std::to_string(k_max_closure_objects) + " libraries");
      return false;
    }
    LoadedObject object;
    object.path = path;
    object.elf = elf;
    object.needed_as = name;
    object.needed_by = m_closure.objects[requester].path;
    object.found_via = how;
    object.system = how == "ld.so.cache" || how == "system";
    add_object(std::move(object), static_cast<int>(requester));
    return true;
  }

  // Notes one more place searched for `miss`, up to a bound.
  static void searched(MissingLibrary& miss, std::string place) {
    if (miss.searched.size() < k_max_searched_per_miss) {
      miss.searched.push_back(std::move(place));
    } else if (miss.searched.size() == k_max_searched_per_miss) {
      miss.searched.push_back("(and more places, not listed)");
    }
  }

  std::optional<std::size_t> locate(const std::string& name, std::size_t requester) {
    MissingLibrary miss;
    miss.name = name;
    miss.needed_by = m_closure.objects[requester].path;
    const std::size_t next = m_closure.objects.size();
    if (name.find('/') != std::string::npos) {
      if (try_candidate(name, name, requester, "path", miss)) {
        return next;
      }
      searched(miss, name + " (a path)");
    } else {
      for (const auto& candidate : search_order(requester)) {
        searched(miss, candidate.dir.string() + " (" + candidate.how + ")");
        if (try_candidate(candidate.dir / name, name, requester, candidate.how, miss)) {
          return next;
        }
      }
      if (m_search.cache) {
        searched(miss, process::under_root(m_search.root, "/etc/ld.so.cache").string());
        for (const auto& path : m_search.cache->lookup(name)) {
          if (try_candidate(path, name, requester, "ld.so.cache", miss)) {
            return next;
          }
        }
      }
      for (const auto& dir : m_search.system_dirs) {
        searched(miss, dir.string() + " (system)");
        if (try_candidate(dir / name, name, requester, "system", miss)) {
          return next;
        }
      }
    }
    // A search cut short by a bound found no answer, not a missing library.
    if (!m_closure.incomplete.empty()) {
      return std::nullopt;
    }
    if (m_closure.missing.size() >= k_max_kept_misses) {
      cut_short("more than " + std::to_string(k_max_kept_misses) +
                " of the libraries it needs are missing");
      return std::nullopt;
    }
    if (m_closure.missing.size() < k_max_hinted_misses) {
      find_other_versions(miss);
    }
    m_closure.missing.push_back(std::move(miss));
    return std::nullopt;
  }

  // libxpurt.so.2 is missing; is a libxpurt.so.1 around? Names are compared
  // as text before any path is made of them: the searched directories hold
  // thousands of files, and every scan asks this for every missing library.
  void find_other_versions(MissingLibrary& miss) const {
    const auto dot_so = miss.name.find(".so");
    if (dot_so == std::string::npos) {
      return;
    }
    const std::string stem = miss.name.substr(0, dot_so + 3);
    // The stem, or the stem and a version ("libfoo.so.1.2"); not a
    // "libfoo.so.1.c" or "libfoo.so.1.debug" beside it.
    const auto looks_like = [&](std::string_view file) {
      if (file == miss.name || !file.starts_with(stem)) {
        return false;
      }
      const std::string_view version = file.substr(stem.size());
      return version.empty() ||
             (version.size() > 1 && version[0] == '.' &&
              version.find_first_not_of("0123456789.") == std::string_view::npos);
    };
    std::set<fs::path> found;
    for (const auto& searched : miss.searched) {
      const fs::path dir = searched.substr(0, searched.rfind(" ("));
      for_each_name(dir, [&](std::string_view file) {
        if (looks_like(file) && process::path_exists(dir / file)) {
          found.insert(dir / file);
        }
      });
    }
    if (m_search.cache) {
      for (const auto& path : m_search.cache->paths_named_like(stem)) {
        if (looks_like(path.filename().native()) && process::path_exists(path)) {
          found.insert(path);
        }
      }
    }
    miss.other_versions.assign(found.begin(), found.end());
  }

  const SearchEnvironment& m_search;
  ElfCache& m_cache;
  LinkClosure m_closure;
  std::vector<int> m_loader_of;                // index of the object whose DT_NEEDED loaded it
  std::shared_ptr<const ElfFile> m_reference;  // the first object: its class is the process's
  std::optional<std::size_t> m_executable;
  std::unordered_set<std::string> m_loaded_names;  // needed_as and soname of every object
  std::size_t m_steps = 0;
  std::uint64_t m_closure_bytes = 0;
};

}  // namespace

std::variant<LoadedObject, MissingLibrary> locate_library(const std::string& name,
                                                          const fs::path& executable,
                                                          const SearchEnvironment& search,
                                                          ElfCache& cache) {
  Resolver resolver(search, cache);
  resolver.load_root(executable, true);
  return resolver.lookup(name);
}

LinkClosure resolve_closure(const fs::path& root, const fs::path& executable,
                            const SearchEnvironment& search, ElfCache& cache) {
  Resolver resolver(search, cache);
  if (!executable.empty()) {
    resolver.load_root(executable, true);
  }
  resolver.load_root(root, false);
  return resolver.take();
}

}  // namespace envcontract::loader
