#include "process/mount_table.hpp"

#include <pwd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <vector>

namespace envcontract::process {
namespace fs = std::filesystem;

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      int value = 0;
      const auto* first = field.data() + i + 1;
      const auto [end, error] = std::from_chars(first, first + 3, value, 8);
      if (error == std::errc() && end == first + 3) {
        out += static_cast<char>(value);
        i += 3;
        continue;
      }
    }
    out += field[i];
  }
  return out;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) {
      break;
    }
    start = end + 1;
  }
  return parts;
}

bool is_fuse(std::string_view fstype) {
  return fstype == "fuse" || fstype == "fuseblk" || fstype.starts_with("fuse.");
}

// FUSE records the mounting user as user_id=N among the superblock options;
// one without it is treated as a user's: it cannot be shown to be root's.
std::optional<uid_t> mounting_user(std::string_view super_options) {
  for (const auto option : split(super_options, ',')) {
    if (option.starts_with("user_id=")) {
      uid_t uid = 0;
      const auto digits = option.substr(8);
      const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), uid);
      if (error == std::errc() && end == digits.data() + digits.size()) {
        return uid;
      }
    }
  }
  return std::nullopt;
}

bool at_or_below(const fs::path& path, const fs::path& top) {
  const std::string& text = path.native();
  // "/home/alice/" names the same directory as "/home/alice".
  std::string_view prefix = top.native();
  while (prefix.size() > 1 && prefix.ends_with('/')) {
    prefix.remove_suffix(1);
  }
  if (prefix == "/") {
    return true;
  }
  return text == prefix || (text.starts_with(prefix) && text[prefix.size()] == '/');
}

}  // namespace

std::string describe(const UserMount& mount) {
  std::string who = "uid " + std::to_string(mount.user_id);
  passwd entry{};
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (::getpwuid_r(mount.user_id, &entry, buffer.data(), buffer.size(), &found) == 0 &&
      found != nullptr) {
    who = std::string(found->pw_name) + " (" + who + ")";
  }
  return mount.mount_point.string() + " is a " + mount.fstype + " filesystem mounted by " + who;
}

MountTable MountTable::parse(std::string_view mountinfo) {
  MountTable table;
  for (const auto line : split(mountinfo, '\n')) {
    const auto fields = split(line, ' ');
    // id parent major:minor root mount-point options [optional...] - fstype source super
    std::size_t dash = 6;
    while (dash < fields.size() && fields[dash] != "-") {
      ++dash;
    }
    if (fields.size() < 7 || dash + 3 >= fields.size()) {
      continue;
    }
    const auto fstype = fields[dash + 1];
    table.m_mounts.push_back({fs::path(unescape(fields[4])), std::string(fstype),
                              fs::path(unescape(fields[3])), std::string(fields[2]),
                              std::string(fields[5])});
    if (!is_fuse(fstype)) {
      continue;
    }
    const auto user = mounting_user(fields[dash + 3]);
    if (user && *user == 0) {
      continue;  // root's own (a site-wide CVMFS, an admin's sshfs)
    }
    table.m_user_mounts.push_back({fs::path(unescape(fields[4])), std::string(fstype),
                                   user.value_or(static_cast<uid_t>(-1))});
  }
  return table;
}

MountTable MountTable::load() {
  std::ifstream file("/proc/self/mountinfo");
  std::ostringstream text;
  text << file.rdbuf();
  return parse(text.str());
}

std::optional<UserMount> MountTable::holding(const fs::path& path) const {
  for (const auto& mount : m_user_mounts) {
    if (at_or_below(path, mount.mount_point)) {
      return mount;
    }
  }
  return std::nullopt;
}

MountTable::Mount MountTable::mount_of(const fs::path& path) const {
  Mount best{"/", "", "/", "", ""};
  for (const auto& mount : m_mounts) {
    if (at_or_below(path, mount.point) &&
        mount.point.native().size() >= best.point.native().size()) {
      best = mount;
    }
  }
  return best;
}

bool served_from_elsewhere(const std::string& fstype) {
  static const char* const k_remote[] = {"nfs",    "nfs4",     "cifs", "smb3",      "ceph",
                                         "lustre", "gpfs",     "9p",   "glusterfs", "afs",
                                         "beegfs", "orangefs", "sshfs"};
  for (const char* remote : k_remote) {
    if (fstype == remote) {
      return true;
    }
  }
  return is_fuse(fstype);
}

std::optional<UserMount> MountTable::within(const fs::path& dir) const {
  for (const auto& mount : m_user_mounts) {
    if (at_or_below(mount.mount_point, dir)) {
      return mount;
    }
  }
  return std::nullopt;
}

}  // namespace envcontract::process
