#include "daemon/shared_flags.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <ostream>

#include "common/shown_path.hpp"
#include "daemon/container_config.hpp"

namespace envcontract::daemon {

void ScanFlags::add_discovery(CLI::App* verb) {
  verb->add_option("--root", roots,
                   "a filesystem root or directory to search for envs (repeatable; default /, "
                   "or the config's roots:)");
  verb->add_option("--prefix", prefixes, "an env prefix to include (repeatable)");
  add_run_as(verb);
}

void ScanFlags::add_run_as(CLI::App* verb) {
  verb->add_option("--run-root-envs-as", run_root_envs_as,
                   "whom root-owned envs' code runs as: 'dynamic' (the default), a uid of its "
                   "own for each env; a user's name, that user for all; 'root', root, and "
                   "reports say so (docs/security.md)");
}

void ScanFlags::add_image(CLI::App* verb) {
  auto* file = verb->add_option("--image-tag-file", image_tag_file,
                                "file holding the host's container image reference");
  auto* variable = verb->add_option("--image-tag-env", image_tag_env,
                                    "environment variable holding the image reference");
  auto* command = verb->add_option("--image-tag-command", image_tag_command,
                                   "shell command printing the image reference (10 s timeout)");
  file->excludes(variable)->excludes(command);
  variable->excludes(command);
}

void ScanFlags::add_containers(CLI::App* verb) {
  verb->add_option("--containers", containers_file,
                   "YAML file with a 'containers:' list (and 'container_discovery:'): "
                   "containers whose envs run inside them (docs/containers.md)")
      ->check(CLI::ExistingFile);
}

void ScanFlags::add_contract_detection(CLI::App* verb) {
  verb->add_option("--contracts-dir", contracts_dir,
                   "where 'auto' looks for contracts (default /usr/share/envcontract/contracts)")
      ->check(CLI::ExistingDirectory);
  verb->add_option("--detect-root", detect_root,
                   "where 'auto' looks for /dev nodes and tools (default /)")
      ->check(CLI::ExistingDirectory);
}

void ScanFlags::add_progress(CLI::App* verb) {
  verb->add_option("--progress", progress,
                   "a line per finished env and, every 5 s, what is still running, on stderr: "
                   "auto (on a terminal), always (CI logs too) or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
}

bool ScanFlags::apply(AgentConfig& config, std::ostream& err) const {
  if (!roots.empty() || !prefixes.empty()) {
    config.roots.assign(roots.begin(), roots.end());
    config.prefixes.assign(prefixes.begin(), prefixes.end());
  }
  if (!run_root_envs_as.empty()) {
    config.run_root_envs_as = run_root_envs_as;
  }
  using Kind = discovery::ImageTagSource::Kind;
  if (!image_tag_file.empty()) {
    config.image = {Kind::file, image_tag_file};
  } else if (!image_tag_env.empty()) {
    config.image = {Kind::environment, image_tag_env};
  } else if (!image_tag_command.empty()) {
    config.image = {Kind::command, image_tag_command};
  }
  if (!contracts_dir.empty()) {
    config.contracts_dir = contracts_dir;
  }
  if (!detect_root.empty()) {
    config.detect_root = detect_root;
  }
  if (!containers_file.empty()) {
    ContainerSettings settings;
    const auto problems = read_containers_file(containers_file, settings);
    if (!problems.empty()) {
      err << problems;
      return false;
    }
    config.containers = std::move(settings.containers);
    config.container_discovery = std::move(settings.discovery);
  }
  return true;
}

std::optional<AgentConfig> ScanFlags::over_defaults(std::string_view verb,
                                                    std::ostream& err) const {
  AgentConfig config;
  if (!apply(config, err)) {
    return std::nullopt;
  }
  if (const auto problem = missing_directory(host_facts_options(config).discovery);
      !problem.empty()) {
    err << "envcontractd " << verb << ": " << problem << "\n";
    return std::nullopt;
  }
  return config;
}

bool ScanFlags::progress_wanted() const {
  return progress == "always" || (progress == "auto" && ::isatty(STDERR_FILENO) != 0);
}

namespace {

// A contract file that is there, or (where `auto_allowed`) `auto`.
CLI::Validator contract_file(bool auto_allowed) {
  const std::string wanted =
      auto_allowed ? "give a contract file, or 'auto'" : "give a contract file";
  return CLI::Validator(
      [auto_allowed, wanted](std::string& value) -> std::string {
        if (auto_allowed && value == "auto") {
          return "";
        }
        std::error_code error;
        const auto status = std::filesystem::status(value, error);
        if (status.type() == std::filesystem::file_type::not_found) {
          return common::shown_path(value) + " does not exist; " + wanted;
        }
        if (std::filesystem::is_directory(status)) {
          return common::shown_path(value) + " is a directory; " + wanted;
        }
        return "";
      },
      auto_allowed ? "FILE|auto" : "FILE");
}

}  // namespace

CLI::Option* add_contract_option(CLI::App* verb, std::string& contract) {
  return verb
      ->add_option("--contract", contract,
                   "the contract (YAML), or 'auto' to pick one of --contracts-dir by the devices "
                   "and tools this host has (serve's default: the config's contract:, else auto)")
      ->check(contract_file(true));
}

CLI::Option* add_base_contract_option(CLI::App* verb, std::string& contract,
                                      const std::string& help) {
  return verb->add_option("--contract", contract, help)->check(contract_file(false));
}

CLI::Option* add_allowed_host_option(CLI::App* verb, std::vector<std::string>& names) {
  return verb->add_option("--allowed-host", names,
                          "a Host name to answer under, besides IP addresses, loopback names "
                          "and this machine's name (repeatable)");
}

probes::HostFactsOptions host_facts_options(const AgentConfig& config) {
  probes::HostFactsOptions options;
  options.discovery.roots = config.roots;
  options.discovery.prefixes = config.prefixes;
  options.discovery.run_as.root_envs_user = config.run_root_envs_as;
  options.containers = config.containers;
  options.container_discovery = config.container_discovery;
  options.image = config.image;
  return options;
}

std::string missing_directory(const discovery::DiscoveryOptions& discovery) {
  for (const auto& [flag, paths] :
       {std::pair{"--root", &discovery.roots}, std::pair{"--prefix", &discovery.prefixes}}) {
    for (const auto& path : *paths) {
      std::error_code error;
      if (!std::filesystem::is_directory(path, error)) {
        return std::string(flag) + " " + common::shown_path(path) +
               ": no such directory (or it cannot be read)";
      }
    }
  }
  return "";
}

}  // namespace envcontract::daemon
