#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// The host's user database as a whole (getpwent: /etc/passwd, and a
// directory service that lets its users be listed), for the questions a
// lookup by name or uid cannot answer: who has a group as their primary
// group, which homes there are.
namespace envcontract::process {

struct UserEntry {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;  // the primary group
  std::filesystem::path home;
};

// Every user listed, read under one lock (glibc keeps one cursor per
// process: two walks at once would each see part of the list); nullopt
// when the list could not be read to its end.
std::optional<std::vector<UserEntry>> all_users();

// The same, read at most once per `max_age` and shared: a scan asks for
// every group-writable path of every env, and a directory service may take
// seconds to list its users. nullptr when it could not be read (and until
// `max_age` has passed since that attempt).
std::shared_ptr<const std::vector<UserEntry>> recent_users(
    std::chrono::seconds max_age = std::chrono::seconds(60));

}  // namespace envcontract::process
