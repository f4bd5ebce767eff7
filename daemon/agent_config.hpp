#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "contracts/diagnostics.hpp"
#include "daemon/store.hpp"
#include "daemon/webhooks.hpp"
#include "discovery/container_runtime.hpp"
#include "discovery/image_tag.hpp"
#include "process/containment.hpp"
#include "process/run_as.hpp"

namespace envcontract::daemon {

// Everything `envcontractd serve` can be told: the YAML file
// (/etc/envcontract/agent.yaml, docs/agent.md) first, then flags over it.
// Building new envs from a contract's recipe (docs/provisioning.md). The
// HTTP API refuses to provision unless `enabled`; the CLI verbs take it
// from here too, flags over it.
struct ProvisioningConfig {
  bool enabled = false;
  std::string user;                // who runs the steps; never root
  std::filesystem::path envs_dir;  // where new envs are made
  bool remove_on_failure = false;  // else kept and marked failed
  std::vector<std::filesystem::path> python_dirs = {"/usr/local/bin", "/usr/bin"};
  std::chrono::milliseconds step_timeout{30 * 60 * 1000};
};

struct AgentConfig {
  std::string contract = "auto";  // a contract file, or "auto": detect among contracts_dir
  std::filesystem::path contracts_dir = "/usr/share/envcontract/contracts";
  std::filesystem::path detect_root = "/";  // where /dev and tools are looked for by auto
  std::vector<std::filesystem::path> roots = {"/"};
  std::vector<std::filesystem::path> prefixes;
  // Containers whose envs run inside them (docs/containers.md): named, and
  // found in the runtime's list at each scan.
  std::vector<discovery::ContainerConfig> containers;
  std::optional<discovery::ContainerDiscovery> container_discovery;
  std::string listen = "127.0.0.1:9714";
  std::filesystem::path database = Store::default_path;  // its directory must exist, but this one's
  discovery::ImageTagSource image;
  std::chrono::milliseconds interval{5 * 60 * 1000};
  std::chrono::milliseconds reprobe_interval{30 * 60 * 1000};  // devices and smoke, unchanged env
  // An env none of whose files changed (the kernel's fanotify says) is not
  // read again either, until reprobe_interval: the warm rescan reads nothing.
  bool watch_file_changes = true;
  std::chrono::milliseconds contract_poll{2000};  // how often the contract file is looked at
  unsigned concurrency = 0;
  std::filesystem::path token_file;  // bearer token for POST /api/v1/scan; empty: no token
  std::string log_level = "info";
  FlappingRule flapping;
  // The HTTP side serves a connection on one thread for its life: threads bound
  // the connections served at once, http_max_connections those accepted
  // (the rest are answered 503 at once). As many threads as connections by
  // default: a connection waiting for a thread costs its client a reconnect
  // per answer, which halved the throughput under load (docs/performance.md);
  // threads start only as connections come, so the ceiling costs nothing idle.
  unsigned http_threads = 256;
  std::size_t http_max_connections = 256;
  // Of them, those one peer address may hold (0: a quarter of http_max_connections).
  std::size_t http_max_connections_per_client = 0;
  std::chrono::milliseconds http_timeout{10'000};  // a whole request, first byte to last
  // A serving thread with nothing to serve this long ends (one always stays).
  std::chrono::milliseconds http_idle_thread_life{30'000};
  // A CI platform config's entries to run although they have no phase:
  // preflight (by id, name or check id; docs/contracts.md).
  std::vector<std::string> run_integration_tests;
  // A checkout of the repository whose platform configs the contract's
  // integration_test checks name as "{checkout}/..." ("": none; they skip).
  std::filesystem::path checkout;
  std::vector<std::string> http_allowed_hosts;  // Host names served besides loopback and IPs
  // Root-owned envs' code runs as a uid of its own per env ("dynamic"), or
  // as this user; "root" only by explicit choice (docs/security.md).
  std::string run_root_envs_as = process::k_dynamic_probe_user;
  process::ResourceLimits probe_limits;                    // per probe process tree
  std::chrono::milliseconds env_deadline{15 * 60 * 1000};  // one env's probe stages together
  // Discovery, and reading one env's files: past it, a blocked reader is left behind.
  std::chrono::milliseconds reading_deadline{2 * 60 * 1000};
  std::chrono::milliseconds scan_deadline{60 * 60 * 1000};  // the whole scan (watchdog)
  StoreLimits store;  // history retention and the size of stored values
  // Receivers of transition events: an env or the host starts or stops
  // complying, a check starts hanging (docs/fleet.md).
  std::vector<WebhookTarget> webhooks;
  ProvisioningConfig provisioning;
};

// Reads the agent's YAML config into `config` (keys absent keep their
// values). Returns every problem found, each with its position; the config
// is refused when any is an error (`has_errors()`). Unknown keys are errors,
// with a did-you-mean.
contracts::Diagnostics read_agent_config(const std::filesystem::path& path, AgentConfig& config);

// "127.0.0.1:9714", "localhost:9714", "[::1]:9714", "0.0.0.0:9714".
struct ListenAddress {
  std::string host;
  int port = 0;
};
std::optional<ListenAddress> parse_listen_address(const std::string& text);

}  // namespace envcontract::daemon
