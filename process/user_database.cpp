#include "process/user_database.hpp"

#include <pwd.h>

#include <cerrno>
#include <mutex>

namespace envcontract::process {

namespace {

std::mutex& walking() {
  static std::mutex lock;
  return lock;
}

}  // namespace

std::optional<std::vector<UserEntry>> all_users() {
  const std::lock_guard lock(walking());
  std::vector<UserEntry> users;
  std::vector<char> buffer(16384);
  bool complete = false;
  setpwent();
  for (;;) {
    passwd entry{};
    passwd* next = nullptr;
    const int error = getpwent_r(&entry, buffer.data(), buffer.size(), &next);
    if (error == ERANGE && buffer.size() < (1U << 20)) {
      // An entry longer than the buffer: the same entry again, with room.
      buffer.resize(buffer.size() * 4);
      continue;
    }
    if (error != 0 || next == nullptr) {
      complete = error == ENOENT || (error == 0 && next == nullptr);
      break;
    }
    users.push_back({next->pw_name, next->pw_uid, next->pw_gid, next->pw_dir});
  }
  endpwent();
  if (!complete) {
    return std::nullopt;
  }
  return users;
}

std::shared_ptr<const std::vector<UserEntry>> recent_users(std::chrono::seconds max_age) {
  static std::mutex guard;
  static std::shared_ptr<const std::vector<UserEntry>> kept;
  static std::optional<std::chrono::steady_clock::time_point> read_at;
  const std::lock_guard lock(guard);
  const auto now = std::chrono::steady_clock::now();
  // A list that could not be read is kept as unread for as long: a
  // directory service that fails slowly is not asked again at every path.
  if (!read_at || now - *read_at >= max_age) {
    auto users = all_users();
    kept = users ? std::make_shared<const std::vector<UserEntry>>(std::move(*users)) : nullptr;
    read_at = now;
  }
  return kept;
}

}  // namespace envcontract::process
