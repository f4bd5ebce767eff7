#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "facts/host.hpp"
#include "freshness/change_watch.hpp"
#include "process/mount_table.hpp"

// An env's facts kept between scans while the change watch sees nothing
// they were read from change: which facts may be kept, under what key, and
// when kept facts are given back. The scanner's other question, whether an
// env must be probed again, is freshness/fingerprint.hpp's.
namespace envcontract::freshness {

// Facts that say nothing went wrong while they were read: those that did
// (a failed activation, an error of a step, a bound reached) are read again.
bool keepable_facts(const facts::EnvFacts& env);

// Each env's facts, by prefix, with the change watch's interest in what they
// were read from. Shared by a scan's reading lanes and kept between scans
// (probes::FactCaches).
class KeptFacts {
 public:
  // The watch that says when kept facts changed; without one (never
  // started, or stopped), nothing kept is lent, and stopping it forgets
  // what was kept.
  void watch_with(std::shared_ptr<ChangeWatch> watch);
  void stop_watching();
  std::shared_ptr<ChangeWatch> watch() const;

  // The facts kept for `prefix`, lent (give_back), when nothing they were
  // read from has changed since, they were kept under `key` (what else
  // describing the env depended on) and are not older than `keep_for`;
  // forgotten otherwise. They say they were kept, and how the env was found
  // this time (`found_by`).
  std::optional<facts::EnvFacts> lend(const std::filesystem::path& prefix, const std::string& key,
                                      std::chrono::milliseconds keep_for,
                                      const std::vector<std::string>& found_by);

  // Gives back, moved, the facts `lend` lent to a scan once it is done with
  // them (`envs` are the scan's: those it was lent are left moved from).
  // Facts lent and never given back (the scan ended early) are read again.
  void give_back(std::vector<facts::EnvFacts>& envs);

  // Keeps `env`'s facts (without what the host and its code gave it) until
  // `interest` sees a change.
  void keep(const facts::EnvFacts& env, const std::string& key,
            std::shared_ptr<ChangeWatch::Interest> interest);

  // The facts of envs not found again are forgotten; all when `found` is empty.
  void forget_all_but(const std::set<std::filesystem::path>& found);
  void forget_all();

  // The mounts this scan reads under (mount_signature): a mount made or
  // removed shows other files at the same paths, and no change event says
  // so, so nothing read under other mounts is kept.
  void read_under(std::string mounts);

  std::size_t size() const;

 private:
  struct Kept {
    // Empty while lent to a scan: moved, not copied, since an env's facts
    // are hundreds of paths (every module's, twice).
    std::optional<facts::EnvFacts> facts;
    std::string key;
    std::shared_ptr<ChangeWatch::Interest> interest;
    std::chrono::steady_clock::time_point read_at;
  };

  mutable std::mutex m_mutex;  // guards what follows
  std::shared_ptr<ChangeWatch> m_watch;
  std::map<std::filesystem::path, Kept> m_envs;
  std::string m_mounts;  // the mounts they were read under
};

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

}  // namespace envcontract::freshness
