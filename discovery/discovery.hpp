#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "discovery/container_target.hpp"
#include "discovery/python_env.hpp"
#include "process/mount_table.hpp"

namespace envcontract::discovery {

struct DiscoveryOptions {
  // Filesystem roots (a host's "/", a container's rootfs) or plain directories
  // holding envs. Each is walked for conda prefixes and venvs; its home
  // directories (root/, home/*) are searched in the usual places.
  std::vector<std::filesystem::path> roots;
  // Envs named explicitly in the configuration.
  std::vector<std::filesystem::path> prefixes;
  // Containers scanned as targets of their own: their env roots are walked
  // under each one's root, and the envs found there run inside it.
  std::vector<ContainerTarget> containers;
  // How deep below a root the walk looks for env prefixes.
  int max_depth = 4;
  // How many directories one root's walk may open: discovery stays cheap on
  // a host with a huge tree.
  std::size_t max_directories = 20000;
  // Whose credentials each env's code runs with (process/run_as.hpp).
  process::RunAsPolicy run_as;
  // The mounts discovery keeps out of (users' FUSE filesystems); unset: this
  // process's, read when discovery starts.
  std::shared_ptr<const process::MountTable> mounts;
};

// A directory that discovery found to look like an env (it has conda-meta/,
// pyvenv.cfg or bin/python), not read any further yet.
struct EnvCandidate {
  std::filesystem::path prefix;  // symlinks resolved
  std::vector<std::string> found_by;
  std::filesystem::path scan_root = "/";          // the root it was found under
  EnvKind likely_kind = EnvKind::interpreter;     // by its markers
  std::optional<process::UserMount> holds_mount;  // a user's mount at or below the prefix
  bool conda_installation = false;                // conda-meta/ and envs/: named "base"
  std::string owner;                              // of the prefix, as describe_prefix says it
  facts::ExecPrefix exec;                         // found in a container target: how it runs there
};

struct DiscoveryUnit;

struct CandidateSearch {
  std::vector<EnvCandidate> candidates;  // sorted by prefix, each prefix once
  std::vector<DiscoveryProblem> problems;
  std::vector<DiscoveryUnit> more_units;  // found by this one: each home of a root
};

// A part of discovery that can be bounded on its own (a root's walk and
// conda configuration, a root's list of homes, one home, the configured
// prefixes): a home that blocks costs that home's envs, not the host's.
struct DiscoveryUnit {
  std::string key;   // "discovery of /home/alice"
  std::string path;  // what it searches, "" for the configured prefixes
  std::function<CandidateSearch(const DiscoveryOptions&)> run;
};

// The units of discovery; more come from running them (homes).
std::vector<DiscoveryUnit> discovery_units(const DiscoveryOptions& options);

// Adds `from` to `into`: a prefix found twice is one candidate, found both ways.
void merge_candidates(CandidateSearch& into, CandidateSearch&& from);

// Discovery's first half, every unit in turn: walks the roots and reads the
// lists of envs (environments.txt, .condarc), looking at no more of each env
// than its markers, and never into a user's mount.
CandidateSearch find_env_candidates(const DiscoveryOptions& options);

// Its second half, one env: describe_prefix, or for an env holding a user's
// mount what can be said without reading it. nullopt when it is no env after all.
std::optional<PythonEnv> describe_candidate(const EnvCandidate& candidate,
                                            const process::RunAsPolicy& run_as);

// What an env is called when nothing of it could be read: named from its
// prefix as describe_prefix names it, and none of its code runs (`why`).
PythonEnv unread_env(const EnvCandidate& candidate, const std::string& why);

// Gives envs with the same name (a second "base", a venv named like a conda
// env) their prefix as name, so that names identify envs in reports.
void name_envs_apart(std::vector<PythonEnv>& envs);

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
// `exec`: found in a container target (whose root is `scan_root`): the env
// belongs to it when it lies inside, and runs there.
std::optional<PythonEnv> describe_prefix(const std::filesystem::path& prefix,
                                         const process::RunAsPolicy& run_as = {},
                                         const std::filesystem::path& scan_root = "/",
                                         const facts::ExecPrefix& exec = {});

// The envs_dirs list of a .condarc's text, or why it cannot be read.
common::Result<std::vector<std::string>> parse_condarc_envs_dirs(const std::string& text);

}  // namespace envcontract::discovery
