#pragma once

#include "facts/probe_request.hpp"
#include "probes/requested_facts.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "discovery/container_runtime.hpp"
#include "discovery/discovery.hpp"
#include "discovery/image_tag.hpp"
#include "facts/host.hpp"
#include "freshness/kept_facts.hpp"
#include "probes/activation.hpp"
#include "probes/library_lookup.hpp"
#include "probes/linkage_facts.hpp"
#include "probes/static_facts.hpp"
#include "process/small_files.hpp"
#include "process/stall_guard.hpp"

namespace envcontract::probes {

using facts::to_json;

using facts::FactError;

using facts::EnvFacts;

using facts::HostFacts;

struct HostFactsOptions {
  discovery::DiscoveryOptions discovery;
  // Containers scanned as targets of their own: resolved (their runtime
  // asked) at the start of each scan, then searched by discovery.
  std::vector<discovery::ContainerConfig> containers;
  // And those its runtime lists (with a label), found again at each scan.
  std::optional<discovery::ContainerDiscovery> container_discovery;
  discovery::ImageTagSource image;
  // What the contract's checks asked for beyond every scan's facts: libraries
  // by name, path patterns, device globs, tools (the dynamic stages' part is
  // run later, by dynamic_probe).
  facts::ProbeRequest request;
  // Stops activation scripts that are running when the scan is cancelled.
  const process::Cancellation* cancellation = nullptr;
  // What each activation's process tree may use: the probes' limits, since
  // activate.d scripts are the env's code as much as its imports are.
  process::ResourceLimits probe_limits;
  // Envs read at once (0: the number of cores; at most 8 whatever it says);
  // envs on one network or FUSE filesystem are read one at a time all the
  // same. The summed timings of the facts (timing_ms) then exceed the time
  // the reading took.
  unsigned concurrency = 0;
  // How long discovery, and each env's facts, may take. A reader still
  // blocked past it (a filesystem that does not answer) is left behind and
  // its env reported with what it was reading (process/stall_guard.hpp).
  // Zero: no deadline, each env read on the thread that reads it.
  std::chrono::milliseconds reading_deadline{std::chrono::minutes(2)};
  // How long an env's facts may be kept without reading its files again,
  // while the change watch (FactCaches::kept, its watch) sees nothing they were read
  // from change. Zero, or no watch: every env is read at every scan.
  std::chrono::milliseconds keep_unchanged_for{0};
  // What else the kept facts were gathered for (the contract that asked):
  // facts kept under another key are read again.
  std::string keep_key;
  // Set: only the envs discovery finds at these prefixes are read (a CI
  // gate's env), each as the whole discovery finds it (under its root, an
  // image's tree or the host's), never a prefix discovery does not find;
  // each named as the full scan named it (its waivers are by name), and the
  // host's discovery problems kept only where they are about it.
  std::optional<std::map<std::filesystem::path, std::string>> only_envs;
};

// What the facts of a host keep between scans: activations of unchanged envs
// and parsed ELF files. Shared with readers that may outlive a scan.
struct FactCaches {
  ActivationCache activations;
  loader::ElfCache elf_files;
  // Each env's facts, kept while the host's file changes are watched and
  // none of what they were read from changes.
  freshness::KeptFacts kept;
  std::mutex mutex;  // guards what follows
  // Each discovery unit's last complete result: stands in while it blocks.
  std::map<std::string, discovery::CandidateSearch> last_discovery;
};

// Discovers envs and reads their static facts, activates each env (through
// `activations`, so unchanged envs are not activated again), then resolves
// every shared library of each env as the loader would (through `elf_files`,
// so a library is parsed once).
HostFacts gather_host_facts(const HostFactsOptions& options,
                            const std::shared_ptr<FactCaches>& caches);

// {"schema_version": 1, "host", "gathered_at", "timing_ms", "image", "problems", "incomplete",
// "envs": [...]}

// {"refused_files": [{"path", "problem"}], "fact_errors": [{"stage", "message"}]} members of an
// env.

}  // namespace envcontract::probes
