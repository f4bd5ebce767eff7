#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>

// Real unprivileged users for the tests that check who runs what.
namespace envcontract::testing {

struct User {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};

// A system user of the tests' own (no home, no login shell), made once per
// machine with useradd, in a group of its own or, given `primary_group`, in
// that existing group; nullopt when it cannot be made (not root).
std::optional<User> ensure_user(const std::string& name, const std::string& primary_group = "");

// Gives `root` and everything below it (links themselves, not their
// targets) to `uid`:`gid`. Fails the test on an error.
void chown_tree(const std::filesystem::path& root, uid_t uid, gid_t gid);

// "Name:\tvalue" lines, as /proc/PID/status gives who a process is and what
// it may do (Uid, Groups, CapEff, NoNewPrivs...), by name.
std::map<std::string, std::string> status_fields(const std::string& text);

}  // namespace envcontract::testing
