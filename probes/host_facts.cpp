#include "probes/host_facts.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "common/time_text.hpp"
#include "freshness/env_dependencies.hpp"
#include "freshness/kept_facts.hpp"
#include "probes/dynamic_probe.hpp"
#include "probes/import_safety.hpp"
#include "process/small_files.hpp"
#include "process/stall_guard.hpp"
#include "process/system_root.hpp"

namespace envcontract::probes {

namespace {

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) {
    return "localhost";
  }
  return name;
}

// The files of one env that are reported refused, at most: an env of 100,000
// FIFOs is told by its first ones and a count, not a report of 100,000 lines.
constexpr std::size_t k_reported_refusals = 50;

// Runs one step of gathering an env's facts: what it throws becomes an
// error of that env, and the files it refused become that env's problems.
// A cancelled scan (watchdog, shutdown) runs no more steps.
template <typename Step>
void contained(EnvFacts& env, FactError::Stage stage, const process::Cancellation* cancellation,
               Step&& step) {
  if (cancellation != nullptr && cancellation->cancelled()) {
    env.errors.push_back({stage, "not gathered: " + cancellation->reason(), {}});
    return;
  }
  process::FileProblemLog refused;
  try {
    step();
  } catch (const std::exception& e) {
    env.errors.push_back({stage, e.what(), {}});
  } catch (...) {
    env.errors.push_back({stage, "an unknown exception", {}});
  }
  std::set<std::filesystem::path> known;
  for (const auto& problem : env.refused_files) {
    known.insert(problem.path);
  }
  for (auto& problem : refused.take()) {
    if (!known.insert(problem.path).second) {
      continue;
    }
    if (env.refused_files.size() < k_reported_refusals) {
      env.refused_files.push_back(std::move(problem));
    } else {
      ++env.more_refused_files;
    }
  }
}

// Whether the user the env's code runs as can read its prefix (called while
// reading as that user). When it cannot, nothing of the env is visible to
// its own interpreter either: the env is broken as an env, and says so,
// rather than "torch is not installed".
bool readable_prefix(PythonEnv& env) {
  // Python needs to pass through the prefix (x), not to list it (r): a 0711
  // prefix works. Reaching bin/ inside it takes exactly that permission.
  const int fd = ::open((env.prefix / "bin").c_str(), O_PATH | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return true;
  }
  if (errno != EACCES && errno != EPERM) {
    return true;  // gone since discovery, or another trouble the readers report
  }
  env.problems.push_back({facts::EnvProblem::Kind::unreadable,
                          env.prefix.string() + " cannot be read by " + env.reader().who() +
                              (env.read_as ? ", the user its files are read as on the host"
                                           : ", the user its code runs as") +
                              " (permission denied)"});
  return false;
}

}  // namespace

namespace {

// Everything one env's reader needs, owned by it: past its deadline it is
// left behind and may run on after the scan (process/stall_guard.hpp).
struct EnvReading {
  EnvFacts env;
  facts::ProbeRequest request;
  std::shared_ptr<FactCaches> caches;
  std::shared_ptr<const loader::LdCache> ld_cache;
  process::ResourceLimits resources;
  std::chrono::microseconds activation_elapsed{0};
  std::chrono::microseconds static_elapsed{0};
  std::chrono::microseconds linkage_elapsed{0};
  // When its facts may be kept: what changes from the start of the read,
  // and the mounts its paths are resolved through.
  std::shared_ptr<freshness::ChangeWatch::Interest> interest;
  // Its own hold on the watch: a reader left blocked settles after its scan,
  // when the caches may no longer have one.
  std::shared_ptr<freshness::ChangeWatch> watch;
  std::shared_ptr<const process::MountTable> mounts;
  process::ReadDependencies dependencies;  // the paths its readers noted
  bool settled = false;                    // the watch knows what the read depended on
};

// Names what the read depended on to the watch (on the reading thread: it
// resolves paths, which may wait on a slow disk).
void settle_reading(EnvReading& reading, freshness::ChangeWatch& watch) {
  process::ReadDependencies dependencies = std::move(reading.dependencies);
  // What its readers read, followed by identity too (before the trees cover them).
  dependencies.files = dependencies.paths;
  freshness::add_env_dependencies(reading.env, discovery::activation_inputs(reading.env.env),
                                  dependencies);
  process::add_link_targets(dependencies);
  dependencies.compact();
  reading.settled = watch.settle(*reading.interest, dependencies, *reading.mounts).empty();
}

std::chrono::microseconds since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               start);
}

// One env's facts, step by step: activation first, because what it sets
// (PYTHONPATH, PYTHONUSERBASE) moves the search path the static facts follow.
void read_env(EnvReading& reading, const process::Cancellation& cancellation) {
  using Clock = std::chrono::steady_clock;
  auto& env = reading.env;
  // An image's rootfs is read as its processes see it: a link to "/opt/..."
  // in it is its own /opt, not the host's.
  const process::ReadingInsideTree inside_tree(env.env.system_root);
  auto start = Clock::now();
  contained(env, FactError::Stage::activation, &cancellation, [&] {
    env.activation = reading.caches->activations.get(env.env, &cancellation, reading.resources);
  });
  reading.activation_elapsed = since(start);
  start = Clock::now();
  contained(env, FactError::Stage::static_facts, &cancellation, [&] {
    // Read as the user the env's code runs as: whatever that user could
    // not read (a link to /etc/shadow, another user's private file) stays
    // out of the facts, as it would stay out of their interpreter.
    process::ReadingAs as_user(env.env.reader());
    if (as_user.ok() && !readable_prefix(env.env)) {
      return;
    }
    if (as_user.ok()) {
      const auto& environment =
          env.activation.activated.empty() ? bare_environment(env.env) : env.activation.activated;
      env.static_facts = gather_static_facts(env.env, environment);
      refuse_unsafe_imports(env.env, env.static_facts.search_path);
    }
  });
  if (!env.env.imports_checked) {
    // The static facts did not get that far: checked on its own, failing
    // closed, so the facts say why the env's code will not run.
    contained(env, FactError::Stage::import_check, &cancellation,
              [&] { refuse_unsafe_imports(env.env, env.activation); });
  }
  reading.static_elapsed = since(start);
  start = Clock::now();
  auto& elf_files = reading.caches->elf_files;
  contained(env, FactError::Stage::linkage, &cancellation, [&] {
    process::ReadingAs as_user(env.env.reader());
    if (!as_user.ok()) {
      return;
    }
    if (env.env.system_root != "/") {
      // A rootfs' loader reads its own cache (its paths, under the rootfs):
      // opened inside the tree, so a link in it cannot name a host file.
      const process::SystemRoot tree(env.env.system_root);
      const int fd = tree.open_inside("/etc/ld.so.cache", O_RDONLY, true);
      reading.ld_cache = std::make_shared<const loader::LdCache>(
          fd < 0
              ? loader::LdCache()
              : loader::LdCache::load("/proc/self/fd/" + std::to_string(fd), env.env.system_root));
      if (fd >= 0) {
        ::close(fd);
      }
    }
    const auto& sites = env.static_facts.site_packages;
    // Copies of packages that an earlier path entry hides are never loaded.
    std::vector<std::filesystem::path> hidden;
    for (const auto& module : env.static_facts.shadowed) {
      hidden.push_back(module.path);
    }
    env.linkage = gather_linkage_facts(env.env, sites, env.activation.activated,
                                       Activation::activated, reading.ld_cache, elf_files, hidden);
    const auto path_of = [](const facts::Environment& environment) {
      const auto it = environment.find("LD_LIBRARY_PATH");
      return it == environment.end() ? std::string() : it->second;
    };
    env.library_lookups =
        lookup_libraries(env.env, env.activation.activated, reading.request.library_names,
                         reading.ld_cache, elf_files);
    env.glibc = glibc_facts(env.env, env.activation.activated, reading.ld_cache, elf_files);
    if (path_of(env.activation.bare) != path_of(env.activation.activated)) {
      env.bare_linkage = gather_linkage_facts(env.env, sites, env.activation.bare, Activation::bare,
                                              reading.ld_cache, elf_files, hidden);
    }
  });
  // What the contract's checks asked for, in a step of its own: a failure
  // there leaves the linkage facts alone.
  contained(env, FactError::Stage::requested_facts, &cancellation, [&] {
    process::ReadingAs as_user(env.env.reader());
    if (!as_user.ok()) {
      return;
    }
    facts::PathAnchors anchors;
    anchors.prefix = env.env.prefix.string();
    for (const auto& site : env.static_facts.site_packages) {
      anchors.sites.push_back(site.string());
    }
    anchors.variables = env.activation.activated;
    std::vector<std::string> hidden;
    for (const auto& module : env.static_facts.shadowed) {
      hidden.push_back(module.path.string());
    }
    const process::SystemRoot root(env.env.system_root);
    env.path_matches = match_path_patterns(reading.request.path_patterns, anchors, hidden, root);
    const auto path = env.activation.activated.find("PATH");
    env.tools = find_tools(reading.request.tools,
                           path == env.activation.activated.end() ? "" : path->second,
                           env.env.run_as, root);
    if (!root.is_host()) {
      // A rootfs' device nodes are its own /dev.
      env.device_nodes = glob_device_nodes(reading.request.device_globs, root);
    }
  });
  reading.linkage_elapsed = since(start);
}

facts::ContainerFacts container_facts(const discovery::ContainerTarget& target) {
  facts::ContainerFacts container;
  container.name = target.name;
  container.root = target.root.string();
  container.exec = target.exec.argv;
  container.image = {target.image, target.image_source, target.image_problem};
  container.problem = target.problem;
  return container;
}

// The containers to scan, listed and resolved, given to discovery; what
// kept one from being resolved makes the host's facts incomplete.
void resolve_containers(const HostFactsOptions& options, HostFacts& facts,
                        discovery::DiscoveryOptions& discovery) {
  auto containers = options.containers;
  if (options.container_discovery) {
    const auto listing = discovery::list_containers(*options.container_discovery);
    if (!listing.problem.empty()) {
      // Containers it should have scanned may be missing.
      facts.incomplete.push_back("container discovery: " + listing.problem);
    }
    auto found = discovery::discovered_configs(*options.container_discovery, listing, containers);
    containers.insert(containers.end(), found.begin(), found.end());
  }
  for (const auto& config : containers) {
    auto target = discovery::resolve_container(config);
    facts.containers.push_back(container_facts(target));
    if (!target.problem.empty()) {
      // Its envs are unknown: the host cannot be judged whole.
      facts.incomplete.push_back("container " + target.name + ": " + target.problem);
    }
    discovery.containers.push_back(std::move(target));
  }
}

// Network (or FUSE) filesystems where a reader blocked in this scan: the
// other units and envs on one are not started (each would cost a deadline
// and a thread on a dead NFS server), but named. Envs are read side by
// side: its record is locked.
class BlockedMounts {
 public:
  // The mount table paths are told apart by: the one discovery read, then
  // the one read after it (autofs may have mounted homes meanwhile: an
  // automount point is not the NFS export mounted on it once entered).
  // Changed only while no reader runs.
  void use(const process::MountTable* mounts) { m_mounts = mounts; }
  const process::MountTable& mounts() const { return *m_mounts; }

  // Records the filesystem of `path` as blocked when the stall was a reader
  // waiting on a server.
  void note(const facts::Stall& stall, const std::filesystem::path& path) {
    const auto on = m_mounts->mount_of(path);
    std::lock_guard lock(m_mutex);
    if (!stall.running && !stall.too_many && stall.cut_short.empty() &&
        stall.same_filesystem.empty() && process::served_from_elsewhere(on.fstype) &&
        (stall.last_path.empty() || m_mounts->mount_of(stall.last_path).point == on.point)) {
      m_blocked.emplace(on.point, path.string() + " blocked");
    }
  }

  // The stall `what` is reported with, not started, when `path` is on a
  // filesystem where a reader blocked.
  std::optional<facts::Stall> stall_for(const std::string& what,
                                        const std::filesystem::path& path) {
    const auto on = m_mounts->mount_of(path);
    std::lock_guard lock(m_mutex);
    const auto blocked = m_blocked.find(on.point);
    if (path.empty() || blocked == m_blocked.end()) {
      return std::nullopt;
    }
    facts::Stall stall;
    stall.what = what;
    stall.last_path = path.string();
    stall.same_filesystem =
        on.point.string() + " (" + on.fstype + "), where reading " + blocked->second;
    return stall;
  }

 private:
  const process::MountTable* m_mounts = nullptr;
  std::map<std::filesystem::path, std::string> m_blocked;
  std::mutex m_mutex;
};

// A discovery unit whose reader blocked: what it found the last time it
// finished stands in (homes to search included), and the host's facts are
// incomplete.
void stand_in_for_blocked_unit(const discovery::DiscoveryUnit& unit, const facts::Stall& stall,
                               FactCaches& caches, discovery::CandidateSearch& search,
                               std::deque<discovery::DiscoveryUnit>& units, HostFacts& facts) {
  facts.problems.push_back({stall.last_path, stall.message()});
  facts.incomplete.push_back(stall.message());
  std::lock_guard lock(caches.mutex);
  const auto last = caches.last_discovery.find(unit.key);
  if (last == caches.last_discovery.end()) {
    return;
  }
  discovery::CandidateSearch earlier = last->second;
  earlier.problems.clear();
  for (auto& more : earlier.more_units) {
    units.push_back(std::move(more));
  }
  earlier.more_units.clear();
  for (auto& candidate : earlier.candidates) {
    const bool found_live = std::any_of(
        search.candidates.begin(), search.candidates.end(),
        [&](const discovery::EnvCandidate& seen) { return seen.prefix == candidate.prefix; });
    if (!found_live) {
      candidate.found_by.push_back("the last complete " + unit.key);
    }
  }
  discovery::merge_candidates(search, std::move(earlier));
}

// Every discovery unit, and those they find (homes to search), each read
// within the reading deadline.
discovery::CandidateSearch discover_candidates(
    const HostFactsOptions& options,
    const std::shared_ptr<discovery::DiscoveryOptions>& discovery_options, FactCaches& caches,
    BlockedMounts& blocked, HostFacts& facts) {
  discovery::CandidateSearch search;
  std::set<std::string> unit_keys;
  std::deque<discovery::DiscoveryUnit> units;
  for (auto& unit : discovery::discovery_units(*discovery_options)) {
    units.push_back(std::move(unit));
  }
  while (!units.empty()) {
    auto unit = std::move(units.front());
    units.pop_front();
    unit_keys.insert(unit.key);
    auto found = std::make_shared<discovery::CandidateSearch>();
    auto stall = blocked.stall_for(unit.key, unit.path);
    if (!stall) {
      stall = process::run_bounded(
          unit.key, unit.key, options.reading_deadline, options.cancellation,
          [found, discovery_options, run = unit.run](const process::Cancellation&) {
            *found = run(*discovery_options);
          });
      if (stall) {
        blocked.note(*stall, unit.path);
      }
    }
    if (stall) {
      // Its partial result belongs to the blocked reader.
      stand_in_for_blocked_unit(unit, *stall, caches, search, units, facts);
      continue;
    }
    {
      std::lock_guard lock(caches.mutex);
      caches.last_discovery[unit.key] = *found;
    }
    for (auto& more : found->more_units) {
      units.push_back(std::move(more));
    }
    found->more_units.clear();
    discovery::merge_candidates(search, std::move(*found));
  }
  facts.problems.insert(facts.problems.end(), search.problems.begin(), search.problems.end());
  // Units gone (a home removed) leave no memory.
  std::lock_guard lock(caches.mutex);
  std::erase_if(caches.last_discovery,
                [&](const auto& entry) { return !unit_keys.contains(entry.first); });
  return search;
}

// A scan of named envs only (a CI gate's): the others are dropped, and
// what discovery met elsewhere on the host (other users' homes) is not the
// env's: a gate's report goes into a CI job's log.
void keep_only_named_envs(const std::map<std::filesystem::path, std::string>& only_envs,
                          discovery::CandidateSearch& search, HostFacts& facts) {
  std::erase_if(search.candidates, [&](const discovery::EnvCandidate& candidate) {
    return !only_envs.contains(candidate.prefix);
  });
  const auto about_an_env = [&](const std::filesystem::path& path) {
    return std::any_of(only_envs.begin(), only_envs.end(), [&](const auto& env) {
      const auto& prefix = env.first.string();
      return path.string() == prefix || path.string().starts_with(prefix + "/");
    });
  };
  std::erase_if(facts.problems, [&](const facts::DiscoveryProblem& problem) {
    return !about_an_env(problem.path);
  });
  facts.incomplete.clear();
}

// One candidate read: its facts, or why it is not an env.
struct Reading {
  std::optional<EnvFacts> env;
  bool not_an_env = false;
  std::chrono::microseconds activation_elapsed{0};
  std::chrono::microseconds static_elapsed{0};
  std::chrono::microseconds linkage_elapsed{0};
};

Reading failed_reading(const discovery::EnvCandidate& candidate, const std::string& why) {
  Reading failed;
  EnvFacts env;
  env.env = discovery::unread_env(candidate, "the env could not be read: " + why);
  env.errors.push_back({FactError::Stage::reading, why, std::nullopt});
  failed.env = std::move(env);
  return failed;
}

EnvFacts unread_for_stall(const discovery::EnvCandidate& candidate, const facts::Stall& stall) {
  EnvFacts env;
  env.env = discovery::unread_env(candidate, stall.message());
  env.errors.push_back({FactError::Stage::reading, stall.message(), stall});
  return env;
}

// What every env's reading in one scan shares.
struct ScanReading {
  const HostFactsOptions& options;
  std::shared_ptr<FactCaches> caches;
  std::shared_ptr<const process::MountTable> mount_table;
  std::shared_ptr<const loader::LdCache> ld_cache;
  BlockedMounts& blocked;
  // Set when facts are kept for unchanged envs (the change watch runs);
  // then what the envs share (the mount table, the loader's cache) is
  // watched too.
  std::shared_ptr<freshness::ChangeWatch> watch;
  freshness::SharedReadInputs* shared_inputs = nullptr;
};

// What describing a candidate depends on besides its files: facts kept
// under another key are read again. "" for envs never kept: those a
// container runs, and those on a user's mount.
std::string kept_key(const HostFactsOptions& options, const discovery::EnvCandidate& candidate) {
  if (!candidate.exec.argv.empty() || candidate.holds_mount) {
    return {};
  }
  return options.keep_key + '\0' + options.discovery.run_as.root_envs_user + '\0' +
         candidate.scan_root.string() + '\0' + to_string(candidate.likely_kind) + '\0' +
         (candidate.conda_installation ? "installation" : "") + '\0' + candidate.owner;
}

// One env, from describing it to its last fact, is one unit of reading:
// whatever of it blocks stops only that env.
void read_candidate(const ScanReading& scan, const discovery::EnvCandidate& candidate,
                    Reading& out) {
  if (const auto skipped = scan.blocked.stall_for("reading the env at " + candidate.prefix.string(),
                                                  candidate.prefix)) {
    out.env = unread_for_stall(candidate, *skipped);
    return;
  }
  auto& caches = *scan.caches;
  const std::string keep_key = kept_key(scan.options, candidate);
  const bool keepable = scan.watch && keep_key.size() > 0;
  if (keepable) {
    if (auto kept = caches.kept.lend(candidate.prefix, keep_key, scan.options.keep_unchanged_for,
                                     candidate.found_by)) {
      out.env = std::move(*kept);
      return;
    }
  }
  auto reading = std::make_shared<EnvReading>();
  if (keepable) {
    // Opened before the first read of the env: what changes from here on counts.
    reading->watch = scan.watch;
    reading->interest = reading->watch->open();
    reading->mounts = scan.mount_table;
  }
  reading->request = scan.options.request;
  reading->caches = scan.caches;
  reading->ld_cache = scan.ld_cache;
  reading->resources = scan.options.probe_limits;
  auto is_env = std::make_shared<bool>(true);
  const auto run_as = scan.options.discovery.run_as;
  const auto stall = process::run_bounded(
      "env " + candidate.prefix.string(), "reading the env at " + candidate.prefix.string(),
      scan.options.reading_deadline, scan.options.cancellation,
      [reading, is_env, candidate, run_as](const process::Cancellation& cancellation) {
        std::optional<process::RecordingReads> recording;
        if (reading->interest) {
          recording.emplace(reading->dependencies);
        }
        auto env = discovery::describe_candidate(candidate, run_as);
        if (!env) {
          *is_env = false;
          return;
        }
        reading->env.refused_files = env->refused_files;
        reading->env.env = std::move(*env);
        if (reading->env.env.user_mount.empty()) {
          read_env(*reading, cancellation);
        }
        if (reading->interest) {
          recording.reset();
          settle_reading(*reading, *reading->watch);
        }
      });
  if (stall) {
    // What was read so far belongs to the blocked reader: the env is
    // reported with the stall, and none of its code runs. Its interest
    // in changes ends now: the read may never settle.
    if (reading->interest) {
      reading->watch->abandon(*reading->interest);
    }
    scan.blocked.note(*stall, candidate.prefix);
    out.env = unread_for_stall(candidate, *stall);
  } else if (!*is_env) {
    out.not_an_env = true;
  } else {
    if (keepable && reading->settled && freshness::keepable_facts(reading->env) &&
        scan.shared_inputs->changed().empty()) {
      caches.kept.keep(reading->env, keep_key, reading->interest);
    }
    out.env = std::move(reading->env);
    out.activation_elapsed = reading->activation_elapsed;
    out.static_elapsed = reading->static_elapsed;
    out.linkage_elapsed = reading->linkage_elapsed;
  }
}

// Envs on one network or FUSE filesystem are read one after another in one
// lane, so that once one blocks the others on it are not started: each
// would leave a thread behind on a server that does not answer. Every
// other env is a lane of its own.
std::vector<std::vector<std::size_t>> reading_lanes(
    const std::vector<discovery::EnvCandidate>& candidates, const process::MountTable& mounts) {
  std::vector<std::vector<std::size_t>> lanes;
  std::map<std::filesystem::path, std::size_t> lane_of_mount;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto on = mounts.mount_of(candidates[i].prefix);
    if (!process::served_from_elsewhere(on.fstype)) {
      lanes.push_back({i});
      continue;
    }
    const auto [lane, added] = lane_of_mount.try_emplace(on.point, lanes.size());
    if (added) {
      lanes.emplace_back();
    }
    lanes[lane->second].push_back(i);
  }
  return lanes;
}

// Every candidate read, side by side (as many at once as envs are probed,
// at most k_max_reading): a rescan with nothing to run is mostly this
// reading (docs/performance.md).
std::vector<Reading> read_candidates(const ScanReading& scan,
                                     const std::vector<discovery::EnvCandidate>& candidates) {
  std::vector<Reading> readings(candidates.size());
  const auto lanes = reading_lanes(candidates, scan.blocked.mounts());
  // At most k_max_reading at once, whatever the cores: readers started
  // together are only counted against the bound on blocked ones once their
  // deadline passes, so it may be overrun by as many (docs/reliability.md).
  constexpr unsigned k_max_reading = 8;
  const unsigned reading_at_once =
      std::min(k_max_reading, scan.options.concurrency != 0
                                  ? scan.options.concurrency
                                  : std::max(1U, std::thread::hardware_concurrency()));
  run_concurrently(lanes.size(), reading_at_once, [&](std::size_t lane) {
    for (const auto index : lanes[lane]) {
      // That env's error, judged as not read (every check skipped, verdict
      // error), rather than the whole scan's failure: the others are read.
      try {
        read_candidate(scan, candidates[index], readings[index]);
      } catch (const std::exception& e) {
        readings[index] = failed_reading(candidates[index], e.what());
      } catch (...) {
        readings[index] = failed_reading(candidates[index], "an unknown exception");
      }
    }
  });
  return readings;
}

// Kept facts of envs gone (or no longer found) are dropped; all of them
// when nothing is kept.
void forget_kept_envs(FactCaches& caches, bool keeping,
                      const std::vector<discovery::EnvCandidate>& candidates) {
  if (!keeping) {
    caches.kept.forget_all();
    return;
  }
  std::set<std::filesystem::path> found;
  for (const auto& candidate : candidates) {
    found.insert(candidate.prefix);
  }
  caches.kept.forget_all_but(found);
}

// The envs read, in the candidates' order, named apart; what was not an env
// is a problem of the host's.
void collect_envs(const HostFactsOptions& options,
                  const std::vector<discovery::EnvCandidate>& candidates,
                  std::vector<Reading>& readings,
                  const std::vector<facts::DeviceNodes>& device_nodes, HostFacts& facts) {
  std::vector<PythonEnv> described;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    auto& read = readings[i];
    if (read.not_an_env) {
      facts.problems.push_back(
          {candidates[i].prefix,
           "not a Python environment (no conda-meta/, pyvenv.cfg or bin/python)"});
      continue;
    }
    auto& env = read.env.value();  // every candidate read is an env or not one
    facts.activation_elapsed += read.activation_elapsed;
    facts.static_elapsed += read.static_elapsed;
    facts.linkage_elapsed += read.linkage_elapsed;
    if (env.env.system_root == "/") {
      env.device_nodes = device_nodes;
    }
    described.push_back(env.env);
    facts.envs.push_back(std::move(env));
  }
  discovery::name_envs_apart(described);
  for (std::size_t i = 0; i < facts.envs.size(); ++i) {
    facts.envs[i].env.name = described[i].name;
    if (options.only_envs) {
      const auto named = options.only_envs->find(facts.envs[i].env.prefix);
      if (named != options.only_envs->end() && !named->second.empty()) {
        facts.envs[i].env.name = named->second;
      }
    }
  }
}

}  // namespace

HostFacts gather_host_facts(const HostFactsOptions& options,
                            const std::shared_ptr<FactCaches>& caches) {
  HostFacts facts;
  facts.host = hostname();
  facts.gathered_at = common::now_rfc3339();
  facts.image = discovery::read_image_tag(options.image);

  auto discovery_options = std::make_shared<discovery::DiscoveryOptions>(options.discovery);
  resolve_containers(options, facts, *discovery_options);
  const bool mounts_given = discovery_options->mounts != nullptr;
  if (!mounts_given) {
    discovery_options->mounts =
        std::make_shared<const process::MountTable>(process::MountTable::load());
  }
  std::shared_ptr<const process::MountTable> mount_table = discovery_options->mounts;
  BlockedMounts blocked;
  blocked.use(mount_table.get());
  auto search = discover_candidates(options, discovery_options, *caches, blocked, facts);
  if (options.only_envs) {
    keep_only_named_envs(*options.only_envs, search, facts);
  }

  const auto watch = options.keep_unchanged_for.count() > 0 ? caches->kept.watch() : nullptr;
  const bool keeping = watch != nullptr;
  // Before the mount table (unless the caller gave one, read earlier) and
  // the loader's cache are read for this scan: what changes in them from
  // here on leaves no env read meanwhile kept.
  std::optional<freshness::SharedReadInputs> shared_inputs;
  if (keeping) {
    shared_inputs.emplace();
  }
  if (!mounts_given) {
    // No lane reads yet (they start below), and a discovery reader left
    // blocked holds the options' own table, not this one.
    mount_table = std::make_shared<const process::MountTable>(process::MountTable::load());
    blocked.use(mount_table.get());
  }
  const auto ld_cache = std::make_shared<const loader::LdCache>(loader::LdCache::load());
  // Device nodes of the agent's own filesystem: globbed once, as the agent.
  const auto device_nodes =
      glob_device_nodes(options.request.device_globs, process::SystemRoot("/"));
  if (keeping) {
    // A mount made or removed shows other files at the same paths, and no
    // change event says so: nothing read under the old mounts is kept.
    caches->kept.read_under(freshness::mount_signature(*mount_table));
  }
  const ScanReading scan{
      options, caches, mount_table, ld_cache, blocked, watch, keeping ? &*shared_inputs : nullptr};
  auto readings = read_candidates(scan, search.candidates);
  forget_kept_envs(*caches, keeping, search.candidates);
  collect_envs(options, search.candidates, readings, device_nodes, facts);
  return facts;
}

}  // namespace envcontract::probes
