#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

// A uid of its own for the code of each root-owned env (run_root_envs_as:
// dynamic, the default), as systemd's DynamicUser= gives one to a service.
// Run as a shared user (nobody), one env's code could rewrite another env's
// probe program in its scratch directory, or ptrace its interpreter, and
// forge that env's verdict; with a uid of its own it can reach neither.
namespace envcontract::process {

// The uids the agent may hand out. None may belong to anyone else: no
// passwd or group entry names them (checked), and no other program hands
// them out (the operator's part, docs/security.md). The default is the
// first 65,536 of the range systemd leaves unused above its containers'.
struct ProbeUidRange {
  uid_t first = 0x70000000;  // 1879048192
  uid_t count = 65536;
};

// Where agents on one host agree on who holds which uid: one byte of the
// file per uid, held with an open file description lock, which the kernel
// releases when the holder exits however it exits.
inline constexpr const char* k_probe_uid_lock_file = "/run/envcontract/probe-uids.lock";

struct ProbeUid {
  uid_t uid = 0;
  std::string problem;  // when no uid could be reserved: why, and what to do
};

// The uid reserved for `key` (an env's prefix) in this process: the same key
// gets the same uid for the process's life, no two keys share one, and no
// other process holding a lock in `lock_file` has it. The first tried is a
// hash of the key, so an env mostly keeps its uid across restarts and what
// its code left behind (a file in /tmp) is seen by no other env's code.
ProbeUid reserve_probe_uid(const std::string& key, const ProbeUidRange& range = {},
                           const std::filesystem::path& lock_file = k_probe_uid_lock_file);

}  // namespace envcontract::process
