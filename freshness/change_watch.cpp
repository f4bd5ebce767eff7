#include "freshness/change_watch.hpp"

#include "freshness/change_keys.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace envcontract::freshness {
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
constexpr std::size_t k_max_log_bytes = 4 << 20;    // of paths logged while reads run
constexpr std::size_t k_max_known_dirs = 8192;      // directory handles resolved
// Each costs two opens and a readlink: a user who renames directories in a
// loop (which forgets the names known) costs the agent at most this many a
// second; past them every interest counts as changed.
constexpr std::size_t k_max_resolved_per_second = 20000;
// How often the reader thread reads the kernel's queue between questions.
constexpr std::chrono::milliseconds k_batch_interval{200};

}  // namespace

struct ChangeWatch::Core {
  // Opened again for each directory named (never held: a descriptor on
  // it would keep its filesystem from being unmounted).
  struct Filesystem {
    std::string point;    // where its root is mounted here
    std::string device;   // "major:minor"
    int root_watch = -1;  // the inotify watch that says when it is unmounted
  };
  struct State {
    std::uint64_t opened_at = 0;
    bool settled = false;
    std::optional<Change> change;
    // Its keys in the indexes below.
    std::vector<std::string> touching, trees, entries, objects;
  };
  enum class Index { touching, trees, entries, objects };

  // What one read depended on, resolved (before the lock: following links
  // may wait on a slow disk): paths by name, with their links' steps, and
  // files by identity.
  struct Resolved {
    struct Named {
      fs::path path;
      Index kind;
    };
    struct Identified {
      std::string device;  // as the mount table names it
      std::uint64_t fsid = 0;
      std::string key;
    };
    std::vector<Named> named;
    std::vector<Identified> identified;
    std::string unidentified;  // why a file could not be identified, the first
  };
  static Resolved resolve(const process::ReadDependencies& dependencies,
                          const process::MountTable& mounts);
  // Under the lock: each settles one interest `id` of `state`, and the first
  // reason its changes cannot all be seen goes to `why_not`.
  void index_files(std::uint64_t id, State& state,
                   const std::vector<Resolved::Identified>& identified,
                   const process::MountTable& mounts, bool& newly_marked, std::string& why_not);
  std::vector<std::pair<std::string, Index>> keys_of(const std::vector<Resolved::Named>& named,
                                                     const process::MountTable& mounts,
                                                     bool& newly_marked, std::string& why_not);
  void index_keys(std::uint64_t id, State& state,
                  const std::vector<std::pair<std::string, Index>>& keys);
  // What changed while the read ran, now that its paths are known.
  void catch_up(std::uint64_t id, State& state);

  mutable std::mutex mutex;
  int fan_fd = -1;
  // A filesystem mark ends with its filesystem: unmounted and mounted again
  // (the same device, the same place), it reports nothing. An inotify
  // watch on its root says when it goes (IN_UNMOUNT), without keeping it
  // from going as an open descriptor would.
  int unmount_fd = -1;
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
  std::size_t log_bytes = 0;
  std::uint64_t last_lost = 0;  // 0: none
  std::size_t open_interests = 0;
  // Interests no change has ended yet: while there are none, and no read
  // runs, events are counted and not resolved.
  std::size_t waiting = 0;
  std::uint64_t events = 0;
  // Directories named again from their handles in the current second.
  std::chrono::steady_clock::time_point window_start;
  std::size_t resolved_in_window = 0;
  // The lengths of the trees' keys (and how many trees have each).
  std::map<std::size_t, std::size_t> tree_lengths;
  // Set once the kernel's queue cannot be read: every interest is changed.
  std::optional<std::string> broken;

  ~Core() {
    if (fan_fd >= 0) {
      ::close(fan_fd);
    }
    if (unmount_fd >= 0) {
      ::close(unmount_fd);
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

  void note_change(State& state, Change change) {
    if (!state.change) {
      state.change = std::move(change);
      --waiting;
    }
  }

  // Every interest, those whose read still runs too: nothing that happens
  // later is lost (what is still queued is read at the next drain).
  void everything_changed(Change::Kind kind, const std::string& why) {
    for (auto& [id, state] : interests) {
      note_change(state, Change{kind, {}, why});
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
    // The trees it lies in: looked up by the lengths of the trees' own
    // keys, not by every ancestor (a path thousands of directories deep
    // would cost as many copies of itself).
    for (const auto& [length, count] : tree_lengths) {
      if (length >= key.size()) {
        break;
      }
      if (key[length] != '/' && !(key[length - 1] == '/' && length == key.find(":/") + 2)) {
        continue;
      }
      if (const auto it = trees.find(key.substr(0, length)); it != trees.end()) {
        for (const auto id : it->second) {
          visit(id);
        }
      }
    }
  }

  static Change describe(const std::string& key) {
    if (is_object_key(key)) {
      return {
          Change::Kind::path_changed, {}, "a file it read changed (through another of its names)"};
    }
    const std::string path = path_of_key(key);
    return {Change::Kind::path_changed, path, path + " changed"};
  }

  void changed_at(const std::string& key) {
    match(key, [&](std::uint64_t id) { note_change(interests.at(id), describe(key)); });
    if (open_interests > 0) {
      if (log.size() < max_logged && log_bytes + key.size() <= k_max_log_bytes) {
        log_bytes += key.size();
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
      return std::nullopt;  // not one an interest depends on
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - window_start >= std::chrono::seconds(1)) {
      window_start = now;
      resolved_in_window = 0;
    }
    if (++resolved_in_window > k_max_resolved_per_second) {
      everything_changed(Change::Kind::lost,
                         "more directories changed in a second than the agent follows");
      return std::nullopt;
    }
    const std::string unnamed =
        "a changed directory of " + filesystem->second.point + " could not be named again";
    const int root = ::open(filesystem->second.point.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct statfs mounted {};
    if (root < 0 || ::fstatfs(root, &mounted) != 0 || fsid_of(&mounted.f_fsid) != fsid) {
      if (root >= 0) {
        ::close(root);
      }
      // Unmounted, or another filesystem mounted there: marked again where
      // it is now by the next read that depends on it.
      everything_changed(Change::Kind::remounted,
                         filesystem->second.point + " is no longer the filesystem watched there");
      forget_filesystem(fsid);
      return std::nullopt;
    }
    const int fd = ::open_by_handle_at(root, const_cast<file_handle*>(&handle), O_PATH | O_CLOEXEC);
    const int open_error = errno;
    ::close(root);
    if (fd < 0) {
      // Gone already (ESTALE): its removal is an event of its parent's.
      if (open_error != ESTALE && open_error != ENOENT) {
        everything_changed(Change::Kind::lost, unnamed + ": " + std::strerror(open_error));
      }
      return std::nullopt;
    }
    struct stat status {};
    char buffer[PATH_MAX];
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const bool removed = ::fstat(fd, &status) == 0 && status.st_nlink == 0;
    const ssize_t length = removed ? 0 : ::readlink(link.c_str(), buffer, sizeof buffer - 1);
    ::close(fd);
    if (removed) {
      return std::nullopt;  // removed since: that is an event of its parent's
    }
    if (length <= 0 || buffer[0] != '/') {
      everything_changed(Change::Kind::lost, unnamed);
      return std::nullopt;
    }
    std::string path(buffer, static_cast<std::size_t>(length));
    const std::string& point = filesystem->second.point;
    if (point != "/") {
      if (path == point) {
        path = "/";
      } else if (path.starts_with(point + "/")) {
        path = path.substr(point.size());
      } else {
        everything_changed(Change::Kind::lost, unnamed + ": it is outside " + point);
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

  // One event: its header (copied out) and its record's bytes.
  void take_event(const fanotify_event_metadata& event, const char* record, const char* end) {
    ++events;
    if (event.metadata_len < sizeof event || event.metadata_len > event.event_len) {
      return;
    }
    const char* at = record + event.metadata_len;
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
    // Unmounts first: a change queued on a filesystem since gone is still
    // read below, and counts.
    drain_unmounts();
    alignas(fanotify_event_metadata) static thread_local std::array<char, 64 * 1024> buffer;
    for (std::size_t reads = 0; !broken; ++reads) {
      const ssize_t length = ::read(fan_fd, buffer.data(), buffer.size());
      if (length < 0 && errno != EAGAIN && errno != EINTR) {
        broken = std::string("the kernel's changes cannot be read: ") + std::strerror(errno);
        everything_changed(Change::Kind::lost, *broken);
        return;
      }
      if (length <= 0) {
        return;  // EAGAIN: nothing more queued
      }
      if (reads >= k_max_reads_per_drain) {
        // What is still queued counts as changed for every read open now,
        // and is read on the next round.
        everything_changed(Change::Kind::lost, "more changes at once than the agent follows");
        return;
      }
      // Events with file handles are aligned to 4 bytes, not to the 8 their
      // header's 64-bit mask needs: each header is copied out, never cast.
      const auto end = static_cast<std::size_t>(length);
      for (std::size_t offset = 0; offset + sizeof(fanotify_event_metadata) <= end;) {
        fanotify_event_metadata event{};
        std::memcpy(&event, buffer.data() + offset, sizeof event);
        if (event.event_len < sizeof event || offset + event.event_len > end) {
          break;
        }
        const char* record = buffer.data() + offset;
        offset += event.event_len;
        if (event.vers != FANOTIFY_METADATA_VERSION) {
          everything_changed(Change::Kind::lost,
                             "the kernel's changes came in a form the agent does not read");
          continue;
        }
        if ((event.mask & FAN_Q_OVERFLOW) != 0) {
          everything_changed(Change::Kind::lost, "the kernel's queue of changes overflowed");
          continue;
        }
        // A directory renamed or removed: the handles known to name its
        // subdirectories' paths may name others now, whoever is interested.
        if ((event.mask & FAN_ONDIR) != 0 &&
            (event.mask & (FAN_MOVED_FROM | FAN_MOVED_TO | FAN_DELETE | FAN_MOVE_SELF)) != 0) {
          known_dirs.clear();
        }
        if (waiting == 0) {
          ++events;
          continue;  // every interest has changed already: nothing to match
        }
        take_event(event, record, record + event.event_len);
      }
    }
  }

  // Marks the filesystem mounted whole at `whole`; "" or why not. Events
  // name their filesystem by its id: two filesystems with one id (a cloned
  // disk, a snapshot, an image made to match) cannot be told apart, and
  // the second is not watched.
  std::string mark_whole(const process::MountTable::Mount& whole, const std::string& device) {
    struct statfs info {};
    if (::statfs(whole.point.c_str(), &info) != 0) {
      return whole.point.string() + ": " + std::strerror(errno);
    }
    const std::uint64_t fsid = fsid_of(&info.f_fsid);
    if (const auto same = filesystems.find(fsid);
        same != filesystems.end() && same->second.device != device) {
      return "a filesystem whose id its changes are told by is also that of " + same->second.point;
    }
    if (::fanotify_mark(fan_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, k_change_mask, AT_FDCWD,
                        whole.point.c_str()) != 0) {
      return "the kernel would not watch " + whole.point.string() + " (" + whole.fstype +
             "): " + std::strerror(errno);
    }
    const int root_watch =
        ::inotify_add_watch(unmount_fd, whole.point.c_str(), IN_DELETE_SELF | IN_ONLYDIR);
    if (root_watch < 0) {
      const int error = errno;
      ::fanotify_mark(fan_fd, FAN_MARK_REMOVE | FAN_MARK_FILESYSTEM, k_change_mask, AT_FDCWD,
                      whole.point.c_str());
      return "the kernel would not say when " + whole.point.string() +
             " is unmounted: " + std::strerror(error);
    }
    filesystems[fsid] = {whole.point.string(), device, root_watch};
    return "";
  }

  // A filesystem no longer watched (unmounted, or moved): every interest
  // counts as changed, and the next read on it marks it anew.
  void forget_filesystem(std::uint64_t fsid) {
    const auto it = filesystems.find(fsid);
    if (it == filesystems.end()) {
      return;
    }
    ::inotify_rm_watch(unmount_fd, it->second.root_watch);
    marks.erase(it->second.device);
    filesystems.erase(it);
    known_dirs.clear();
  }

  // Reads what inotify says of the watched filesystems' roots.
  void drain_unmounts() {
    alignas(inotify_event) std::array<char, 4096> buffer;
    while (true) {
      const ssize_t length = ::read(unmount_fd, buffer.data(), buffer.size());
      if (length <= 0) {
        return;
      }
      for (ssize_t at = 0; at + static_cast<ssize_t>(sizeof(inotify_event)) <= length;) {
        inotify_event event{};
        std::memcpy(&event, buffer.data() + at, sizeof event);
        at += static_cast<ssize_t>(sizeof(inotify_event) + event.len);
        std::vector<std::uint64_t> gone;
        // Notices of unmounts lost: any filesystem may have gone.
        const bool overflowed = (event.mask & IN_Q_OVERFLOW) != 0;
        for (const auto& [fsid, filesystem] : filesystems) {
          if (overflowed || ((event.mask & (IN_UNMOUNT | IN_IGNORED | IN_DELETE_SELF)) != 0 &&
                             filesystem.root_watch == event.wd)) {
            if (overflowed) {
              everything_changed(Change::Kind::lost, "the kernel's notices of unmounts overflowed");
            } else {
              everything_changed(Change::Kind::remounted, filesystem.point + " was unmounted");
            }
            gone.push_back(fsid);
          }
        }
        for (const auto fsid : gone) {
          forget_filesystem(fsid);
        }
      }
    }
  }

  // The filesystem holding `device` marked, or why it cannot be.
  std::string mark(const std::string& device, const process::MountTable& mounts, bool& newly) {
    if (const auto known = marks.find(device); known != marks.end()) {
      return known->second.value_or("");
    }
    std::string why;
    const process::MountTable::Mount* whole = nullptr;
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
    } else {
      why = mark_whole(*whole, device);
      newly = newly || why.empty();
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
    if (!it->second.change) {
      --waiting;
    }
    for (const auto& key : it->second.trees) {
      if (--tree_lengths[key.size()] == 0) {
        tree_lengths.erase(key.size());
      }
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

  // Lets go of what happened before every read still running began.
  void trim_log() {
    if (open_interests == 0) {
      log.clear();
      log.shrink_to_fit();
      log_bytes = 0;
      last_lost = 0;
      return;
    }
    std::uint64_t oldest = events;
    for (const auto& [id, state] : interests) {
      if (!state.settled) {
        oldest = std::min(oldest, state.opened_at);
      }
    }
    const auto first_kept = std::find_if(log.begin(), log.end(),
                                         [&](const auto& entry) { return entry.first > oldest; });
    for (auto it = log.begin(); it != first_kept; ++it) {
      log_bytes -= it->second.size();
    }
    log.erase(log.begin(), first_kept);
  }

  // Reads the queue in batches, not at each change: a host that trains
  // writes logs and checkpoints all day, and waking for each write would
  // cost the agent a wakeup per write(). Between batches the kernel merges
  // repeated changes of one file; every question asked of the watch reads
  // the queue first, so nothing is answered from a stale state. A queue
  // that fills meanwhile (16,384 changes) overflows: every interest counts
  // as changed.
  void read_until_stopped() {
    pollfd stop{stop_fd, POLLIN, 0};
    while (true) {
      const int ready = ::poll(&stop, 1, static_cast<int>(k_batch_interval.count()));
      if (ready < 0 && errno != EINTR) {
        return;
      }
      if ((stop.revents & POLLIN) != 0) {
        return;
      }
      std::lock_guard lock(mutex);
      drain();
      if (broken) {
        return;  // what could not be read cannot be waited for either
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
  core->unmount_fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (core->unmount_fd < 0) {
    why_not = std::string("inotify_init1: ") + std::strerror(errno);
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
  ++m_core->waiting;
  if (m_core->broken) {
    m_core->note_change(state, Change{Change::Kind::lost, {}, *m_core->broken});
  }
  return std::make_shared<Interest>(m_core, id);
}

ChangeWatch::Core::Resolved ChangeWatch::Core::resolve(
    const process::ReadDependencies& dependencies, const process::MountTable& mounts) {
  // (Trees and entries directories come with their links' targets:
  // add_link_targets.)
  Resolved resolved;
  const auto add_with_links = [&](const fs::path& path) {
    resolved.named.push_back({path, Index::touching});
    for (auto& step : process::link_chain(path)) {
      resolved.named.push_back({std::move(step), Index::touching});
    }
  };
  for (const auto& tree : dependencies.trees) {
    resolved.named.push_back({tree, Index::trees});
  }
  for (const auto& dir : dependencies.entries) {
    resolved.named.push_back({dir, Index::entries});
  }
  for (const auto& path : dependencies.paths) {
    add_with_links(path);
  }
  // Each file read, by identity, and by the path its links lead to.
  for (const auto& file : dependencies.files) {
    auto identity = identify(file);
    if (!identity.problem.empty()) {
      if (resolved.unidentified.empty()) {
        resolved.unidentified = identity.problem;
      }
      continue;
    }
    if (identity.key.empty()) {
      continue;  // absent: its name is watched
    }
    if (identity.real != file.lexically_normal()) {
      add_with_links(file);  // each link on the way, wherever it is
    }
    // The device as the mount table names it (on btrfs a file's st_dev is
    // its subvolume's, which no mount names).
    resolved.identified.push_back(
        {mounts.mount_of(identity.real).device, identity.fsid, std::move(identity.key)});
  }
  return resolved;
}

void ChangeWatch::Core::index_files(std::uint64_t id, State& state,
                                    const std::vector<Resolved::Identified>& identified,
                                    const process::MountTable& mounts, bool& newly_marked,
                                    std::string& why_not) {
  for (const auto& file : identified) {
    const std::string problem = mark(file.device, mounts, newly_marked);
    if (!problem.empty()) {
      if (why_not.empty()) {
        why_not = "a file it read is on " + problem;
      }
      continue;
    }
    if (!filesystems.contains(file.fsid) || filesystems.at(file.fsid).device != file.device) {
      // Its changes would come with its filesystem's id, which is not this
      // file's (a btrfs subvolume's own id): they could not be matched.
      if (why_not.empty()) {
        why_not = "a file it read is told apart by another id than its filesystem's";
      }
      continue;
    }
    auto& ids = objects[file.key];
    if (ids.empty() || ids.back() != id) {
      ids.push_back(id);
      state.objects.push_back(file.key);
    }
  }
}

std::vector<std::pair<std::string, ChangeWatch::Core::Index>> ChangeWatch::Core::keys_of(
    const std::vector<Resolved::Named>& named, const process::MountTable& mounts,
    bool& newly_marked, std::string& why_not) {
  std::vector<std::pair<std::string, Index>> keys;
  for (const auto& [path, kind] : named) {
    const auto mount = mounts.mount_of(path);
    const std::string problem = mark(mount.device, mounts, newly_marked);
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
  return keys;
}

void ChangeWatch::Core::index_keys(std::uint64_t id, State& state,
                                   const std::vector<std::pair<std::string, Index>>& keys) {
  for (const auto& [key, kind] : keys) {
    // The key and each of its ancestors touch it: a rename or removal on the way counts.
    for (std::string at = key; !at.empty(); at = parent_key(at)) {
      auto& ids = touching[at];
      if (ids.empty() || ids.back() != id) {
        ids.push_back(id);
        state.touching.push_back(at);
      }
    }
    if (kind != Index::touching) {
      index(kind)[key].push_back(id);
      (kind == Index::trees ? state.trees : state.entries).push_back(key);
      if (kind == Index::trees) {
        ++tree_lengths[key.size()];
      }
    }
  }
}

void ChangeWatch::Core::catch_up(std::uint64_t id, State& state) {
  if (last_lost > state.opened_at) {
    note_change(
        state,
        Change{Change::Kind::lost, {}, "more changed while it was read than the agent follows"});
  }
  for (const auto& logged : log) {
    if (logged.first <= state.opened_at || state.change) {
      continue;
    }
    match(logged.second, [&](std::uint64_t matched) {
      if (matched == id) {
        Change change = describe(logged.second);
        change.kind = Change::Kind::changed_while_read;
        change.text += " while it was read";
        note_change(state, std::move(change));
      }
    });
  }
  trim_log();
}

std::string ChangeWatch::settle(Interest& interest, const process::ReadDependencies& dependencies,
                                const process::MountTable& mounts) {
  // Resolved before the lock: following links may wait on a slow disk.
  const auto resolved = Core::resolve(dependencies, mounts);
  std::lock_guard lock(m_core->mutex);
  m_core->drain();
  auto& state = m_core->interests.at(interest.id());
  if (state.settled) {
    return "settled twice";
  }
  state.settled = true;
  --m_core->open_interests;
  std::string why_not =
      dependencies.incomplete.empty() ? resolved.unidentified : dependencies.incomplete;
  bool newly_marked = false;
  m_core->index_files(interest.id(), state, resolved.identified, mounts, newly_marked, why_not);
  const auto keys = m_core->keys_of(resolved.named, mounts, newly_marked, why_not);
  if (!why_not.empty()) {
    m_core->note_change(state, Change{Change::Kind::not_watched, {}, "not watched: " + why_not});
  } else if (newly_marked) {
    m_core->note_change(state, Change{Change::Kind::first_watch,
                                      {},
                                      "its filesystem was not yet watched while it was read"});
  }
  m_core->index_keys(interest.id(), state, keys);
  m_core->catch_up(interest.id(), state);
  return why_not;
}

void ChangeWatch::abandon(Interest& interest) {
  std::lock_guard lock(m_core->mutex);
  auto& state = m_core->interests.at(interest.id());
  m_core->note_change(state, Change{Change::Kind::unfinished, {}, "its read did not finish"});
  if (!state.settled) {
    state.settled = true;
    --m_core->open_interests;
    m_core->trim_log();
  }
}

std::optional<Change> ChangeWatch::changed(Interest& interest) {
  std::lock_guard lock(m_core->mutex);
  m_core->drain();
  const auto& state = m_core->interests.at(interest.id());
  if (!state.settled) {
    return Change{Change::Kind::unfinished, {}, "its read did not finish"};
  }
  return state.change;
}

}  // namespace envcontract::freshness
