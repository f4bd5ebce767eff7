#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probes/env_safety.hpp"
#include "probes/process_runner.hpp"
#include "probes/run_as.hpp"
#include "probes/small_files.hpp"

namespace envcontract::probes {

using Json = nlohmann::ordered_json;

enum class EnvKind {
  conda,        // a prefix with conda-meta/
  venv,         // a prefix with pyvenv.cfg (python -m venv, virtualenv, poetry, uv)
  interpreter,  // a plain Python installation, such as a pyenv version
};

std::string to_string(EnvKind kind);

// One Python environment a user of the host could run, as found on disk.
struct PythonEnv {
  std::string name;              // conda env name, venv dir name, "base" for a conda root
  std::filesystem::path prefix;  // canonical: symlinks resolved
  EnvKind kind = EnvKind::conda;
  std::filesystem::path python;       // the interpreter a user would run: prefix/bin/python
  std::string python_version;         // "3.10.13", or "3.10" when only the lib dir tells
  std::string owner;                  // user name owning the prefix, or its numeric uid
  std::vector<std::string> found_by;  // how discovery reached it
  std::vector<std::string> problems;  // what is wrong with the prefix itself
  RunAs run_as;                       // whose credentials its code runs with
  // Paths others could write: while any is listed, none of its code runs.
  std::vector<UnsafePath> unsafe;
  // Whether what its interpreter imports from was held to the same rule
  // (probes/import_safety.hpp); the dynamic probes check it first when not.
  bool imports_checked = false;
  // Why not all of it could be checked (a bound reached, the search path
  // unreadable), or "": while set, none of its code runs.
  std::string imports_unchecked;
  // Files discovery would not read (a FIFO for pyvenv.cfg, a 60,000-digit version).
  std::vector<FileProblem> refused_files;
  // A filesystem served by a user's process inside the prefix
  // (probes/mount_table.hpp): when set, nothing of the env is read or run.
  std::filesystem::path user_mount;
  // The operating system tree it belongs to (probes/system_root.hpp): "/",
  // or the container rootfs scanned with --root that it lies in; a
  // contract's absolute paths, PATH and device nodes are read there.
  std::filesystem::path system_root = "/";
};

// Why none of this env's code may run (its user cannot be had, others could
// write what it would run, or what it imports could not all be checked), or
// "" when it may.
std::string code_refusal(const PythonEnv& env);

// The credentials to hand the process runner: unset when the agent keeps its own.
std::optional<Credentials> credentials_of(const PythonEnv& env);

// Something discovery could not use, e.g. a stale environments.txt entry.
struct DiscoveryProblem {
  std::filesystem::path path;
  std::string problem;
};

struct Discovery {
  std::vector<PythonEnv> envs;  // sorted by prefix
  std::vector<DiscoveryProblem> problems;
};

Json to_json(const PythonEnv& env);
Json to_json(const Discovery& discovery);

}  // namespace envcontract::probes
