#include "discovery/env_safety.hpp"
#include "process/small_files.hpp"
#include "process/stall_guard.hpp"
#include "process/system_root.hpp"
#include "process/user_database.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>

namespace envcontract::discovery {
namespace fs = std::filesystem;

namespace {

std::string user_name(uid_t uid) {
  passwd entry{};
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found) {
    return found->pw_name;
  }
  return std::to_string(uid);
}

// Whether a user other than `uid` (and root) has `gid` as its primary
// group: such a user belongs to the group without being listed among its
// members (/etc/group names only supplementary members). True as well when
// the user database could not be read: then nobody can say who is in it.
bool others_have_primary_group(gid_t gid, uid_t uid) {
  const auto users = process::recent_users();
  return !users || std::any_of(users->begin(), users->end(), [&](const process::UserEntry& user) {
    return user.gid == gid && user.uid != 0 && user.uid != uid;
  });
}

// A group whose write bit is harmless: one that holds nobody but the user the
// code runs as (the user's private group), or root's group with no member
// but root. Members are those /etc/group lists and every user whose primary
// group it is (a shared primary group such as `users` has no listed members
// at all; on Fedora and RHEL, sync, shutdown, halt and operator have root's).
// A directory service that does not let its users be listed (sssd's
// default) can hide the latter: a group-writable path is then trusted on
// what the host's own files say.
bool trusted_group(gid_t gid, const facts::RunAs& run_as) {
  if (gid != run_as.gid && gid != 0) {
    return false;
  }
  group entry{};
  group* found = nullptr;
  std::vector<char> buffer(65536);
  if (getgrgid_r(gid, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr) {
    return false;
  }
  for (char** member = found->gr_mem; member && *member; ++member) {
    if (run_as.user != *member) {
      return false;
    }
  }
  return !others_have_primary_group(gid, run_as.uid);
}

std::string group_name(gid_t gid) {
  group entry{};
  group* found = nullptr;
  std::vector<char> buffer(65536);
  if (getgrgid_r(gid, &entry, buffer.data(), buffer.size(), &found) == 0 && found) {
    return found->gr_name;
  }
  return std::to_string(gid);
}

class Checker {
 public:
  // `root`: the tree whose links resolve inside it (process/system_root.hpp's
  // canonical_in), "/" for the host.
  explicit Checker(const facts::RunAs& run_as, bool owners_are_facts = false, fs::path root = "/")
      : m_run_as(run_as), m_owners_are_facts(owners_are_facts), m_root(std::move(root)) {}

  // Only the tree's own files have owners the image chose; a link out of it
  // leads to the host's, whose owners are who they say.
  bool inside_tree(const fs::path& path) const {
    const std::string text = path.string();
    const std::string top = m_root.string();
    return top != "/" && !top.empty() && (text == top || text.starts_with(top + "/"));
  }

  fs::path real(const fs::path& path, std::error_code& error) const {
    return process::canonical_in(m_root, path, error);
  }

  // `as_parent`: a directory on the way, where a sticky world-writable
  // directory (/tmp) is fine: others cannot replace what they do not own.
  void check(const fs::path& path, bool as_parent) {
    // A directory passed as a parent (sticky /tmp is fine there) is checked
    // again when it is also a place code is loaded from.
    const auto seen = m_seen.find(path);
    if (seen != m_seen.end() && (seen->second || as_parent)) {
      return;
    }
    m_seen[path] = !as_parent;
    process::note_reading(path);
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0) {
      return;  // absent: nothing to load from it
    }
    const unsigned mode = info.st_mode & 07777;
    std::string why;
    if (info.st_uid != 0 && info.st_uid != m_run_as.uid &&
        !(m_owners_are_facts && inside_tree(path))) {
      why = "owned by " + user_name(info.st_uid) + ", who is neither root nor " + m_run_as.who();
    } else if (S_ISLNK(info.st_mode)) {
      return;  // a link's own mode means nothing; its directory and target are checked
    } else if ((mode & S_IWOTH) && !(as_parent && S_ISDIR(info.st_mode) && (mode & S_ISVTX))) {
      why = "writable by everyone";
    } else if ((mode & S_IWGRP) && !trusted_group(info.st_gid, m_run_as) &&
               !(as_parent && S_ISDIR(info.st_mode) && (mode & S_ISVTX))) {
      why = "writable by the group " + group_name(info.st_gid);
    }
    const bool listed = std::any_of(m_unsafe.begin(), m_unsafe.end(),
                                    [&](const UnsafePath& unsafe) { return unsafe.path == path; });
    if (!why.empty() && !listed) {
      m_unsafe.push_back(
          {path, user_name(info.st_uid), group_name(info.st_gid), mode, std::move(why)});
    }
  }

  // `path` and every directory above it, up to and including `top`.
  void check_with_parents(const fs::path& path, const fs::path& top) {
    check(path, false);
    for (fs::path dir = path.parent_path(); !dir.empty(); dir = dir.parent_path()) {
      check(dir, true);
      if (dir == top || dir == dir.root_path()) {
        break;
      }
    }
  }

  // Every .pth file of a site dir: site.py runs their import lines.
  void check_pth_files(const fs::path& site) {
    std::error_code error;
    std::vector<fs::path> pth_files;
    for (const std::string& name : process::list_names(site, error)) {
      if (fs::path(name).extension() == ".pth") {
        pth_files.push_back(site / name);
      }
    }
    std::sort(pth_files.begin(), pth_files.end());
    for (const auto& pth : pth_files) {
      check(pth, false);
      process::note_reading(pth);
      std::error_code unresolved;
      const fs::path resolved = real(pth, unresolved);
      if (!unresolved && resolved != pth) {
        check_with_parents(resolved, resolved.root_path());
      }
    }
  }

  std::vector<UnsafePath> take() { return std::move(m_unsafe); }

 private:
  const facts::RunAs& m_run_as;
  bool m_owners_are_facts = false;
  fs::path m_root;
  std::map<fs::path, bool> m_seen;  // path -> checked as a place code loads from
  std::vector<UnsafePath> m_unsafe;
};

}  // namespace

bool owners_are_facts(const facts::PythonEnv& env) {
  return env.system_root != "/" && env.exec.empty() && env.run_as.own_uid;
}

std::vector<UnsafePath> find_unsafe_paths(const SafetyInputs& inputs, const facts::RunAs& run_as) {
  Checker checker(run_as, inputs.owners_are_facts && run_as.own_uid, inputs.scan_root);
  const fs::path root = inputs.scan_root.empty() ? fs::path("/") : inputs.scan_root;
  checker.check_with_parents(inputs.prefix, root);
  if (!inputs.python.empty()) {
    checker.check_with_parents(inputs.python, inputs.prefix);
    // What it resolves to, wherever that is (a base interpreter for a venv).
    std::error_code error;
    const fs::path real = checker.real(inputs.python, error);
    if (!error) {
      checker.check_with_parents(real, real.root_path());
    }
  }
  for (const auto& file : inputs.activation) {
    checker.check_with_parents(file, inputs.prefix);
  }
  for (const auto& site : inputs.site_dirs) {
    checker.check_with_parents(site, inputs.prefix);
    checker.check_pth_files(site);
  }
  return checker.take();
}

std::vector<UnsafePath> find_unsafe_import_paths(const std::vector<fs::path>& paths,
                                                 const std::vector<fs::path>& site_dirs,
                                                 const facts::RunAs& run_as, bool owners_are_facts,
                                                 const fs::path& root) {
  Checker checker(run_as, owners_are_facts && run_as.own_uid, root);
  for (const auto& path : paths) {
    if (!path.is_absolute()) {
      continue;
    }
    // A link's own owner says nothing of where it leads: what it resolves
    // to (as far as it exists) is held to the same rule, with its parents.
    std::error_code error;
    const fs::path real = checker.real(path, error);
    for (const fs::path& place : {path, error ? path : real}) {
      // A place that does not exist yet is made by whoever may write the
      // nearest directory that does: that one is held to the rule in full
      // (a sticky /tmp lets anyone create /tmp/x).
      fs::path existing = place;
      struct stat info {};
      while (::lstat(existing.c_str(), &info) != 0 && errno == ENOENT &&
             existing != existing.root_path()) {
        existing = existing.parent_path();
      }
      checker.check_with_parents(existing, existing.root_path());
    }
  }
  for (const auto& site : site_dirs) {
    checker.check_pth_files(site);
  }
  return checker.take();
}

}  // namespace envcontract::discovery
