#include "process/run_as.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace envcontract::process {
namespace fs = std::filesystem;

namespace {

// The passwd entry of `uid` or `name` as a RunAs (reason and switch left to the caller).
bool fill_from_passwd(const passwd& entry, RunAs& run_as) {
  run_as.uid = entry.pw_uid;
  run_as.gid = entry.pw_gid;
  run_as.user = entry.pw_name;
  run_as.home = entry.pw_dir && *entry.pw_dir ? entry.pw_dir : "/";
  run_as.shell = entry.pw_shell && *entry.pw_shell ? entry.pw_shell : "/bin/sh";
  // initgroups' answer, read without changing anything.
  int count = 64;
  std::vector<gid_t> groups(static_cast<std::size_t>(count));
  while (getgrouplist(entry.pw_name, entry.pw_gid, groups.data(), &count) < 0) {
    if (count > 65536) {
      return false;
    }
    groups.resize(static_cast<std::size_t>(count));
  }
  groups.resize(static_cast<std::size_t>(count));
  run_as.groups = std::move(groups);
  return true;
}

std::optional<RunAs> lookup_uid(uid_t uid) {
  passwd entry{};
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr) {
    return std::nullopt;
  }
  RunAs run_as;
  if (!fill_from_passwd(entry, run_as)) {
    return std::nullopt;
  }
  return run_as;
}

bool agent_is_root() {
  return ::geteuid() == 0;
}

// This thread's filesystem uid, read without changing it (an invalid id is
// refused and the call answers the current one).
uid_t current_fsuid() {
  return static_cast<uid_t>(::syscall(SYS_setfsuid, -1));
}

// A root-owned env's code as a uid of its own: no passwd entry, its gid the
// same number, no supplementary group, a home that does not exist.
RunAs dynamic_run_as(const RunAsPolicy& policy, const fs::path& prefix) {
  RunAs run_as;
  run_as.reason =
      "the env is owned by root: its code runs as a uid of its own (run_root_envs_as: dynamic)";
  run_as.for_root_owned_env = true;
  run_as.switch_credentials = true;
  run_as.home = "/nonexistent";
  if (prefix.empty()) {
    run_as.user = "dynamic";
    run_as.problem = "no env was named to reserve a uid of its own for";
    return run_as;
  }
  const ProbeUid reserved = reserve_probe_uid(prefix.string(), policy.probe_uids);
  if (!reserved.problem.empty()) {
    run_as.user = "dynamic";
    run_as.problem = reserved.problem;
    return run_as;
  }
  run_as.uid = reserved.uid;
  run_as.gid = static_cast<gid_t>(reserved.uid);
  run_as.user = std::to_string(reserved.uid);
  run_as.own_uid = true;
  return run_as;
}

}  // namespace

RunAs run_as_user(const std::string& name) {
  RunAs run_as;
  passwd entry{};
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) == 0 && found &&
      fill_from_passwd(entry, run_as)) {
    return run_as;
  }
  // A numeric id without a passwd entry still names credentials.
  if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos &&
      name.size() < 10) {
    if (auto by_uid = lookup_uid(static_cast<uid_t>(std::stoul(name)))) {
      return *by_uid;
    }
  }
  run_as.user = name;
  run_as.problem = "there is no user '" + name + "' on this host";
  return run_as;
}

RunAs resolve_run_as(uid_t owner, const RunAsPolicy& policy, const fs::path& prefix) {
  RunAs run_as;
  if (!agent_is_root()) {
    // An unprivileged agent cannot change users: everything runs as itself,
    // which is no more than that user could run anyway.
    run_as = lookup_uid(::geteuid()).value_or(RunAs{});
    run_as.uid = ::geteuid();
    run_as.gid = ::getegid();
    if (run_as.user.empty()) {
      run_as.user = std::to_string(run_as.uid);
    }
    run_as.reason = "the agent is not root: env code runs as the agent's own user";
    return run_as;
  }
  if (owner != 0) {
    if (auto found = lookup_uid(owner)) {
      run_as = std::move(*found);
    } else {
      // Files of a uid with no passwd entry (an unpacked archive, a container
      // user): that uid, its file's group unknown, so the nobody group.
      run_as.uid = owner;
      run_as.user = std::to_string(owner);
      const RunAs nobody = run_as_user("nobody");
      run_as.gid = nobody.gid;
      if (!nobody.problem.empty() || nobody.gid == 0) {
        // Never root's group for lack of another.
        run_as.problem = "uid " + run_as.user +
                         " has no passwd entry and there is no 'nobody' group to run it with";
      }
    }
    run_as.reason = "owner of the env";
    run_as.switch_credentials = true;
    return run_as;
  }
  if (policy.root_envs_user == "root") {
    run_as = lookup_uid(0).value_or(RunAs{});
    run_as.uid = 0;
    run_as.gid = 0;
    run_as.user = "root";
    run_as.reason = "root by configuration (run_root_envs_as: root): this env's code runs as root";
    return run_as;
  }
  if (policy.root_envs_user == k_dynamic_probe_user) {
    return dynamic_run_as(policy, prefix);
  }
  run_as = run_as_user(policy.root_envs_user);
  if (run_as.problem.empty() && run_as.uid == 0) {
    run_as.problem = "run_root_envs_as names '" + policy.root_envs_user +
                     "', which is root; write 'root' to mean root";
  }
  run_as.reason = "the env is owned by root: run as the configured user (run_root_envs_as)";
  run_as.for_root_owned_env = true;
  run_as.switch_credentials = true;
  return run_as;
}

RunAs run_as_for_prefix(const fs::path& prefix, const RunAsPolicy& policy) {
  struct stat info {};
  if (::stat(prefix.c_str(), &info) != 0) {
    // Unknown owner: the safest credentials we have.
    return resolve_run_as(agent_is_root() ? run_as_user("nobody").uid : ::geteuid(), policy);
  }
  return resolve_run_as(info.st_uid, policy, prefix);
}

RunAs run_as_for_image_env(const fs::path& prefix, const RunAsPolicy& policy) {
  if (!agent_is_root()) {
    return resolve_run_as(::geteuid(), policy, prefix);
  }
  struct stat info {};
  const std::string owner =
      ::stat(prefix.c_str(), &info) == 0 ? "uid " + std::to_string(info.st_uid) : "unknown";
  // run_root_envs_as: root is the operator's word about root's own envs, not
  // about what an image's author put in a tree.
  RunAsPolicy image_policy = policy;
  if (image_policy.root_envs_user == "root") {
    image_policy.root_envs_user = k_dynamic_probe_user;
  }
  RunAs run_as = resolve_run_as(0, image_policy, prefix);
  run_as.for_root_owned_env = false;  // the image's author chose root, not this host
  run_as.reason = "an env of an image's tree, run on the host: its files' owner (" + owner +
                  ") was chosen by the image's author and is no user of this host, so it runs " +
                  (image_policy.root_envs_user == k_dynamic_probe_user
                       ? "as a uid of its own"
                       : "as the configured user (run_root_envs_as)");
  return run_as;
}

ReadingAs::ReadingAs(const RunAs& run_as) {
  if (!run_as.switch_credentials || !agent_is_root()) {
    return;
  }
  // Before is_root(): credentials with a problem (no such user, no uid of
  // its own left) carry uid 0 only for want of another, and nothing is read
  // with them, least of all as root.
  if (!run_as.problem.empty()) {
    m_ok = false;
    return;
  }
  if (run_as.is_root()) {
    return;
  }
  // Raw system calls on purpose: glibc's setgroups changes every thread of
  // the process; the kernel's call changes only this one, as do setfsuid
  // and setfsgid.
  const long saved_count = ::syscall(SYS_getgroups, 0, nullptr);
  if (saved_count < 0) {
    m_ok = false;
    return;
  }
  m_saved_groups.resize(static_cast<std::size_t>(saved_count));
  if (::syscall(SYS_getgroups, saved_count, m_saved_groups.data()) != saved_count ||
      ::syscall(SYS_setgroups, run_as.groups.size(), run_as.groups.data()) != 0) {
    m_ok = false;
    return;
  }
  m_switched = true;
  // What to go back to: root's identity, or an outer ReadingAs's.
  m_saved_fsuid = static_cast<uid_t>(::syscall(SYS_setfsuid, -1));
  m_saved_fsgid = static_cast<gid_t>(::syscall(SYS_setfsgid, -1));
  ::syscall(SYS_setfsgid, run_as.gid);
  ::syscall(SYS_setfsuid, run_as.uid);
  m_ok = current_fsuid() == run_as.uid &&
         static_cast<gid_t>(::syscall(SYS_setfsgid, -1)) == run_as.gid;
}

ReadingAs::~ReadingAs() {
  if (!m_switched) {
    return;
  }
  // Back to the identity before (root's: the kernel then restores the file
  // capabilities that the change to a non-zero fsuid had cleared; or an
  // outer ReadingAs's, which stays in force).
  ::syscall(SYS_setfsuid, m_saved_fsuid);
  ::syscall(SYS_setfsgid, m_saved_fsgid);
  ::syscall(SYS_setgroups, m_saved_groups.size(), m_saved_groups.data());
}

bool readable_by(const fs::path& path, const RunAs& run_as) {
  ReadingAs reading(run_as);
  if (!reading.ok()) {
    return false;
  }
  // AT_EACCESS: checked with this thread's current (filesystem) credentials,
  // not the real ones.
  return ::faccessat(AT_FDCWD, path.c_str(), R_OK, AT_EACCESS) == 0;
}

}  // namespace envcontract::process
