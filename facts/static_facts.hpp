#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "facts/module_files.hpp"

// What an env's files say without running any of its code: the search path
// its interpreter builds, the distributions along it, torch and triton
// (docs/probes.md, "Static facts").
namespace envcontract::facts {

using Json = nlohmann::ordered_json;

// One installed distribution, as its metadata on disk describes it.
struct Distribution {
  std::string name;        // as written in its metadata
  std::string normalized;  // PEP 503: lower case, "-" separated
  std::string version;
  std::string installer;               // pip, conda, uv, ... ("" when unknown)
  std::string source;                  // dist-info, egg-info or conda-meta
  std::filesystem::path metadata;      // the file or dir the facts come from
  std::vector<std::string> top_level;  // importable top-level names it provides
  // Packages whose __init__.py its RECORD lists (dist-info only): when two
  // distributions install one package, the last installed owns the file.
  std::vector<std::string> packages;
};

// One directory of sys.path beyond the standard library.
struct SearchPathEntry {
  std::filesystem::path path;
  std::string origin;     // why it is there: "PYTHONPATH", "site-packages", "user site", ...
  bool site_dir = false;  // a site dir (its .pth files are read); `{site}` in a contract
};

// A module an editable install maps to a source directory through an import
// hook (setuptools' __editable___*_finder.py), not through sys.path.
struct EditableModule {
  std::string module;
  std::filesystem::path path;
  std::filesystem::path finder;  // the file that says so
};

struct SearchPath {
  std::vector<SearchPathEntry> entries;  // in sys.path order
  std::vector<EditableModule> editable;
  std::filesystem::path base_prefix;  // the interpreter installation (the env itself unless a venv)
  std::filesystem::path stdlib;       // its lib/pythonX.Y, symlinks resolved; "" when unknown
  bool debian_layout = false;         // the base's site.py uses dist-packages (Debian, Ubuntu)
  bool user_site = false;             // the user site is enabled (whether or not it exists)
  bool free_threaded = false;         // a pythonX.Yt build: lib/pythonX.Yt, cpython-XYt extensions
  std::vector<std::string> notes;     // what reading files cannot follow (code in .pth files)
  // Where `import` may also load from that is not an entry: PYTHONPATH
  // entries that are files (.zip) or do not exist yet (whoever can create
  // them decides what loads), relative ones as the probe's working directory
  // (the prefix) makes them, .pth lines naming missing directories, and
  // PYTHONHOME with its standard library. Only their safety is judged.
  std::vector<std::filesystem::path> unlisted;
  // Why the entries may be incomplete (a bound was reached), or "": what was
  // not read could load code, so the env's code is not run.
  std::string incomplete;

  std::vector<std::filesystem::path> site_dirs() const;
  // Every directory `import` may load code from beyond the env's prefix as
  // well as inside it: the entries, the standard library with lib-dynload,
  // and where editable installs map modules to (a source directory, or a
  // file for a single-module project).
  std::vector<std::filesystem::path> import_dirs() const;
};

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

// A site dir of the env's own prefix made for another Python than its
// interpreter's (lib/python3.11/site-packages beside a python3.10, after an
// upgrade that stopped half-way): the interpreter never reads it.
struct ForeignSite {
  std::filesystem::path path;
  std::string python;                // "3.11"
  std::vector<std::string> modules;  // importable top-level names, sorted
  std::vector<Distribution> distributions;
};

// Everything we learn about an env without running any of its code.
struct StaticFacts {
  SearchPath search_path;
  std::vector<std::filesystem::path> site_packages;  // the site dirs of search_path, in order
  std::vector<Distribution> distributions;           // pip's and conda's, in path order
  // The importable top-level names along the path, and where `import NAME`
  // finds each of them.
  ModuleFiles module_files;
  std::vector<ShadowedModule> shadowed;
  TorchFacts torch;
  TritonFacts triton;
  std::vector<ForeignSite> other_python_sites;
};

Json to_json(const Distribution& distribution);
Json to_json(const SearchPath& path);
Json to_json(const TorchFacts& torch);
Json to_json(const TritonFacts& triton);
Json to_json(const StaticFacts& facts);

}  // namespace envcontract::facts
