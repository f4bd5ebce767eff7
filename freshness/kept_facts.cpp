#include "freshness/kept_facts.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>
#include <utility>

namespace envcontract::freshness {

bool keepable_facts(const facts::EnvFacts& env) {
  return env.errors.empty() && env.activation.problem.empty() && env.env.system_root == "/" &&
         env.env.exec.empty() && env.env.user_mount.empty() &&
         env.static_facts.search_path.incomplete.empty() && env.env.imports_unchecked.empty();
}

void KeptFacts::watch_with(std::shared_ptr<ChangeWatch> watch) {
  std::lock_guard lock(m_mutex);
  m_watch = std::move(watch);
}

void KeptFacts::stop_watching() {
  std::lock_guard lock(m_mutex);
  // Its reader thread stops with it, once the last reading lane lets go.
  m_watch.reset();
  m_envs.clear();
}

std::shared_ptr<ChangeWatch> KeptFacts::watch() const {
  std::lock_guard lock(m_mutex);
  return m_watch;
}

std::optional<facts::EnvFacts> KeptFacts::lend(const std::filesystem::path& prefix,
                                               const std::string& key,
                                               std::chrono::milliseconds keep_for,
                                               const std::vector<std::string>& found_by) {
  std::shared_ptr<ChangeWatch> watch;
  std::shared_ptr<ChangeWatch::Interest> interest;
  {
    std::lock_guard lock(m_mutex);
    const auto it = m_envs.find(prefix);
    if (it == m_envs.end() || !m_watch) {
      return std::nullopt;
    }
    watch = m_watch;
    interest = it->second.interest;
  }
  // Asked without the lock: it reads what the kernel queued, which the
  // other envs' lanes need not wait for.
  const bool changed = watch->changed(*interest).has_value();
  std::lock_guard lock(m_mutex);
  const auto it = m_envs.find(prefix);
  if (it == m_envs.end() || it->second.interest != interest) {
    return std::nullopt;  // forgotten or replaced meanwhile
  }
  auto& kept = it->second;
  if (changed || !kept.facts || kept.key != key ||
      std::chrono::steady_clock::now() - kept.read_at >= keep_for) {
    m_envs.erase(it);  // (without facts: lent to a scan that never gave them back)
    return std::nullopt;
  }
  facts::EnvFacts facts = std::move(*kept.facts);
  kept.facts.reset();
  facts.kept = true;
  facts.env.found_by = found_by;
  return facts;
}

void KeptFacts::keep(const facts::EnvFacts& env, const std::string& key,
                     std::shared_ptr<ChangeWatch::Interest> interest) {
  Kept kept{env, key, std::move(interest), std::chrono::steady_clock::now()};
  // The host's, given to every env after reading; and what its code showed, the scanner's.
  kept.facts->device_nodes.clear();
  kept.facts->dynamic.reset();
  kept.facts->probed_at.clear();
  std::lock_guard lock(m_mutex);
  m_envs.insert_or_assign(env.env.prefix, std::move(kept));
}

void KeptFacts::give_back(std::vector<facts::EnvFacts>& envs) {
  std::lock_guard lock(m_mutex);
  for (auto& env : envs) {
    if (!env.kept) {
      continue;
    }
    const auto it = m_envs.find(env.env.prefix);
    if (it == m_envs.end() || it->second.facts) {
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

void KeptFacts::forget_all_but(const std::set<std::filesystem::path>& found) {
  std::lock_guard lock(m_mutex);
  std::erase_if(m_envs, [&](const auto& entry) { return !found.contains(entry.first); });
}

void KeptFacts::forget_all() {
  std::lock_guard lock(m_mutex);
  m_envs.clear();
}

void KeptFacts::read_under(std::string mounts) {
  std::lock_guard lock(m_mutex);
  if (m_mounts != mounts) {
    m_envs.clear();
    m_mounts = std::move(mounts);
  }
}

std::size_t KeptFacts::size() const {
  std::lock_guard lock(m_mutex);
  return m_envs.size();
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

}  // namespace envcontract::freshness
