#include "process/scratch_directory.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "process/proc_stat.hpp"
#include "process/stall_guard.hpp"
#include "process/system_root.hpp"

namespace envcontract::process {
namespace fs = std::filesystem;

namespace {

constexpr int k_max_depth = 16;
constexpr std::size_t k_max_entries = 10'000;

// openat() of a name directly below `dir_fd` that neither follows a symlink
// nor crosses into a mount: a user who owns the directory can mount a FUSE
// filesystem on a name in it, and a lookup that crossed into one whose
// server never answers would block the agent for good. EXDEV then. Kernels
// before 5.6 have no openat2: plain openat, as before.
int open_below(int dir_fd, const char* name, int flags) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags) | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  for (int attempt = 0; attempt < 8; ++attempt) {
    const int fd = static_cast<int>(::syscall(SYS_openat2, dir_fd, name, &how, sizeof how));
    if (fd >= 0 || errno != EAGAIN) {
      if (fd < 0 && errno == ENOSYS) {
        return ::openat(dir_fd, name, flags | O_NOFOLLOW | O_CLOEXEC);
      }
      return fd;
    }
  }
  return -1;
}

std::optional<std::string> read_owned(int dir_fd, const char* name, uid_t owner,
                                      std::size_t max_bytes) {
  if (dir_fd < 0) {
    return std::nullopt;
  }
  // O_NONBLOCK: a FIFO planted here must not stall the agent.
  const int fd = open_below(dir_fd, name, O_RDONLY | O_NONBLOCK);
  if (fd < 0) {
    return std::nullopt;
  }
  struct stat info {};
  std::optional<std::string> text;
  // A hard link to a file of someone else's would pass O_NOFOLLOW: only the
  // child's user's own files are read.
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_uid == owner) {
    text.emplace();
    char chunk[65536];
    while (text->size() < max_bytes) {
      const ssize_t got = ::read(fd, chunk, std::min(sizeof chunk, max_bytes - text->size()));
      if (got <= 0) {
        break;
      }
      text->append(chunk, static_cast<std::size_t>(got));
    }
  }
  ::close(fd);
  return text;
}

}  // namespace

ScratchReader::ScratchReader(int dir_fd, uid_t owner)
    : m_fd(dir_fd < 0 ? -1 : ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0)), m_owner(owner) {}

ScratchReader::~ScratchReader() {
  if (m_fd >= 0) {
    ::close(m_fd);
  }
}

std::optional<std::string> ScratchReader::read(const char* name, std::size_t max_bytes) const {
  return read_owned(m_fd, name, m_owner, max_bytes);
}

ScratchDirectory::ScratchDirectory(const char* prefix, const std::optional<Credentials>& owner,
                                   const fs::path& root, const ProcessIdentity& root_process)
    : m_owner(owner) {
  if (!root.empty() && root != "/") {
    make_inside(prefix, root, root_process);
    return;
  }
  std::error_code error;
  std::string pattern = (fs::temp_directory_path(error) / (std::string(prefix) + "-XXXXXX"));
  if (error) {
    m_error = "no temporary directory: " + error.message();
    return;
  }
  if (::mkdtemp(pattern.data()) == nullptr) {
    m_error = pattern + ": " + std::strerror(errno);
    return;
  }
  m_path = pattern;
  m_fd = ::open(m_path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (m_fd < 0) {
    m_error = m_path.string() + ": " + std::strerror(errno);
  }
}

void ScratchDirectory::make_inside(const char* prefix, const fs::path& root,
                                   const ProcessIdentity& root_process) {
  const SystemRoot tree(root);
  // The tree is open: if its process is still the one chosen, it is that
  // process's root, whatever becomes of the PID from now on.
  if (root_process.pid > 0 && !tree.error().empty()) {
    m_error = "the root of the container's process: " + tree.error();
    return;
  }
  if (root_process.pid > 0 && process_start_time(root_process.pid) != root_process.start_time) {
    m_error = "process " + std::to_string(root_process.pid) +
              " of the container has ended since the scan began (the container stopped or "
              "restarted): its root is not entered";
    return;
  }
  note_reading(root / "tmp");  // the evidence, should the tree's /tmp not answer
  m_parent_fd = tree.open_inside("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC, true);
  if (m_parent_fd < 0) {
    m_error =
        tree.error().empty() ? (root / "tmp").string() + ": " + std::strerror(errno) : tree.error();
    return;
  }
  for (int attempt = 0; attempt < 64; ++attempt) {
    unsigned char random[6];
    if (::getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) {
      m_error = std::string("getrandom: ") + std::strerror(errno);
      return;
    }
    std::string name = std::string(prefix) + "-";
    for (const unsigned char byte : random) {
      constexpr const char* k_letters = "abcdefghijklmnopqrstuvwxyz0123456789";
      name.push_back(k_letters[byte % 36]);
    }
    if (::mkdirat(m_parent_fd, name.c_str(), 0700) != 0) {
      if (errno == EEXIST) {
        continue;
      }
      m_error = (root / "tmp").string() + ": " + std::strerror(errno);
      return;
    }
    m_name = name;
    m_path = fs::path("/tmp") / name;
    m_fd = ::openat(m_parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (m_fd < 0) {
      m_error = (root / "tmp" / name).string() + ": " + std::strerror(errno);
    }
    return;
  }
  m_error = (root / "tmp").string() + ": no unused name after 64 tries";
}

bool ScratchDirectory::write(const char* name, std::string_view text) {
  if (m_fd < 0) {
    return false;
  }
  const int fd = ::openat(m_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    m_error = (m_path / name).string() + ": " + std::strerror(errno);
    return false;
  }
  bool ok = ::fchmod(fd, 0644) == 0;  // whatever the umask
  while (ok && !text.empty()) {
    const ssize_t written = ::write(fd, text.data(), text.size());
    ok = written > 0;
    if (ok) {
      text.remove_prefix(static_cast<std::size_t>(written));
    }
  }
  ok = ::close(fd) == 0 && ok;
  if (!ok) {
    m_error = "writing " + (m_path / name).string() + ": " + std::strerror(errno);
  }
  return ok;
}

bool ScratchDirectory::hand_over() {
  if (m_fd < 0) {
    return false;
  }
  if (m_owner && ::fchown(m_fd, m_owner->uid, m_owner->gid) != 0) {
    m_error = "giving " + m_path.string() + " to uid " + std::to_string(m_owner->uid) + ": " +
              std::strerror(errno);
    return false;
  }
  return true;
}

ScratchDirectory::FifoEnds ScratchDirectory::make_fifo(const char* name) {
  FifoEnds ends;
  if (m_fd < 0) {
    return ends;
  }
  const auto failed = [&](const char* what) {
    m_error = what + (m_path / name).string() + ": " + std::strerror(errno);
    return FifoEnds{};
  };
  if (::mkfifoat(m_fd, name, 0600) != 0) {
    return failed("");
  }
  // The user owns the directory and may have put something else under the
  // name since: no link is followed and no mount entered, nothing is opened
  // for reading or writing before it is known to be the FIFO made here (a
  // device node opened by root would act outside the container's device
  // rules; a hard link to another user's FIFO would be handed over).
  const UniqueFd handle(open_below(m_fd, name, O_PATH));
  struct stat info {};
  if (!handle || ::fstat(handle.get(), &info) != 0) {
    return failed("opening ");
  }
  const bool ours = info.st_uid == ::geteuid() || (m_owner && info.st_uid == m_owner->uid);
  if (!S_ISFIFO(info.st_mode) || !ours || info.st_nlink != 1) {
    errno = EINVAL;
    return failed("not the FIFO made: ");
  }
  // Made by us (root): the child's user may open it once it is theirs.
  if (m_owner && ::fchownat(handle.get(), "", m_owner->uid, m_owner->gid, AT_EMPTY_PATH) != 0) {
    return failed("giving away ");
  }
  // Both ends by the handle, never by the name again.
  const std::string self = "/proc/self/fd/" + std::to_string(handle.get());
  ends.read = UniqueFd(::open(self.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!ends.read) {
    return failed("opening for reading ");
  }
  ends.write = UniqueFd(::open(self.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!ends.write) {
    return failed("opening for writing ");
  }
  return ends;
}

void ScratchDirectory::remove(const char* name) {
  if (m_fd >= 0) {
    ::unlinkat(m_fd, name, 0);
  }
}

std::optional<std::string> ScratchDirectory::read(const char* name, std::size_t max_bytes) const {
  return read_owned(m_fd, name, m_owner ? m_owner->uid : ::geteuid(), max_bytes);
}

std::shared_ptr<const ScratchReader> ScratchDirectory::reader() const {
  if (m_fd < 0) {
    return nullptr;
  }
  return std::make_shared<const ScratchReader>(m_fd, m_owner ? m_owner->uid : ::geteuid());
}

bool remove_contents_at(int dir_fd, int depth) {
  // A descriptor of its own, not a dup: a dup shares the caller's offset, and
  // a second listing through it would start at the end and see nothing.
  const int list_fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (list_fd < 0) {
    return false;
  }
  DIR* dir = ::fdopendir(list_fd);
  if (dir == nullptr) {
    ::close(list_fd);
    return false;
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") {
      names.push_back(name);
    }
    if (names.size() >= k_max_entries) {
      break;
    }
  }
  ::closedir(dir);
  bool empty = names.size() < k_max_entries;
  for (const auto& name : names) {
    if (::unlinkat(dir_fd, name.c_str(), 0) == 0 || errno == ENOENT) {
      continue;
    }
    if (errno != EISDIR || depth >= k_max_depth) {
      empty = false;
      continue;
    }
    // A mount on the name (a user's FUSE) is not entered: EXDEV, and it stays.
    const int child = open_below(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY);
    if (child < 0) {
      empty = false;
      continue;
    }
    remove_contents_at(child, depth + 1);
    ::close(child);
    empty = ::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) == 0 && empty;
  }
  return empty;
}

ScratchDirectory::~ScratchDirectory() {
  const bool made = m_fd >= 0;
  if (made) {
    remove_contents_at(m_fd);
    ::close(m_fd);
  }
  // By name, last: AT_REMOVEDIR removes only an empty directory, so if the
  // name now stands for something else, nothing of value goes.
  if (m_parent_fd >= 0) {
    if (made) {
      ::unlinkat(m_parent_fd, m_name.c_str(), AT_REMOVEDIR);
    }
    ::close(m_parent_fd);
  } else if (made) {
    ::rmdir(m_path.c_str());
  }
}

}  // namespace envcontract::process
