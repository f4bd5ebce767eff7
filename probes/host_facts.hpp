#pragma once

#include "facts/probe_request.hpp"
#include "probes/requested_facts.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "probes/activation.hpp"
#include "probes/discovery.hpp"
#include "probes/image_tag.hpp"
#include "probes/library_lookup.hpp"
#include "probes/linkage_facts.hpp"
#include "probes/small_files.hpp"
#include "probes/stall_guard.hpp"
#include "probes/static_facts.hpp"

namespace envcontract::probes {

// Something that went wrong while gathering one env's facts: the env is
// reported with it, and every other env is gathered as usual.
struct FactError {
  std::string stage;    // "static facts", "activation", "linkage", "dynamic probe", "reading"
  std::string message;  // what happened
  std::optional<Stall> stall;  // a reader blocked past its deadline: what it was doing
};

struct EnvFacts {
  PythonEnv env;
  std::vector<FileProblem> refused_files;  // env files the agent would not read (small_files.hpp)
  std::size_t more_refused_files = 0;      // beyond those listed
  std::vector<FactError> errors;
  StaticFacts static_facts;
  ActivatedEnvironment activation;
  LinkageFacts linkage;                        // under the activated environment
  std::optional<LinkageFacts> bare_linkage;    // when activation changes LD_LIBRARY_PATH
  std::vector<LibraryLookup> library_lookups;  // HostFactsOptions::request, activated
  GlibcFacts glibc;                            // the C library its processes get
  // What the contract's checks asked for (HostFactsOptions::request).
  std::vector<PathMatches> path_matches;  // read as the env's user
  std::vector<ToolLookup> tools;          // on the activated PATH
  std::vector<DeviceNodes> device_nodes;  // the host's, the same for every env
};

// What one pass over a host learns without running env code.
struct HostFacts {
  std::string host;         // this machine's hostname
  std::string gathered_at;  // RFC 3339, UTC
  ImageTag image;
  std::vector<EnvFacts> envs;
  std::vector<DiscoveryProblem> problems;
  // Why the facts miss part of the host (discovery did not finish): the
  // host's verdict cannot be "compliant" while any is listed.
  std::vector<std::string> incomplete;
  std::chrono::microseconds static_elapsed{0};      // discovery and static facts
  std::chrono::microseconds activation_elapsed{0};  // running activation scripts
  std::chrono::microseconds linkage_elapsed{0};     // ELF reading and loader resolution
};

struct HostFactsOptions {
  DiscoveryOptions discovery;
  ImageTagSource image;
  // What the contract's checks asked for beyond every scan's facts: libraries
  // by name, path patterns, device globs, tools (the dynamic stages' part is
  // run later, by dynamic_probe).
  facts::ProbeRequest request;
  // Stops activation scripts that are running when the scan is cancelled.
  const Cancellation* cancellation = nullptr;
  // How long discovery, and each env's facts, may take. A reader still
  // blocked past it (a filesystem that does not answer) is left behind and
  // its env reported with what it was reading (probes/stall_guard.hpp).
  // Zero: no deadline, everything read on the calling thread.
  std::chrono::milliseconds reading_deadline{std::chrono::minutes(2)};
};

// What the facts of a host keep between scans: activations of unchanged envs
// and parsed ELF files. Shared with readers that may outlive a scan.
struct FactCaches {
  ActivationCache activations;
  ElfCache elf_files;
  std::mutex mutex;  // guards what follows
  // Each discovery unit's last complete result: stands in while it blocks.
  std::map<std::string, CandidateSearch> last_discovery;
};

// Discovers envs and reads their static facts, activates each env (through
// `activations`, so unchanged envs are not activated again), then resolves
// every shared library of each env as the loader would (through `elf_files`,
// so a library is parsed once).
HostFacts gather_host_facts(const HostFactsOptions& options,
                            const std::shared_ptr<FactCaches>& caches);

// {"schema_version": 1, "host", "gathered_at", "timing_ms", "image", "problems", "incomplete",
// "envs": [...]}
Json to_json(const HostFacts& facts);

// {"refused_files": [{"path", "problem"}], "fact_errors": [{"stage", "message"}]} members of an
// env.
Json to_json(const FactError& error);
Json to_json(const FileProblem& problem);

}  // namespace envcontract::probes
