#include "freshness/change_keys.hpp"

#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstring>
#include <functional>
#include <string_view>

namespace envcontract::freshness {
namespace fs = std::filesystem;

std::uint64_t fsid_of(const void* fsid) {
  std::uint64_t value = 0;
  std::memcpy(&value, fsid, sizeof value);
  return value;
}

std::string key_of(const std::string& device, const std::string& path) {
  return device + ":" + path;
}

std::string object_key(std::uint64_t fsid, const file_handle& handle) {
  std::string identity;
  identity.append(reinterpret_cast<const char*>(&fsid), sizeof fsid);
  identity.append(reinterpret_cast<const char*>(&handle.handle_type), sizeof handle.handle_type);
  identity.append(reinterpret_cast<const char*>(handle.f_handle), handle.handle_bytes);
  // Hashed to 8 bytes, so that the key is held within the string itself:
  // every env's files with other names are followed (thousands of keys per
  // host, kept while the agent idles). Two files of one hash only make a
  // change to one count for both: an env read again, never one missed.
  const std::size_t hash = std::hash<std::string_view>{}(identity);
  std::string key(1, '\0');
  key.append(reinterpret_cast<const char*>(&hash), sizeof hash);
  return key;
}

bool is_object_key(const std::string& key) {
  return !key.empty() && key.front() == '\0';
}

std::string path_of_key(const std::string& key) {
  return key.substr(key.find(":/") + 1);
}

std::string parent_key(const std::string& key) {
  const auto colon = key.find(":/");  // the device's own colon comes before
  const auto slash = key.rfind('/');
  if (colon == std::string::npos || slash == std::string::npos || slash <= colon ||
      key.size() == colon + 2) {
    return {};
  }
  return slash == colon + 1 ? key.substr(0, colon + 2) : key.substr(0, slash);
}

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
      identity.fsid = fsid_of(&filesystem.f_fsid);
      identity.key = object_key(identity.fsid, handle);
      identity.real = std::string(buffer, static_cast<std::size_t>(length));
    } else if (status.st_nlink > 1) {
      identity.problem =
          file.string() + " has several names and the kernel gives no identity for it";
    }
  }
  ::close(fd);
  return identity;
}

}  // namespace envcontract::freshness
