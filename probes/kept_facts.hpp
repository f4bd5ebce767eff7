#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "facts/host.hpp"
#include "probes/change_watch.hpp"
#include "probes/discovery.hpp"
#include "probes/host_facts.hpp"
#include "probes/mount_table.hpp"

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

// Every mount: where, what (device and root), of which type and how (a
// remount noexec changes what an env's code may do). Kept facts are
// forgotten when it changes: a mount shows other files at the same paths,
// and no change event says so.
std::string mount_signature(const MountTable& mounts);

}  // namespace envcontract::probes
