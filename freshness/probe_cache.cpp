#include "freshness/probe_cache.hpp"

#include <utility>

namespace envcontract::freshness {

std::optional<ProbeCache::Entry> ProbeCache::find(const std::string& prefix) const {
  std::lock_guard lock(m_mutex);
  const auto found = m_entries.find(prefix);
  return found == m_entries.end() ? std::nullopt : std::optional<Entry>(found->second);
}

std::optional<ProbeCache::Entry> ProbeCache::reusable(const std::string& prefix,
                                                      const std::string& fingerprint,
                                                      std::chrono::steady_clock::time_point now,
                                                      std::chrono::seconds reprobe_interval) const {
  if (reprobe_interval.count() <= 0) {
    return std::nullopt;
  }
  std::lock_guard lock(m_mutex);
  const auto found = m_entries.find(prefix);
  if (found == m_entries.end() || found->second.fingerprint != fingerprint ||
      now - found->second.when >= reprobe_interval) {
    return std::nullopt;
  }
  return found->second;
}

std::string ProbeCache::kept_fingerprint(const facts::EnvFacts& env) const {
  if (!env.kept) {
    return {};
  }
  std::lock_guard lock(m_mutex);
  const auto found = m_entries.find(env.env.prefix.string());
  return found == m_entries.end() ? std::string() : found->second.fingerprint;
}

void ProbeCache::put(const std::string& prefix, Entry entry) {
  std::lock_guard lock(m_mutex);
  if (entry.dynamic.refused) {
    // A refusal ran nothing, and rests on whom the env runs as and who may
    // write it, which no fingerprint covers: it is made anew at each scan.
    m_entries.erase(prefix);
    return;
  }
  m_entries[prefix] = std::move(entry);
}

void ProbeCache::forget(const std::string& prefix) {
  std::lock_guard lock(m_mutex);
  m_entries.erase(prefix);
}

void ProbeCache::forget_all_but(const std::set<std::string>& prefixes) {
  std::lock_guard lock(m_mutex);
  std::erase_if(m_entries, [&](const auto& entry) { return !prefixes.contains(entry.first); });
}

}  // namespace envcontract::freshness
