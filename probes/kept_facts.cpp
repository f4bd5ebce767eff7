#include "probes/kept_facts.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>
#include <utility>

namespace envcontract::probes {

std::string kept_key(const HostFactsOptions& options, const EnvCandidate& candidate) {
  if (!candidate.exec.argv.empty() || candidate.holds_mount) {
    return {};
  }
  return options.keep_key + '\0' + options.discovery.run_as.root_envs_user + '\0' +
         candidate.scan_root.string() + '\0' + to_string(candidate.likely_kind) + '\0' +
         (candidate.conda_installation ? "installation" : "") + '\0' + candidate.owner;
}

bool keepable_facts(const EnvFacts& env) {
  return env.errors.empty() && env.activation.problem.empty() && env.env.system_root == "/" &&
         env.env.exec.empty() && env.env.user_mount.empty() &&
         env.static_facts.search_path.incomplete.empty() && env.env.imports_unchecked.empty();
}

std::optional<EnvFacts> kept_facts(FactCaches& caches, const EnvCandidate& candidate,
                                   const std::string& key, std::chrono::milliseconds keep_for) {
  std::shared_ptr<ChangeWatch::Interest> interest;
  {
    std::lock_guard lock(caches.mutex);
    const auto it = caches.kept_envs.find(candidate.prefix);
    if (it == caches.kept_envs.end()) {
      return std::nullopt;
    }
    interest = it->second.interest;
  }
  // Asked without the caches' lock: it reads what the kernel queued, which
  // the other envs' lanes need not wait for.
  const bool changed = caches.watch->changed(*interest).has_value();
  std::lock_guard lock(caches.mutex);
  const auto it = caches.kept_envs.find(candidate.prefix);
  if (it == caches.kept_envs.end() || it->second.interest != interest) {
    return std::nullopt;  // forgotten or replaced meanwhile
  }
  auto& kept = it->second;
  if (changed || !kept.facts || kept.key != key ||
      std::chrono::steady_clock::now() - kept.read_at >= keep_for) {
    caches.kept_envs.erase(it);  // (without facts: lent to a scan that never gave them back)
    return std::nullopt;
  }
  EnvFacts facts = std::move(*kept.facts);
  kept.facts.reset();
  facts.kept = true;
  facts.env.found_by = candidate.found_by;
  return facts;
}

void keep(FactCaches& caches, const EnvFacts& env, const std::string& key,
          std::shared_ptr<ChangeWatch::Interest> interest) {
  FactCaches::KeptEnv kept{env, key, std::move(interest), std::chrono::steady_clock::now()};
  // The host's, given to every env after reading; and what its code showed, the scanner's.
  kept.facts->device_nodes.clear();
  kept.facts->dynamic.reset();
  kept.facts->probed_at.clear();
  std::lock_guard lock(caches.mutex);
  caches.kept_envs.insert_or_assign(env.env.prefix, std::move(kept));
}

void return_kept_facts(FactCaches& caches, std::vector<EnvFacts>& envs) {
  std::lock_guard lock(caches.mutex);
  for (auto& env : envs) {
    if (!env.kept) {
      continue;
    }
    const auto it = caches.kept_envs.find(env.env.prefix);
    if (it == caches.kept_envs.end() || it->second.facts) {
      continue;
    }
    // As they were kept: without what the host, its code and this scan
    // gave them (kept facts had no errors).
    env.kept = false;
    env.device_nodes.clear();
    env.dynamic.reset();
    env.probed_at.clear();
    env.errors.clear();
    it->second.facts = std::move(env);
  }
}

namespace {

// A file's identity and state: what replacing it (ldconfig renames a new
// cache over the old) or rewriting it in place changes.
std::string file_state(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return "absent";
  }
  return std::to_string(info.st_dev) + ' ' + std::to_string(info.st_ino) + ' ' +
         std::to_string(info.st_size) + ' ' + std::to_string(info.st_mtim.tv_sec) + '.' +
         std::to_string(info.st_mtim.tv_nsec) + ' ' + std::to_string(info.st_ctim.tv_sec) + '.' +
         std::to_string(info.st_ctim.tv_nsec);
}

}  // namespace

SharedReadInputs::SharedReadInputs(std::string ld_cache)
    // Opening it records the mount namespace's change count: poll reports
    // any mount or unmount after this (proc(5), /proc/pid/mountinfo).
    : m_mountinfo(::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)),
      m_ld_cache(std::move(ld_cache)),
      m_ld_cache_state(file_state(m_ld_cache)) {
  if (m_mountinfo < 0) {
    m_changed = "the mount table cannot be followed (/proc/self/mountinfo)";
  }
}

SharedReadInputs::~SharedReadInputs() {
  if (m_mountinfo >= 0) {
    ::close(m_mountinfo);
  }
}

std::string SharedReadInputs::changed() {
  std::lock_guard lock(m_mutex);
  if (!m_changed.empty()) {
    return m_changed;
  }
  pollfd mounts{m_mountinfo, POLLPRI, 0};
  if (::poll(&mounts, 1, 0) > 0 && (mounts.revents & (POLLPRI | POLLERR)) != 0) {
    m_changed = "a mount was made or removed while it was read";
  } else if (file_state(m_ld_cache) != m_ld_cache_state) {
    m_changed = m_ld_cache + " changed while it was read";
  }
  return m_changed;
}

std::string mount_signature(const process::MountTable& mounts) {
  std::string signature;
  for (const auto& mount : mounts.mounts()) {
    signature += mount.point.string() + '\0' + mount.device + '\0' + mount.root.string() + '\0' +
                 mount.fstype + '\0' + mount.options + '\n';
  }
  return signature;
}

}  // namespace envcontract::probes
