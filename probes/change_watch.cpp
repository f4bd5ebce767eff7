#include "probes/change_watch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace envcontract::probes {
namespace fs = std::filesystem;

namespace {

// What is watched on each filesystem: every change of an entry, of a file's
// contents or of its owner and mode. Opening and reading are not changes.
constexpr std::uint64_t k_change_mask = FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO |
                                        FAN_MODIFY | FAN_CLOSE_WRITE | FAN_ATTRIB |
                                        FAN_DELETE_SELF | FAN_MOVE_SELF | FAN_ONDIR;

// Filesystems whose every change passes through this kernel.
bool local_filesystem(const std::string& fstype) {
  static const char* const k_local[] = {"ext2", "ext3",  "ext4", "xfs",      "btrfs",
                                        "f2fs", "tmpfs", "jfs",  "reiserfs", "bcachefs"};
  for (const char* local : k_local) {
    if (fstype == local) {
      return true;
    }
  }
  return false;
}

// Past these, whatever is not followed counts as a change of everything.
constexpr std::size_t k_max_reads_per_drain = 256;  // of 64 KiB each
constexpr std::size_t k_max_known_dirs = 8192;      // directory handles resolved

std::uint64_t fsid_of(const void* fsid) {
  std::uint64_t value = 0;
  std::memcpy(&value, fsid, sizeof value);
  return value;
}

// "dev:/path": a path within one filesystem (as its root sees it), whatever
// mount it was reached by.
std::string key_of(const std::string& device, const std::string& path) {
  return device + ":" + path;
}

// A file's identity (its filesystem and handle), whatever names it has.
// Starts with NUL: a path's key starts with its device's major number.
std::string object_key(std::uint64_t fsid, const file_handle& handle) {
  std::string key(1, '\0');
  key.append(reinterpret_cast<const char*>(&fsid), sizeof fsid);
  key.append(reinterpret_cast<const char*>(&handle.handle_type), sizeof handle.handle_type);
  key.append(reinterpret_cast<const char*>(handle.f_handle), handle.handle_bytes);
  return key;
}

bool is_object_key(const std::string& key) {
  return !key.empty() && key.front() == '\0';
}

// The path of a key, for people.
std::string path_of_key(const std::string& key) {
  return key.substr(key.find(":/") + 1);
}

// The key of the directory holding `key`'s path; "" for a filesystem's root.
std::string parent_key(const std::string& key) {
  const auto colon = key.find(":/");  // the device's own colon comes before
  const auto slash = key.rfind('/');
  if (colon == std::string::npos || slash == std::string::npos || slash <= colon ||
      key.size() == colon + 2) {
    return {};
  }
  return slash == colon + 1 ? key.substr(0, colon + 2) : key.substr(0, slash);
}

// The longest existing ancestor of `path` resolved, with the rest appended:
// where the path is, or would be once created.
fs::path resolved(const fs::path& path) {
  fs::path existing = path;
  fs::path rest;
  while (true) {
    char buffer[PATH_MAX];
    if (::realpath(existing.c_str(), buffer) != nullptr) {
      return rest.empty() ? fs::path(buffer) : (fs::path(buffer) / rest).lexically_normal();
    }
    if (!existing.has_relative_path()) {
      return path;
    }
    rest = rest.empty() ? existing.filename() : existing.filename() / rest;
    existing = existing.parent_path();
  }
}

// What a file read is: its filesystem's device, its identity (object_key)
// and where its links lead; no key when it is absent. A file with several
// names that cannot be identified cannot be watched: a change through
// another of its names would not be seen.
struct Identity {
  std::string device;
  std::string key;
  fs::path real;
  std::string problem;
};

Identity identify(const fs::path& file) {
  Identity identity;
  const int fd = ::open(file.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) {
    return identity;
  }
  struct stat status {};
  struct statfs filesystem {};
  alignas(file_handle) std::array<char, sizeof(file_handle) + MAX_HANDLE_SZ> storage{};
  auto& handle = *reinterpret_cast<file_handle*>(storage.data());
  handle.handle_bytes = MAX_HANDLE_SZ;
  int mount_id = 0;
  char buffer[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  ssize_t length = -1;
  if (::fstat(fd, &status) == 0 && ::fstatfs(fd, &filesystem) == 0) {
    length = ::readlink(link.c_str(), buffer, sizeof buffer - 1);
    if (::name_to_handle_at(fd, "", &handle, &mount_id, AT_EMPTY_PATH) == 0 && length > 0) {
      identity.device =
          std::to_string(major(status.st_dev)) + ":" + std::to_string(minor(status.st_dev));
      identity.key = object_key(fsid_of(&filesystem.f_fsid), handle);
      identity.real = std::string(buffer, static_cast<std::size_t>(length));
    } else if (status.st_nlink > 1) {
      identity.problem =
          file.string() + " has several names and the kernel gives no identity for it";
    }
  }
  ::close(fd);
  return identity;
}

}  // namespace

struct ChangeWatch::Core {
  struct Filesystem {
    int mount_fd = -1;
    std::string point;   // where its root is mounted here
    std::string device;  // "major:minor"
  };
  struct State {
    std::uint64_t opened_at = 0;
    bool settled = false;
    std::optional<std::string> change;
    // Its keys in the indexes below.
    std::vector<std::string> touching, trees, entries, objects;
  };
  enum class Index { touching, trees, entries, objects };

  mutable std::mutex mutex;
  int fan_fd = -1;
  int stop_fd = -1;
  std::thread reader;

  std::map<std::string, std::optional<std::string>> marks;    // device -> "" marked, or why not
  std::unordered_map<std::uint64_t, Filesystem> filesystems;  // by fsid
  std::unordered_map<std::string, std::string> known_dirs;    // handle -> key
  std::unordered_map<std::uint64_t, State> interests;
  std::uint64_t next_interest = 1;
  // A path's key -> the interests that depend on it: the path itself, a
  // tree or entries dir, or one of their ancestors (`touching`); a tree's
  // root (`trees`); a directory whose entries count (`entries`).
  // A file read, by identity (`objects`): a change through any of its names.
  std::unordered_map<std::string, std::vector<std::uint64_t>> touching, trees, entries, objects;
  // Changes seen while some interest is open and not yet settled: what
  // happened during its read, matched once it names its paths. At most
  // max_logged; the last change past them is remembered, and a read it
  // happened during counts as changed.
  std::vector<std::pair<std::uint64_t, std::string>> log;
  std::size_t max_logged = 0;
  std::uint64_t last_lost = 0;  // 0: none
  std::size_t open_interests = 0;
  std::uint64_t events = 0;

  ~Core() {
    for (auto& [fsid, filesystem] : filesystems) {
      ::close(filesystem.mount_fd);
    }
    if (fan_fd >= 0) {
      ::close(fan_fd);
    }
    if (stop_fd >= 0) {
      ::close(stop_fd);
    }
  }

  std::unordered_map<std::string, std::vector<std::uint64_t>>& index(Index which) {
    switch (which) {
      case Index::touching:
        return touching;
      case Index::trees:
        return trees;
      case Index::entries:
        return entries;
      case Index::objects:
        break;
    }
    return objects;
  }

  static std::vector<std::string>& keys_of(State& state, Index which) {
    switch (which) {
      case Index::touching:
        return state.touching;
      case Index::trees:
        return state.trees;
      case Index::entries:
        return state.entries;
      case Index::objects:
        break;
    }
    return state.objects;
  }

  void note_change(State& state, const std::string& why) {
    if (!state.change) {
      state.change = why;
    }
  }

  // Every interest, those whose read still runs too: nothing that happens
  // later is lost (what is still queued is read at the next drain).
  void everything_changed(const std::string& why) {
    for (auto& [id, state] : interests) {
      note_change(state, why);
    }
    known_dirs.clear();
  }

  // Which interests a change of `key` concerns.
  template <typename Visit>
  void match(const std::string& key, Visit visit) {
    if (is_object_key(key)) {
      if (const auto it = objects.find(key); it != objects.end()) {
        for (const auto id : it->second) {
          visit(id);
        }
      }
      return;
    }
    if (const auto it = touching.find(key); it != touching.end()) {
      for (const auto id : it->second) {
        visit(id);
      }
    }
    const std::string parent = parent_key(key);
    if (const auto it = entries.find(parent); !parent.empty() && it != entries.end()) {
      for (const auto id : it->second) {
        visit(id);
      }
    }
    for (std::string at = parent; !at.empty(); at = parent_key(at)) {
      if (const auto it = trees.find(at); it != trees.end()) {
        for (const auto id : it->second) {
          visit(id);
        }
      }
    }
  }

  static std::string describe(const std::string& key) {
    return is_object_key(key) ? "a file it read changed (through another of its names)"
                              : path_of_key(key) + " changed";
  }

  void changed_at(const std::string& key) {
    match(key, [&](std::uint64_t id) { note_change(interests.at(id), describe(key)); });
    if (open_interests > 0) {
      if (log.size() < max_logged) {
        log.emplace_back(events, key);
      } else {
        last_lost = events;
      }
    }
  }

  // The key of the directory an event names, found again from its handle.
  std::optional<std::string> directory_key(std::uint64_t fsid, const file_handle& handle) {
    const std::string id(reinterpret_cast<const char*>(&fsid), sizeof fsid);
    std::string cache_key = id;
    cache_key.append(reinterpret_cast<const char*>(&handle),
                     sizeof(file_handle) + handle.handle_bytes);
    if (const auto it = known_dirs.find(cache_key); it != known_dirs.end()) {
      return it->second;
    }
    const auto filesystem = filesystems.find(fsid);
    if (filesystem == filesystems.end()) {
      return std::nullopt;
    }
    // Gone already (ESTALE): its removal is an event of its parent's.
    const int fd = ::open_by_handle_at(filesystem->second.mount_fd,
                                       const_cast<file_handle*>(&handle), O_PATH | O_CLOEXEC);
    if (fd < 0) {
      return std::nullopt;
    }
    char buffer[PATH_MAX];
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t length = ::readlink(link.c_str(), buffer, sizeof buffer - 1);
    ::close(fd);
    if (length <= 0 || buffer[0] != '/') {
      return std::nullopt;
    }
    std::string path(buffer, static_cast<std::size_t>(length));
    if (path.ends_with(" (deleted)")) {
      return std::nullopt;
    }
    const std::string& point = filesystem->second.point;
    if (point != "/") {
      if (path == point) {
        path = "/";
      } else if (path.starts_with(point + "/")) {
        path = path.substr(point.size());
      } else {
        return std::nullopt;
      }
    }
    if (known_dirs.size() >= k_max_known_dirs) {
      known_dirs.clear();
    }
    std::string key = key_of(filesystem->second.device, path);
    known_dirs.emplace(std::move(cache_key), key);
    return key;
  }

  void take_event(const fanotify_event_metadata& event, const char* end) {
    ++events;
    const char* at = reinterpret_cast<const char*>(&event) + event.metadata_len;
    while (at + sizeof(fanotify_event_info_header) <= end) {
      fanotify_event_info_header header{};
      std::memcpy(&header, at, sizeof header);
      if (header.len < sizeof(fanotify_event_info_fid) + sizeof(file_handle) ||
          at + header.len > end) {
        break;
      }
      if (header.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME ||
          header.info_type == FAN_EVENT_INFO_TYPE_DFID ||
          header.info_type == FAN_EVENT_INFO_TYPE_FID) {
        // FID: the file itself, matched by identity; the others name a
        // directory, found again by its handle, and an entry in it.
        const char* fid = at + sizeof(fanotify_event_info_header);
        const std::uint64_t fsid = fsid_of(fid);
        const char* raw_handle = fid + sizeof(__kernel_fsid_t);
        std::uint32_t bytes = 0;
        std::memcpy(&bytes, raw_handle, sizeof bytes);
        const char* handle_end = raw_handle + sizeof(file_handle) + bytes;
        if (bytes > MAX_HANDLE_SZ || handle_end > at + header.len) {
          break;
        }
        alignas(file_handle) std::array<char, sizeof(file_handle) + MAX_HANDLE_SZ> copy{};
        std::memcpy(copy.data(), raw_handle, sizeof(file_handle) + bytes);
        const auto& handle = *reinterpret_cast<const file_handle*>(copy.data());
        if (header.info_type == FAN_EVENT_INFO_TYPE_FID) {
          changed_at(object_key(fsid, handle));
          at += header.len;
          continue;
        }
        const auto dir = directory_key(fsid, handle);
        std::string name;
        if (header.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME) {
          name.assign(handle_end,
                      strnlen(handle_end, static_cast<std::size_t>(at + header.len - handle_end)));
        }
        if (dir) {
          changed_at(name.empty() || name == "."
                         ? *dir
                         : (dir->ends_with("/") ? *dir : *dir + "/") + name);
        }
      }
      at += header.len;
    }
  }

  // Reads what the kernel has queued (the caller holds the mutex).
  void drain() {
    alignas(fanotify_event_metadata) static thread_local std::array<char, 64 * 1024> buffer;
    for (std::size_t reads = 0;; ++reads) {
      const ssize_t length = ::read(fan_fd, buffer.data(), buffer.size());
      if (length <= 0) {
        return;  // EAGAIN: nothing more queued
      }
      if (reads >= k_max_reads_per_drain) {
        // What is still queued counts as changed for every read open now,
        // and is read on the next round.
        everything_changed("more changes at once than the agent follows");
        return;
      }
      ssize_t left = length;
      for (auto* event = reinterpret_cast<const fanotify_event_metadata*>(buffer.data());
           FAN_EVENT_OK(event, left); event = FAN_EVENT_NEXT(event, left)) {
        if (event->vers != FANOTIFY_METADATA_VERSION) {
          everything_changed("the kernel's changes came in a form the agent does not read");
          continue;
        }
        if ((event->mask & FAN_Q_OVERFLOW) != 0) {
          everything_changed("the kernel's queue of changes overflowed");
          continue;
        }
        // A directory renamed or removed: the handles known to name its
        // subdirectories' paths may name others now, whoever is interested.
        if ((event->mask & FAN_ONDIR) != 0 &&
            (event->mask & (FAN_MOVED_FROM | FAN_MOVED_TO | FAN_DELETE | FAN_MOVE_SELF)) != 0) {
          known_dirs.clear();
        }
        if (interests.empty()) {
          ++events;
          continue;  // nothing to match them against
        }
        take_event(*event, reinterpret_cast<const char*>(event) + event->event_len);
      }
    }
  }

  // The filesystem holding `device` marked, or why it cannot be.
  std::string mark(const std::string& device, const MountTable& mounts, bool& newly) {
    if (const auto known = marks.find(device); known != marks.end()) {
      return known->second.value_or("");
    }
    std::string why;
    const MountTable::Mount* whole = nullptr;
    std::string fstype;
    for (const auto& mount : mounts.mounts()) {
      if (mount.device == device) {
        fstype = mount.fstype;
        if (mount.root == "/" && whole == nullptr) {
          whole = &mount;
        }
      }
    }
    if (!local_filesystem(fstype)) {
      why = "a " + (fstype.empty() ? std::string("filesystem of no known type") : fstype) +
            " filesystem, whose changes this kernel does not all see";
    } else if (whole == nullptr) {
      why = "its filesystem's root is not mounted where the agent can see it";
    } else if (::fanotify_mark(fan_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, k_change_mask, AT_FDCWD,
                               whole->point.c_str()) != 0) {
      why = "the kernel would not watch " + whole->point.string() + " (" + whole->fstype +
            "): " + std::strerror(errno);
    } else {
      struct statfs info {};
      // Opened for reading: open_by_handle_at refuses an O_PATH descriptor (EBADF).
      const int fd = ::open(whole->point.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0 || ::fstatfs(fd, &info) != 0) {
        why = whole->point.string() + ": " + std::strerror(errno);
        if (fd >= 0) {
          ::close(fd);
        }
      } else {
        filesystems[fsid_of(&info.f_fsid)] = {fd, whole->point.string(), device};
        newly = true;
      }
    }
    marks[device] = why.empty() ? std::optional<std::string>() : why;
    return why;
  }

  void forget(std::uint64_t id) {
    std::lock_guard lock(mutex);
    const auto it = interests.find(id);
    if (it == interests.end()) {
      return;
    }
    if (!it->second.settled && open_interests > 0) {
      --open_interests;
    }
    for (const auto which : {Index::touching, Index::trees, Index::entries, Index::objects}) {
      auto& map = index(which);
      for (const auto& key : keys_of(it->second, which)) {
        const auto found = map.find(key);
        if (found != map.end()) {
          std::erase(found->second, id);
          if (found->second.empty()) {
            map.erase(found);
          }
        }
      }
    }
    interests.erase(it);
    trim_log();
  }

  void trim_log() {
    if (open_interests == 0) {
      log.clear();
      log.shrink_to_fit();
      last_lost = 0;
    }
  }

  void read_until_stopped() {
    std::array<pollfd, 2> waiting{{{fan_fd, POLLIN, 0}, {stop_fd, POLLIN, 0}}};
    while (true) {
      if (::poll(waiting.data(), waiting.size(), -1) < 0 && errno != EINTR) {
        return;
      }
      if ((waiting[1].revents & POLLIN) != 0) {
        return;
      }
      if ((waiting[0].revents & (POLLIN | POLLERR | POLLHUP)) != 0) {
        std::lock_guard lock(mutex);
        drain();
      }
    }
  }
};

class ChangeWatch::Interest {
 public:
  Interest(std::shared_ptr<Core> core, std::uint64_t id) : m_core(std::move(core)), m_id(id) {}
  ~Interest() { m_core->forget(m_id); }
  Interest(const Interest&) = delete;
  Interest& operator=(const Interest&) = delete;
  std::uint64_t id() const { return m_id; }

 private:
  std::shared_ptr<Core> m_core;
  std::uint64_t m_id;
};

std::shared_ptr<ChangeWatch> ChangeWatch::start(std::string& why_not, std::size_t max_logged) {
  auto core = std::make_shared<Core>();
  core->max_logged = max_logged;
  // Each change names its directory and entry (DFID_NAME), and the file
  // changed (FID): a file with several names is matched by identity.
  core->fan_fd = ::fanotify_init(
      FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_DFID_NAME | FAN_REPORT_FID,
      O_RDONLY | O_CLOEXEC);
  if (core->fan_fd < 0) {
    why_not = std::string("fanotify_init: ") + std::strerror(errno) +
              (errno == EPERM    ? " (watching whole filesystems needs CAP_SYS_ADMIN)"
               : errno == EINVAL ? " (names with changes need Linux 5.9)"
                                 : "");
    return nullptr;
  }
  core->stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (core->stop_fd < 0) {
    why_not = std::string("eventfd: ") + std::strerror(errno);
    return nullptr;
  }
  core->reader = std::thread([raw = core.get()] { raw->read_until_stopped(); });
  return std::shared_ptr<ChangeWatch>(new ChangeWatch(std::move(core)));
}

ChangeWatch::ChangeWatch(std::shared_ptr<Core> core) : m_core(std::move(core)) {}

ChangeWatch::~ChangeWatch() {
  const std::uint64_t one = 1;
  if (::write(m_core->stop_fd, &one, sizeof one) < 0) {
    // Cannot happen for an eventfd short of its counter's overflow.
  }
  if (m_core->reader.joinable()) {
    m_core->reader.join();
  }
}

std::shared_ptr<ChangeWatch::Interest> ChangeWatch::open() {
  std::lock_guard lock(m_core->mutex);
  // What is queued now happened before the read: matched (against the
  // interests settled so far) before this one starts collecting.
  m_core->drain();
  const std::uint64_t id = m_core->next_interest++;
  auto& state = m_core->interests[id];
  state.opened_at = m_core->events;
  ++m_core->open_interests;
  return std::make_shared<Interest>(m_core, id);
}

std::string ChangeWatch::settle(Interest& interest, const ReadDependencies& dependencies,
                                const MountTable& mounts) {
  // Resolved before the lock: realpath may wait on a slow disk.
  struct Named {
    fs::path path;
    Core::Index kind;
  };
  std::vector<Named> named;
  const auto add = [&](const fs::path& path, Core::Index kind) {
    named.push_back({path, kind});
    const fs::path real = resolved(path);
    if (real != path) {
      named.push_back({real, kind});
    }
  };
  for (const auto& tree : dependencies.trees) {
    add(tree, Core::Index::trees);
  }
  for (const auto& dir : dependencies.entries) {
    add(dir, Core::Index::entries);
  }
  for (const auto& path : dependencies.paths) {
    add(path, Core::Index::touching);
  }
  // Each file read, by identity, and by the path its links lead to.
  struct Identified {
    std::string device;
    std::string key;
  };
  std::vector<Identified> identified;
  std::string unidentified;
  for (const auto& file : dependencies.files) {
    auto identity = identify(file);
    if (!identity.problem.empty()) {
      if (unidentified.empty()) {
        unidentified = identity.problem;
      }
      continue;
    }
    if (identity.key.empty()) {
      continue;  // absent: its name is watched
    }
    if (identity.real != file.lexically_normal()) {
      named.push_back({identity.real, Core::Index::touching});
    }
    identified.push_back({std::move(identity.device), std::move(identity.key)});
  }

  std::lock_guard lock(m_core->mutex);
  m_core->drain();
  auto& state = m_core->interests.at(interest.id());
  if (state.settled) {
    return "settled twice";
  }
  state.settled = true;
  --m_core->open_interests;
  std::string why_not = dependencies.incomplete.empty() ? unidentified : dependencies.incomplete;
  bool newly_marked = false;
  for (const auto& [device, key] : identified) {
    const std::string problem = m_core->mark(device, mounts, newly_marked);
    if (!problem.empty()) {
      if (why_not.empty()) {
        why_not = "a file it read is on " + problem;
      }
      continue;
    }
    auto& ids = m_core->objects[key];
    if (ids.empty() || ids.back() != interest.id()) {
      ids.push_back(interest.id());
      state.objects.push_back(key);
    }
  }
  std::vector<std::pair<std::string, Core::Index>> keys;
  for (const auto& [path, kind] : named) {
    const auto mount = mounts.mount_of(path);
    const std::string problem = m_core->mark(mount.device, mounts, newly_marked);
    if (!problem.empty()) {
      if (why_not.empty()) {
        why_not = path.string() + " is on " + problem;
      }
      continue;
    }
    const fs::path relative = path.lexically_relative(mount.point);
    const fs::path inside = (mount.root / relative).lexically_normal();
    std::string text = inside.string();
    if (text.size() > 1 && text.ends_with('/')) {
      text.pop_back();
    }
    keys.emplace_back(key_of(mount.device, text), kind);
  }
  if (!why_not.empty()) {
    m_core->note_change(state, "not watched: " + why_not);
  } else if (newly_marked) {
    m_core->note_change(state, "its filesystem was not yet watched while it was read");
  }
  for (const auto& [key, kind] : keys) {
    // The key and each of its ancestors touch it: a rename or removal on the way counts.
    for (std::string at = key; !at.empty(); at = parent_key(at)) {
      auto& ids = m_core->touching[at];
      if (ids.empty() || ids.back() != interest.id()) {
        ids.push_back(interest.id());
        state.touching.push_back(at);
      }
    }
    if (kind != Core::Index::touching) {
      m_core->index(kind)[key].push_back(interest.id());
      (kind == Core::Index::trees ? state.trees : state.entries).push_back(key);
    }
  }
  // What changed while the read ran, now that its paths are known.
  if (m_core->last_lost > state.opened_at) {
    m_core->note_change(state, "more changed while it was read than the agent follows");
  }
  for (const auto& [seq, key] : m_core->log) {
    if (seq <= state.opened_at || state.change) {
      continue;
    }
    m_core->match(key, [&](std::uint64_t id) {
      if (id == interest.id()) {
        m_core->note_change(state, path_of_key(key) + " changed while it was read");
      }
    });
  }
  m_core->trim_log();
  return why_not;
}

void ChangeWatch::abandon(Interest& interest) {
  std::lock_guard lock(m_core->mutex);
  auto& state = m_core->interests.at(interest.id());
  m_core->note_change(state, "its read did not finish");
  if (!state.settled) {
    state.settled = true;
    --m_core->open_interests;
    m_core->trim_log();
  }
}

std::optional<std::string> ChangeWatch::changed(Interest& interest) {
  std::lock_guard lock(m_core->mutex);
  m_core->drain();
  const auto& state = m_core->interests.at(interest.id());
  if (!state.settled) {
    return "its read did not finish";
  }
  return state.change;
}

std::uint64_t ChangeWatch::events_read() const {
  std::lock_guard lock(m_core->mutex);
  return m_core->events;
}

}  // namespace envcontract::probes
