#pragma once

// Flags that several verbs take, defined once so that each means one thing
// wherever it is taken. ScanFlags: those of every verb that scans this host
// (facts, scan, serve, plan, provision, promote, snapshot): where envs are
// looked for, whom root's envs run as, the image reference, container
// targets, progress, where `auto` looks.

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/agent_config.hpp"
#include "probes/host_facts.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace envcontract::daemon {

struct ScanFlags {
  std::vector<std::string> roots;
  std::vector<std::string> prefixes;
  std::string run_root_envs_as;
  std::string image_tag_file;
  std::string image_tag_env;
  std::string image_tag_command;
  std::string containers_file;
  std::string contracts_dir;
  std::string detect_root;
  std::string progress = "auto";

  // --root, --prefix, and add_run_as's.
  void add_discovery(CLI::App* verb);
  // --run-root-envs-as.
  void add_run_as(CLI::App* verb);
  // --image-tag-file, --image-tag-env, --image-tag-command (one of them).
  void add_image(CLI::App* verb);
  // --containers FILE (docs/containers.md).
  void add_containers(CLI::App* verb);
  // --contracts-dir DIR and --detect-root DIR: where `--contract auto`
  // looks for contracts, and for the devices and tools that pick one.
  void add_contract_detection(CLI::App* verb);
  // --progress auto|always|never: env by env on stderr.
  void add_progress(CLI::App* verb);

  // The flags given, over `config` (the agent's config file's values, or
  // the defaults). False, after saying why on `err`, when a --containers
  // file is not valid.
  bool apply(AgentConfig& config, std::ostream& err) const;
  // For the verbs that read no config file: the defaults, the flags over
  // them, and every root and prefix a directory; nullopt after saying why
  // on `err` ("envcontractd VERB: --root ...: no such directory").
  std::optional<AgentConfig> over_defaults(std::string_view verb, std::ostream& err) const;
  // --progress always, or auto with stderr on a terminal.
  bool progress_wanted() const;
};

// --contract FILE|auto: the contract the host is judged against (scan,
// serve, plan, provision, promote); `auto` picks one as the agent does
// (add_contract_detection). A file that does not exist is refused in one
// sentence that says what is wanted.
CLI::Option* add_contract_option(CLI::App* verb, std::string& contract);
// --contract FILE: a contract whose checks decide what runs (probe, snapshot).
CLI::Option* add_base_contract_option(CLI::App* verb, std::string& contract,
                                      const std::string& help);

// --allowed-host NAME (repeatable): a Host name served besides IP
// addresses, loopback names and this machine's name; the agent's and the
// fleet view's alike.
CLI::Option* add_allowed_host_option(CLI::App* verb, std::vector<std::string>& names);

// Where and how a scan looks, as the config says.
probes::HostFactsOptions host_facts_options(const AgentConfig& config);

// A root or prefix that is not a directory this agent can open: a mistyped
// path is a configuration error, not a host without envs. "" when all are.
std::string missing_directory(const discovery::DiscoveryOptions& discovery);

}  // namespace envcontract::daemon
