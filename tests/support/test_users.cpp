#include "tests/support/test_users.hpp"

#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

namespace envcontract::testing {

std::optional<User> ensure_user(const std::string& name, const std::string& primary_group) {
  for (int attempt = 0; attempt < 20 && ::getpwnam(name.c_str()) == nullptr; ++attempt) {
    // Two test processes may race for /etc/passwd's lock: try again.
    const std::string command =
        "useradd --system --no-create-home " +
        (primary_group.empty() ? std::string("--user-group") : "--gid " + primary_group) +
        " --shell /usr/sbin/nologin " + name + " >/dev/null 2>&1";
    if (std::system(command.c_str()) != 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  const passwd* entry = ::getpwnam(name.c_str());
  if (entry == nullptr) {
    return std::nullopt;
  }
  // Copied: getpwnam's answer is overwritten by the next call.
  return User{entry->pw_name, entry->pw_uid, entry->pw_gid, entry->pw_dir};
}

void chown_tree(const std::filesystem::path& root, uid_t uid, gid_t gid) {
  ASSERT_EQ(::lchown(root.c_str(), uid, gid), 0) << root;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    ASSERT_EQ(::lchown(entry.path().c_str(), uid, gid), 0) << entry.path();
  }
}

std::map<std::string, std::string> status_fields(const std::string& text) {
  std::map<std::string, std::string> fields;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon != std::string::npos) {
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      fields[line.substr(0, colon)] = value;
    }
  }
  return fields;
}

}  // namespace envcontract::testing
