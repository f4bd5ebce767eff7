#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "facts/env.hpp"
#include "process/run_as.hpp"

// Whether an env's code may run at all, as sshd's StrictModes decides for
// authorized_keys: when anything the probe would execute or load could have
// been written by someone other than root and the user it runs as, running
// it would run that someone's code with the env owner's rights.
namespace envcontract::discovery {

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
  // An image's env that runs as a uid of its own (RunAs::own_uid): the
  // owners its files name were chosen by the image's author and name no
  // one here who would gain by running code as that uid, so only modes
  // (writable by everyone, by an untrusted group) make it unsafe.
  bool owners_are_facts = false;
};

// Whether `env` is an image's env run as a uid of its own, whose files'
// owners are only facts (SafetyInputs::owners_are_facts): an env of an
// operating system tree read on the host, outside any container target.
bool owners_are_facts(const facts::PythonEnv& env);

// Every path among the inputs (with the prefix's parents, what bin/python
// resolves to and its directories, and each site dir's .pth files) that
// someone other than root and `run_as` could write. Empty: safe.
std::vector<UnsafePath> find_unsafe_paths(const SafetyInputs& inputs, const facts::RunAs& run_as);

// What the interpreter imports from beyond the env's own files: PYTHONPATH,
// the user site, a base's site dirs and standard library, where .pth files
// and editable installs point. Code loaded from any of them runs with the env
// user's rights as surely as the env's own, so each path (with every parent
// up to `/`) and each .pth file of `site_dirs` is held to the same rule.
std::vector<UnsafePath> find_unsafe_import_paths(
    const std::vector<std::filesystem::path>& paths,
    const std::vector<std::filesystem::path>& site_dirs, const facts::RunAs& run_as,
    bool owners_are_facts = false, const std::filesystem::path& root = "/");

}  // namespace envcontract::discovery
