#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include "facts/env.hpp"
#include "process/probe_uids.hpp"

// Who runs an env's code. The agent is root on a host shared by many users;
// an env's activation scripts, interpreter and modules belong to whoever can
// write them, so they run with that user's credentials and never as root
// (docs/security.md).
namespace envcontract::process {

using facts::to_json;

// run_root_envs_as's default: each root-owned env's code runs as a uid of
// its own (process/probe_uids.hpp).
inline constexpr const char* k_dynamic_probe_user = "dynamic";

// The policy, from the agent's config.
struct RunAsPolicy {
  RunAsPolicy() = default;
  explicit RunAsPolicy(std::string user) : root_envs_user(std::move(user)) {}

  // Envs owned by root (a system conda under /opt, an image's own envs) run
  // as this user. "dynamic": each as a uid of its own, from `probe_uids`.
  // A user's name: all as that user, who then reaches every such env's probe
  // (the operator's choice). "root" runs them as root: an explicit choice
  // that every report then states.
  std::string root_envs_user = k_dynamic_probe_user;
  ProbeUidRange probe_uids;
};

using facts::RunAs;

// The credentials for an env whose prefix is owned by `owner`, under `policy`.
// `prefix` names the env a uid of its own is reserved for, when the policy
// is "dynamic" and the owner root (with none, its code runs nowhere).
RunAs resolve_run_as(uid_t owner, const RunAsPolicy& policy,
                     const std::filesystem::path& prefix = {});

// The same for the owner of `prefix` (followed through symlinks).
RunAs run_as_for_prefix(const std::filesystem::path& prefix, const RunAsPolicy& policy);

// For an env of an operating system tree scanned on the host (an image's
// rootfs given as --root or roots:), whose code runs on the host. Whoever
// built the image chose its files' owners: a uid there names nobody of this
// host, so it is only a fact, and the env runs as a root-owned env would
// (a uid of its own by default, or the configured user), never as the host
// user that happens to have that uid, and never as root.
RunAs run_as_for_image_env(const std::filesystem::path& prefix, const RunAsPolicy& policy);

// A user's credentials by name ("nobody") or numeric uid; `problem` is set when
// there is no such user.
RunAs run_as_user(const std::string& name);

// Whether `run_as` may read the file at `path`, as the kernel would decide
// for that user (every directory on the way searchable, the file readable).
// Answered by switching this thread's filesystem credentials (see
// ReadingAs); true for an agent that cannot switch.
bool readable_by(const std::filesystem::path& path, const RunAs& run_as);

// For the lifetime of this object, file access by the calling thread is
// checked by the kernel against `run_as`'s credentials (setfsuid, setfsgid
// and the thread's supplementary groups, per thread), so the agent, root,
// reads an env's files exactly as their owner could: a symlink to
// /etc/shadow or to another user's private file fails with EACCES. Nothing
// changes for an agent that is not root, or when `run_as` is root. Other
// threads are not affected.
class ReadingAs {
 public:
  explicit ReadingAs(const RunAs& run_as);
  ~ReadingAs();
  ReadingAs(const ReadingAs&) = delete;
  ReadingAs& operator=(const ReadingAs&) = delete;

  // False when switching failed: the caller must not read on the env's behalf.
  bool ok() const { return m_ok; }

 private:
  bool m_switched = false;
  bool m_ok = true;
  uid_t m_saved_fsuid = 0;
  gid_t m_saved_fsgid = 0;
  std::vector<gid_t> m_saved_groups;
};

}  // namespace envcontract::process
