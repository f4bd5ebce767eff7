#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "facts/host.hpp"
#include "probes/change_watch.hpp"
#include "probes/discovery.hpp"
#include "probes/host_facts.hpp"
#include "process/mount_table.hpp"

// An env's facts kept between scans while the change watch sees nothing
// they were read from change (FactCaches::kept_envs): which envs may be
// kept, under what key, and when kept facts are given back.
namespace envcontract::probes {

// What describing a candidate depends on besides its files: facts kept
// under another key are read again. "" for envs never kept: those a
// container runs, and those on a user's mount.
std::string kept_key(const HostFactsOptions& options, const EnvCandidate& candidate);

// Facts that say nothing went wrong while they were read: those that did
// (a failed activation, an error of a step, a bound reached) are read again.
bool keepable_facts(const EnvFacts& env);

// An env's facts from an earlier scan, lent (return_kept_facts), when
// nothing they were read from has changed since and they are not older
// than `keep_for`; forgotten otherwise.
std::optional<EnvFacts> kept_facts(FactCaches& caches, const EnvCandidate& candidate,
                                   const std::string& key, std::chrono::milliseconds keep_for);

// Gives back, moved, the facts kept_facts lent to a scan once it is done
// with them (`envs` are the scan's: those it was lent are left moved from).
// Facts lent and never given back (the scan ended early) are read again.
void return_kept_facts(FactCaches& caches, std::vector<EnvFacts>& envs);

// Keeps `env`'s facts (without what the host and its code gave it) until
// `interest` sees a change.
void keep(FactCaches& caches, const EnvFacts& env, const std::string& key,
          std::shared_ptr<ChangeWatch::Interest> interest);

// What every env's read of one scan shares and no env's watch sees change
// from the start of that env's read: the mount table (a mount made and
// removed while an env was read leaves no trace in the next scan's table)
// and the loader's cache (loaded once for the whole scan, before each env's
// watch begins). Taken as the scan starts, before either is loaded; asked
// as each env's read ends: an env read while either changed is not kept.
class SharedReadInputs {
 public:
  explicit SharedReadInputs(std::string ld_cache = "/etc/ld.so.cache");
  ~SharedReadInputs();
  SharedReadInputs(const SharedReadInputs&) = delete;
  SharedReadInputs& operator=(const SharedReadInputs&) = delete;

  // Why facts read from now on must not be kept, or "": the mount table or
  // /etc/ld.so.cache changed since construction. Once changed, always.
  std::string changed();

 private:
  std::mutex m_mutex;
  int m_mountinfo = -1;          // polls readable-with-priority once the mounts change
  std::string m_ld_cache;        // its path
  std::string m_ld_cache_state;  // its identity at the start
  std::string m_changed;
};

// Every mount: where, what (device and root), of which type and how (a
// remount noexec changes what an env's code may do). Kept facts are
// forgotten when it changes: a mount shows other files at the same paths,
// and no change event says so.
std::string mount_signature(const process::MountTable& mounts);

}  // namespace envcontract::probes
