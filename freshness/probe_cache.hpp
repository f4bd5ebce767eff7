#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "facts/dynamic.hpp"
#include "facts/host.hpp"

namespace envcontract::freshness {

// Each env's dynamic facts, by prefix, with the fingerprint they were probed
// under. Shared by the agent's scans and its CI gate's (daemon/gate_service.hpp),
// which run on different threads: a gate reuses what a scan probed, and the
// next scan what a gate probed, while neither waits for the other.
class ProbeCache {
 public:
  struct Entry {
    std::string fingerprint;
    facts::DynamicFacts dynamic;
    std::string probed_at;
    std::chrono::steady_clock::time_point when;
  };

  std::optional<Entry> find(const std::string& prefix) const;
  // The cached probe of `prefix` when it was made under `fingerprint` less
  // than `reprobe_interval` before `now`: devices come and go without any
  // file changing, so a probe is not reused for ever. Zero: never reused.
  std::optional<Entry> reusable(const std::string& prefix, const std::string& fingerprint,
                                std::chrono::steady_clock::time_point now,
                                std::chrono::seconds reprobe_interval) const;
  // The fingerprint the env's cached probe was made under when its facts
  // were kept (the change watch saw nothing they were read from change):
  // nothing that decides it changed either, so its files need no stat.
  // "" otherwise.
  std::string kept_fingerprint(const facts::EnvFacts& env) const;
  // Keeps `entry` for `prefix`; a probe that refused to run the env's code
  // is not kept (and what was kept is forgotten).
  void put(const std::string& prefix, Entry entry);
  void forget(const std::string& prefix);
  void forget_all_but(const std::set<std::string>& prefixes);

 private:
  mutable std::mutex m_mutex;
  std::map<std::string, Entry> m_entries;
};

}  // namespace envcontract::freshness
