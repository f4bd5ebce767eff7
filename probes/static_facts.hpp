#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "probes/distributions.hpp"
#include "probes/python_env.hpp"
#include "probes/search_path.hpp"

namespace envcontract::probes {

// torch as its files describe it: torch/version.py and its dist-info.
struct TorchFacts {
  bool present = false;
  std::filesystem::path location;   // site-packages/torch
  std::string version;              // torch.version.__version__, e.g. "2.10.0+cu129"
  std::string base;                 // "2.10.0"
  std::string local;                // "cu129", "" when none
  std::optional<std::string> cuda;  // torch.version.cuda; nullopt for None
  std::optional<std::string> hip;
  std::string distribution_version;    // from torch-*.dist-info, may differ from version.py
  std::vector<std::string> libraries;  // file names under torch/lib
  std::string problem;                 // e.g. version.py unreadable
};

// Who provides the `triton` package, and what it carries.
struct TritonFacts {
  bool present = false;
  std::filesystem::path location;
  std::string provider;                // normalised distribution name: "triton", "flagtree"
  std::string provider_version;        // that distribution's version
  std::optional<std::string> version;  // a literal __version__ in triton/__init__.py
  std::vector<std::string> backends;   // directories under triton/backends/
  std::vector<std::string> providers;  // every distribution claiming `triton`
};

// A copy of a module that an earlier path entry hides from `import`.
struct ShadowedModule {
  std::string module;
  std::filesystem::path path;  // the hidden copy
  std::filesystem::path by;    // the one imported
};

// Everything we learn about an env without running any of its code.
struct StaticFacts {
  SearchPath search_path;
  std::vector<std::filesystem::path> site_packages;  // the site dirs of search_path, in order
  std::vector<Distribution> distributions;           // pip's and conda's, in path order
  std::vector<std::string> modules;  // importable top-level names along the path, sorted
  // Where `import NAME` finds each of them: as found along the path, and
  // with symlinks resolved (to compare with what the interpreter reports).
  std::map<std::string, std::filesystem::path> module_locations;
  std::map<std::string, std::filesystem::path> module_paths;
  std::vector<ShadowedModule> shadowed;
  TorchFacts torch;
  TritonFacts triton;
};

// The env's own site-packages directories (lib/pythonX.Y/site-packages), the
// interpreter's version first.
std::vector<std::filesystem::path> find_site_packages(const PythonEnv& env);

// Reads the facts of `env` from its files, along the search path its
// interpreter has under `environment` (the activated one: PYTHONPATH, HOME).
// Never runs env code; a missing or malformed file becomes a recorded
// problem, not an exception.
StaticFacts gather_static_facts(const PythonEnv& env, const Environment& environment);
// The same under the env's bare environment (no activation).
StaticFacts gather_static_facts(const PythonEnv& env);

Json to_json(const StaticFacts& facts);

}  // namespace envcontract::probes
