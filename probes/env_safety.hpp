#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "facts/env.hpp"
#include "probes/run_as.hpp"

// Whether an env's code may run at all, as sshd's StrictModes decides for
// authorized_keys: when anything the probe would execute or load could have
// been written by someone other than root and the user it runs as, running
// it would run that someone's code with the env owner's rights.
namespace envcontract::probes {

using facts::mode_text;
using facts::to_json;

using facts::UnsafePath;

struct SafetyInputs {
  std::filesystem::path prefix;
  std::filesystem::path python;  // bin/python as a user would run it
  std::vector<std::filesystem::path>
      activation;                                // scripts and variable files that activation reads
  std::vector<std::filesystem::path> site_dirs;  // the env's site-packages
  std::filesystem::path scan_root = "/";         // parents are checked up to here
};

// Every path among the inputs (with the prefix's parents, what bin/python
// resolves to and its directories, and each site dir's .pth files) that
// someone other than root and `run_as` could write. Empty: safe.
std::vector<UnsafePath> find_unsafe_paths(const SafetyInputs& inputs, const RunAs& run_as);

// What the interpreter imports from beyond the env's own files: PYTHONPATH,
// the user site, a base's site dirs and standard library, where .pth files
// and editable installs point. Code loaded from any of them runs with the env
// user's rights as surely as the env's own, so each path (with every parent
// up to `/`) and each .pth file of `site_dirs` is held to the same rule.
std::vector<UnsafePath> find_unsafe_import_paths(
    const std::vector<std::filesystem::path>& paths,
    const std::vector<std::filesystem::path>& site_dirs, const RunAs& run_as);

}  // namespace envcontract::probes
