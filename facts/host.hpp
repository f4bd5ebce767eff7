#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "facts/activation.hpp"
#include "facts/dynamic.hpp"
#include "facts/env.hpp"
#include "facts/linkage.hpp"
#include "facts/requested.hpp"
#include "facts/static_facts.hpp"

// Everything one scan learns of a host and each of its envs: what probes
// write and judges read. JSON only at the edges (the facts verb, HTTP, the
// report), through to_json.
namespace envcontract::facts {

using Json = nlohmann::ordered_json;

// At most this many readers of one agent are left blocked at once.
inline constexpr std::size_t k_max_blocked_readers = 64;

// What a reader that did not finish in time was doing.
struct Stall {
  std::string what;         // "the facts of env x"
  std::string last_path;    // the last file or directory it began to read, "" unknown
  std::string system_call;  // the call it is blocked in ("openat"), "" unknown
  std::string kernel_wait;  // the kernel function it sleeps in (wchan), "" unknown
  std::chrono::milliseconds deadline{0};
  std::string since;            // RFC 3339: when the blocked reader started
  bool from_earlier = false;    // still blocked since an earlier scan: not started again
  bool too_many = false;        // not started: too many readers are blocked already
  std::string cut_short;        // why it was no longer waited for (the scan was cancelled)
  bool running = false;         // the thread was running, not asleep: slow rather than stuck
  std::string same_filesystem;  // not started: on this filesystem, where another reader blocked

  // One sentence for reports and logs.
  std::string message() const;
};

struct ImageTag {
  std::string value;    // e.g. harbor.example/.../flagos-runtime-kunlunxin-xre5.37.1:2.1.2
  std::string source;   // "file /etc/flagos-image", "environment FLAGOS_IMAGE"
  std::string problem;  // why it could not be read; empty on success
};

// Something that went wrong while gathering one env's facts: the env is
// reported with it, and every other env is gathered as usual.
struct FactError {
  // Which gathering step failed.
  enum class Stage {
    reading,          // reading the env at all: it blocked or could not be started
    activation,       // running its activation
    static_facts,     // its files
    import_check,     // what its interpreter imports, held to the safety rule
    linkage,          // its libraries
    requested_facts,  // what the contract's checks ask of the host
    dynamic_probe,    // running its code
  };
  Stage stage = Stage::reading;
  std::string message;         // what happened
  std::optional<Stall> stall;  // a reader blocked past its deadline: what it was doing
};

// "reading", "activation", "static facts", "import check", "linkage",
// "requested facts", "dynamic probe": as reports name the step.
std::string to_string(FactError::Stage stage);

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
  // The host's (the same for every env on it), or its system root's.
  std::vector<DeviceNodes> device_nodes;
  // What running its code showed (dynamic probes), when they ran.
  std::optional<DynamicFacts> dynamic;
  std::string probed_at;  // RFC 3339: when the dynamic facts were gathered
  // Not read in this scan: nothing its facts were read from changed since
  // an earlier one (freshness/change_watch.hpp). Not part of its JSON.
  bool kept = false;
};

// What one pass over a host learns without running env code.
// A container scanned as a target of its own (discovery/container_target.hpp):
// its envs run inside it, and its image is judged like the host's.
struct ContainerFacts {
  std::string name;
  std::string root;               // where the agent reads its files
  std::vector<std::string> exec;  // the prefix its envs' code runs through, as configured
  ImageTag image;
  std::string problem;  // why it could not be scanned; its envs are then unknown
};

struct HostFacts {
  std::string host;         // this machine's hostname
  std::string gathered_at;  // RFC 3339, UTC
  ImageTag image;
  std::vector<ContainerFacts> containers;
  std::vector<EnvFacts> envs;
  std::vector<DiscoveryProblem> problems;
  // Why the facts miss part of the host (discovery did not finish): the
  // host's verdict cannot be "compliant" while any is listed.
  std::vector<std::string> incomplete;
  std::chrono::microseconds static_elapsed{0};      // discovery and static facts
  std::chrono::microseconds activation_elapsed{0};  // running activation scripts
  std::chrono::microseconds linkage_elapsed{0};     // ELF reading and loader resolution
};

Json to_json(const ImageTag& tag);
Json to_json(const FactError& error);
Json to_json(const ContainerFacts& container);
// The env as `envcontractd facts` prints it ("dynamic" and "probed_at" last,
// when dynamic probes ran).
Json to_json(const EnvFacts& env);
Json to_json(const HostFacts& facts);
// Its refused files, with one "..." entry counting those beyond the list.
Json refused_files_json(const EnvFacts& env);

}  // namespace envcontract::facts
