#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "discovery/python_env.hpp"
#include "facts/static_facts.hpp"
#include "probes/fact_names.hpp"
#include "process/process_runner.hpp"

// The module search path of an env as its interpreter builds it (CPython's
// getpath and site.py, Debian's patched site.py included), found by reading
// files only. Static facts look for packages along it, in its order, so that
// they see what `import` sees: a venv's system site packages, Debian's
// dist-packages, the user site, .pth files and editable installs.
namespace envcontract::probes {

using facts::to_json;

using facts::SearchPathEntry;

using facts::EditableModule;

using facts::SearchPath;

// The directories `import` searches for the env's packages, in order:
// PYTHONPATH from `environment` (the activated one), the venv's own site
// dirs, the user site (HOME or PYTHONUSERBASE from `environment`) when site.py
// enables it, the base installation's site dirs (for a venv only with
// include-system-site-packages = true), each site dir followed by the
// directories its .pth files add. Only existing directories are listed, as
// site.py does. Reads files with the limits of process/small_files.hpp.
SearchPath compute_search_path(const PythonEnv& env, const facts::Environment& environment);

// The string-to-string dict literal assigned to `name` in Python source,
// such as setuptools' `MAPPING: dict[str, str] = {'pkg': '/src/pkg'}`; empty
// when there is none. Never runs the code.
std::map<std::string, std::string> parse_string_dict(const std::string& source,
                                                     const std::string& name);

// The same for a dict whose values are lists of strings, such as setuptools'
// `NAMESPACES: dict[str, list[str]] = {'ns': ['/src/ns']}`.
std::map<std::string, std::vector<std::string>> parse_string_lists_dict(const std::string& source,
                                                                        const std::string& name);

}  // namespace envcontract::probes
