#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

namespace envcontract::testing {

// A real FUSE mount whose server never answers (tests/support/hung_fuse.py):
// whatever reads it blocks until the mount is released. Needs root and
// /dev/fuse; `available()` says why not where either is missing.
class HungMount {
 public:
  // Mounts at `mount_point` (an existing directory), recorded as mounted by
  // `user_id`; throws when it cannot. `take_requests`: the server takes each
  // request and never answers, so a process waiting on one cannot be killed.
  HungMount(const std::filesystem::path& mount_point, uid_t user_id, bool take_requests = false);
  // Releases it (release()).
  ~HungMount();
  HungMount(const HungMount&) = delete;
  HungMount& operator=(const HungMount&) = delete;

  // Detaches the mount and stops its server: blocked readers get ENOTCONN.
  void release();

  // "" when hung mounts can be made here, else why not (for GTEST_SKIP).
  static std::string unavailable();

 private:
  std::filesystem::path m_mount_point;
  pid_t m_server = -1;
};

}  // namespace envcontract::testing
