#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "probes/python_env.hpp"

namespace envcontract::probes {

struct DiscoveryOptions {
  // Filesystem roots (a host's "/", a container's rootfs) or plain directories
  // holding envs. Each is walked for conda prefixes and venvs; its home
  // directories (root/, home/*) are searched in the usual places.
  std::vector<std::filesystem::path> roots;
  // Envs named explicitly in the configuration.
  std::vector<std::filesystem::path> prefixes;
  // How deep below a root the walk looks for env prefixes.
  int max_depth = 4;
  // How many directories one root's walk may open: discovery stays cheap on
  // a host with a huge tree.
  std::size_t max_directories = 20000;
  // Whose credentials each env's code runs with (probes/run_as.hpp).
  RunAsPolicy run_as;
};

// Finds every Python environment a user of the host could use: conda
// installations (their base prefix and envs/*), every ~/.conda/environments.txt
// entry, venvs (pyvenv.cfg), pyenv versions and their virtualenvs,
// ~/.virtualenvs, poetry, pipenv and uv tool envs, and configured prefixes.
// Reads files only; launches no process. Symlinked duplicates are merged.
// Stale, unreadable or broken entries are reported, never fatal.
Discovery discover_envs(const DiscoveryOptions& options);

// Describes one prefix (conda, venv or a plain interpreter) as discovery
// would; nullopt when the directory is not a Python environment.
// `scan_root`: the root it was found under; the safety check looks at the
// prefix's parents up to it.
std::optional<PythonEnv> describe_prefix(const std::filesystem::path& prefix,
                                         const RunAsPolicy& run_as = {},
                                         const std::filesystem::path& scan_root = "/");

// The envs_dirs list of a .condarc's text, or why it cannot be read.
common::Result<std::vector<std::string>> parse_condarc_envs_dirs(const std::string& text);

}  // namespace envcontract::probes
