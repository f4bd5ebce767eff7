#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "probes/process_runner.hpp"
#include "probes/python_env.hpp"

// The module search path of an env as its interpreter builds it (CPython's
// getpath and site.py, Debian's patched site.py included), found by reading
// files only. Static facts look for packages along it, in its order, so that
// they see what `import` sees: a venv's system site packages, Debian's
// dist-packages, the user site, .pth files and editable installs.
namespace envcontract::probes {

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

// The directories `import` searches for the env's packages, in order:
// PYTHONPATH from `environment` (the activated one), the venv's own site
// dirs, the user site (HOME or PYTHONUSERBASE from `environment`) when site.py
// enables it, the base installation's site dirs (for a venv only with
// include-system-site-packages = true), each site dir followed by the
// directories its .pth files add. Only existing directories are listed, as
// site.py does. Reads files with the limits of small_files.hpp.
SearchPath compute_search_path(const PythonEnv& env, const Environment& environment);

// The string-to-string dict literal assigned to `name` in Python source,
// such as setuptools' `MAPPING: dict[str, str] = {'pkg': '/src/pkg'}`; empty
// when there is none. Never runs the code.
std::map<std::string, std::string> parse_string_dict(const std::string& source,
                                                     const std::string& name);

// The same for a dict whose values are lists of strings, such as setuptools'
// `NAMESPACES: dict[str, list[str]] = {'ns': ['/src/ns']}`.
std::map<std::string, std::vector<std::string>> parse_string_lists_dict(const std::string& source,
                                                                        const std::string& name);

Json to_json(const SearchPath& path);

}  // namespace envcontract::probes
