#include "process/probe_uids.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

namespace envcontract::process {
namespace fs = std::filesystem;

namespace {

// FNV-1a: the same key hashes the same in every build, unlike std::hash.
std::uint64_t stable_hash(const std::string& key) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const unsigned char byte : key) {
    hash = (hash ^ byte) * 1099511628211ULL;
  }
  return hash;
}

bool named_by_anyone(uid_t uid) {
  std::vector<char> buffer(16384);
  passwd user{};
  passwd* found_user = nullptr;
  group group_entry{};
  group* found_group = nullptr;
  // An error answers "named": a uid we cannot check is not handed out.
  return ::getpwuid_r(uid, &user, buffer.data(), buffer.size(), &found_user) != 0 ||
         found_user != nullptr ||
         ::getgrgid_r(static_cast<gid_t>(uid), &group_entry, buffer.data(), buffer.size(),
                      &found_group) != 0 ||
         found_group != nullptr;
}

// The uids this process holds, by key, and the lock file's descriptor
// (never closed: closing it would release every lock).
struct Reservations {
  std::mutex mutex;
  std::map<std::string, uid_t> by_key;
  std::set<uid_t> held;
  std::map<fs::path, int> lock_files;
};

Reservations& reservations() {
  static auto* kept = new Reservations;  // never destroyed: other threads may still ask
  return *kept;
}

// The lock file's descriptor, opened (and its directory made) once.
int lock_file_fd(Reservations& state, const fs::path& lock_file, std::string& problem) {
  if (const auto open = state.lock_files.find(lock_file); open != state.lock_files.end()) {
    return open->second;
  }
  std::error_code error;
  fs::create_directories(lock_file.parent_path(), error);
  const int fd = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    problem = "no uid of its own could be reserved for this root-owned env's code: " +
              lock_file.string() + ": " + std::strerror(errno) +
              " (the agent needs to write there; or set run_root_envs_as to a user)";
    return -1;
  }
  state.lock_files.emplace(lock_file, fd);
  return fd;
}

enum class Lock { taken, held_elsewhere, failed };

// Takes (or, with F_UNLCK, gives back) the byte of `uid` in the lock file:
// the uid itself, so that agents configured with other ranges still agree.
Lock lock_uid(int fd, uid_t uid, short type = F_WRLCK) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = static_cast<off_t>(uid);
  lock.l_len = 1;
  if (::fcntl(fd, F_OFD_SETLK, &lock) == 0) {
    return Lock::taken;
  }
  return errno == EAGAIN || errno == EACCES ? Lock::held_elsewhere : Lock::failed;
}

}  // namespace

ProbeUid reserve_probe_uid(const std::string& key, const ProbeUidRange& range,
                           const fs::path& lock_file) {
  ProbeUid answer;
  auto& state = reservations();
  const std::lock_guard lock(state.mutex);
  if (const auto known = state.by_key.find(key); known != state.by_key.end()) {
    answer.uid = known->second;
    return answer;
  }
  const int fd = lock_file_fd(state, lock_file, answer.problem);
  if (fd < 0) {
    return answer;
  }
  const uid_t start = range.count == 0 ? 0 : static_cast<uid_t>(stable_hash(key) % range.count);
  for (uid_t step = 0; step < range.count; ++step) {
    const uid_t uid = range.first + (start + step) % range.count;
    if (uid == 0 || state.held.count(uid) != 0) {
      continue;
    }
    // The lock first: a user database lookup (LDAP behind NSS) is only made
    // for a uid no other agent holds.
    const Lock taken = lock_uid(fd, uid);
    if (taken == Lock::failed) {
      answer.problem =
          "no uid of its own could be reserved for this root-owned env's code: "
          "locking " +
          lock_file.string() + ": " + std::strerror(errno);
      return answer;
    }
    if (taken == Lock::held_elsewhere) {
      continue;
    }
    if (named_by_anyone(uid)) {
      lock_uid(fd, uid, F_UNLCK);
      continue;
    }
    state.held.insert(uid);
    state.by_key.emplace(key, uid);
    answer.uid = uid;
    return answer;
  }
  answer.problem = "no uid of its own is free for this root-owned env's code: all " +
                   std::to_string(range.count) + " from " + std::to_string(range.first) +
                   " are held or named by a user or group";
  return answer;
}

}  // namespace envcontract::process
