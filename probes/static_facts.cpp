#include "probes/static_facts.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "common/python_names.hpp"
#include "discovery/interpreter_links.hpp"
#include "probes/activation.hpp"
#include "process/small_files.hpp"
#include "process/stall_guard.hpp"
#include "process/system_root.hpp"

namespace envcontract::probes {
namespace fs = std::filesystem;

namespace {

// One importable top-level name found on the path.
struct Found {
  fs::path path;
  int rank = 0;  // within a directory: 0 package, 1 extension, 2 source, 3 bytecode, 4 namespace
  bool link = false;  // the entry itself is a symbolic link
  bool regular() const { return rank < 4; }
};

// A directory entry never lists more than this many children here: a
// directory of a million files on the path is hostile, not a layout.
constexpr std::size_t k_max_children = 100000;

// What FileFinder makes of `child` of a path entry for an interpreter whose
// extension modules end in `.cpython-XY-*.so` (`tag` "cpython-XY"),
// `.abi3.so` or `.so`: nullopt when it is not importable there (an
// extension built for another Python). `directory`: whether the child is
// one (a link to one included), as its directory entry says.
std::optional<std::pair<std::string, Found>> classify(const fs::path& entry,
                                                      const std::string& child,
                                                      const std::string& tag, bool directory) {
  const fs::path path = entry / child;
  if (directory) {
    if (!process::is_python_identifier(child)) {
      return std::nullopt;
    }
    const bool package = process::path_exists(path / "__init__.py") ||
                         process::path_exists(path / "__init__.pyc") ||
                         process::path_exists(path / "__init__.abi3.so") ||
                         process::path_exists(path / "__init__.so");
    return std::pair{child, Found{path, package ? 0 : 4}};
  }
  const auto dot = child.find('.');
  const std::string name = child.substr(0, dot);
  if (dot == std::string::npos || !process::is_python_identifier(name)) {
    return std::nullopt;
  }
  const std::string suffix = child.substr(dot);
  int rank = -1;
  if (suffix == ".py") {
    rank = 2;
  } else if (suffix == ".pyc") {
    rank = 3;
  } else if (suffix == ".abi3.so" || suffix == ".so" ||
             (suffix.starts_with("." + tag + "-") && suffix.ends_with(".so"))) {
    rank = 1;
  }
  return rank < 0 ? std::nullopt : std::optional(std::pair{name, Found{path, rank}});
}

// Where `import NAME` finds each top-level name: the standard library
// first (after PYTHONPATH, as in sys.path), then along the path the first
// package or module, else the first namespace portion (PathFinder's rule),
// else an editable install's import hook. Later regular copies are
// shadowed: present on disk, never imported.
void index_modules(StaticFacts& facts, const std::string& python_version, const fs::path& root) {
  const auto first_dot = python_version.find('.');
  const auto second_dot = python_version.find('.', first_dot + 1);
  const std::string tag =
      first_dot == std::string::npos
          ? std::string("cpython-")
          : "cpython-" + python_version.substr(0, first_dot) +
                python_version.substr(first_dot + 1, second_dot == std::string::npos
                                                         ? std::string::npos
                                                         : second_dot - first_dot - 1) +
                (facts.search_path.free_threaded ? "t" : "");
  std::vector<fs::path> order;
  bool stdlib_added = facts.search_path.stdlib.empty();
  for (const auto& entry : facts.search_path.entries) {
    if (!stdlib_added && entry.origin != "PYTHONPATH") {
      order.push_back(facts.search_path.stdlib);
      order.push_back(facts.search_path.stdlib / "lib-dynload");
      stdlib_added = true;
    }
    order.push_back(entry.path);
  }
  if (!stdlib_added) {
    order.push_back(facts.search_path.stdlib);
    order.push_back(facts.search_path.stdlib / "lib-dynload");
  }
  std::map<std::string, Found> index;
  for (const auto& entry : order) {
    std::map<std::string, Found> here;
    std::error_code error;
    // The entry's type as readdir gave it: no stat per child, except to
    // follow a link (or where the file system does not say).
    for (const process::ListedEntry& child :
         process::list_directory(entry, error, k_max_children)) {
      auto found = classify(entry, child.path.filename().string(), tag, child.is_directory);
      if (!found) {
        continue;
      }
      found->second.link = child.is_link;
      auto [at, inserted] = here.emplace(found->first, found->second);
      if (!inserted && found->second.rank < at->second.rank) {
        at->second = found->second;
      }
    }
    for (const auto& [name, found] : here) {
      auto it = index.find(name);
      if (it == index.end() || (!it->second.regular() && found.regular())) {
        index[name] = found;
      } else if (found.regular()) {
        facts.shadowed.push_back({name, found.path, it->second.path});
      }
    }
  }
  for (const auto& editable : facts.search_path.editable) {
    index.emplace(editable.module, Found{editable.path, 0, true});
  }
  // Each path entry is resolved once, not once per module in it (realpath
  // reads every component's link: the standard library alone holds hundreds
  // of modules); a module that is itself a link is resolved on its own.
  std::map<fs::path, fs::path> canonical_entries;
  const auto canonical_of = [&](const Found& found) {
    std::error_code error;
    if (found.link) {
      const auto canonical = process::canonical_in(root, found.path, error);
      return error ? found.path : canonical;
    }
    const auto entry = found.path.parent_path();
    auto [at, inserted] = canonical_entries.try_emplace(entry);
    if (inserted) {
      const auto canonical = process::canonical_in(root, entry, error);
      at->second = error ? entry : canonical;
    }
    return at->second / found.path.filename();
  };
  for (const auto& [name, found] : index) {
    facts.module_files.add(name, found.path.string(), canonical_of(found).string());
  }
  facts.module_files.finish();
}

// The distributions that describe the copy of a package at `package`: the
// ones whose metadata sits beside it, else (an editable install keeps its
// dist-info in site-packages, its code elsewhere) every one, in path order.
std::vector<const Distribution*> describing(const std::vector<Distribution>& distributions,
                                            const fs::path& package) {
  std::vector<const Distribution*> beside;
  std::vector<const Distribution*> all;
  for (const auto& distribution : distributions) {
    if (distribution.source == "conda-meta") {
      continue;
    }
    all.push_back(&distribution);
    if (distribution.metadata.parent_path() == package.parent_path()) {
      beside.push_back(&distribution);
    }
  }
  return beside.empty() ? all : beside;
}

// The package `name` as the interpreter imports it, when it is a directory.
std::optional<fs::path> find_package(const StaticFacts& facts, const std::string& name) {
  const auto found = facts.module_files.find(name);
  if (!found || !process::dir_exists(found->location)) {
    return std::nullopt;
  }
  return fs::path(found->location);
}

TorchFacts torch_facts(const StaticFacts& facts) {
  const auto& distributions = facts.distributions;
  TorchFacts torch;
  const auto location = find_package(facts, "torch");
  if (!location) {
    return torch;
  }
  torch.present = true;
  torch.location = *location;
  const auto source =
      process::read_env_file(torch.location / "version.py", process::file_limits::python_source);
  if (!source) {
    torch.problem = "cannot read " + (torch.location / "version.py").string();
  } else {
    const auto values = process::parse_python_assignments(*source);
    if (const auto it = values.find("__version__"); it != values.end() && it->second) {
      torch.version = *it->second;
    } else {
      torch.problem = "torch/version.py has no literal __version__";
    }
    if (const auto it = values.find("cuda"); it != values.end()) {
      torch.cuda = it->second;
    }
    if (const auto it = values.find("hip"); it != values.end()) {
      torch.hip = it->second;
    }
  }
  const auto plus = torch.version.find('+');
  torch.base = torch.version.substr(0, plus);
  torch.local = plus == std::string::npos ? "" : torch.version.substr(plus + 1);
  // The first in path order: a shadowed copy's dist-info says nothing of the torch imported.
  for (const auto* distribution : describing(distributions, torch.location)) {
    if (distribution->normalized == "torch") {
      torch.distribution_version = distribution->version;
      break;
    }
  }
  std::error_code error;
  torch.libraries = process::list_names(torch.location / "lib", error);
  std::sort(torch.libraries.begin(), torch.libraries.end());
  return torch;
}

TritonFacts triton_facts(const StaticFacts& facts) {
  const auto& distributions = facts.distributions;
  TritonFacts triton;
  const auto location = find_package(facts, "triton");
  triton.present = location.has_value();
  triton.location = location.value_or(fs::path());
  for (const auto& distribution : distributions) {
    if (distribution.source != "conda-meta" &&
        std::find(distribution.top_level.begin(), distribution.top_level.end(), "triton") !=
            distribution.top_level.end()) {
      triton.providers.push_back(distribution.normalized);
    }
  }
  if (!triton.present) {
    return triton;
  }
  // The provider is the distribution whose RECORD owns triton/__init__.py:
  // when stock triton and FlagTree were both installed, the last one wins the
  // file, and RECORD says which.
  // Only distributions beside the imported copy count: a stock triton in a
  // shadowed site dir does not provide the triton imported.
  const auto candidates = describing(distributions, triton.location);
  for (const auto* distribution : candidates) {
    if (std::find(distribution->packages.begin(), distribution->packages.end(), "triton") !=
        distribution->packages.end()) {
      triton.provider = distribution->normalized;
      triton.provider_version = distribution->version;
    }
  }
  if (triton.provider.empty()) {
    for (const auto* distribution : candidates) {
      if (std::find(distribution->top_level.begin(), distribution->top_level.end(), "triton") !=
          distribution->top_level.end()) {
        triton.provider = distribution->normalized;
        triton.provider_version = distribution->version;
        break;
      }
    }
  }
  if (const auto source = process::read_env_file(triton.location / "__init__.py",
                                                 process::file_limits::python_source)) {
    const auto values = process::parse_python_assignments(*source);
    if (const auto it = values.find("__version__"); it != values.end()) {
      triton.version = it->second;
    }
  }
  std::error_code error;
  for (const process::ListedEntry& backend :
       process::list_directory(triton.location / "backends", error)) {
    if (backend.is_directory && backend.path.filename() != "__pycache__") {
      triton.backends.push_back(backend.path.filename().string());
    }
  }
  std::sort(triton.backends.begin(), triton.backends.end());
  return triton;
}

}  // namespace

namespace {

// "cpython-311" (the tag of extension modules) for "3.11".
std::string extension_tag(const std::string& major_minor) {
  std::string digits = major_minor;
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  return "cpython-" + digits;
}

// The prefix's lib/pythonX.Y/site-packages for every X.Y but its
// interpreter's: what an upgrade that stopped half-way installed for a
// Python the env does not run.
std::vector<ForeignSite> other_python_sites(const PythonEnv& env, const StaticFacts& facts) {
  std::vector<ForeignSite> sites;
  const std::string own = common::python_major_minor(env.python_version);
  if (own.empty()) {
    return sites;
  }
  for (const auto& site : discovery::find_site_packages(env)) {
    // Only lib/pythonX.Y (or X.Yt): not lib/python3 (every Python 3's, as
    // Debian's is), not a lib/python3.10.bak left aside.
    const std::string dir_name = site.parent_path().filename().string();
    const std::string version = discovery::python_version_in_name(dir_name);
    const std::string python =
        version.empty() || !dir_name.ends_with('t') ? version : version + "t";
    const bool read = std::find(facts.site_packages.begin(), facts.site_packages.end(), site) !=
                      facts.site_packages.end();
    if (python.empty() || python == own || python == own + "t" || read) {
      continue;
    }
    ForeignSite foreign{site, python, {}, scan_site_packages_distributions(site)};
    std::error_code error;
    for (const process::ListedEntry& child : process::list_directory(site, error, k_max_children)) {
      if (auto found = classify(site, child.path.filename().string(), extension_tag(python),
                                child.is_directory)) {
        foreign.modules.push_back(found->first);
      }
    }
    std::sort(foreign.modules.begin(), foreign.modules.end());
    foreign.modules.erase(std::unique(foreign.modules.begin(), foreign.modules.end()),
                          foreign.modules.end());
    sites.push_back(std::move(foreign));
  }
  return sites;
}

}  // namespace

StaticFacts gather_static_facts(const PythonEnv& env, const facts::Environment& environment) {
  StaticFacts facts;
  facts.search_path = compute_search_path(env, environment);
  facts.site_packages = facts.search_path.site_dirs();
  // importlib.metadata looks in every path entry, in path order: the first
  // distribution of a name is the one that counts.
  for (const auto& entry : facts.search_path.entries) {
    auto found = scan_site_packages_distributions(entry.path);
    facts.distributions.insert(facts.distributions.end(), found.begin(), found.end());
  }
  if (env.kind == EnvKind::conda) {
    auto packages = scan_conda_packages(env.prefix);
    facts.distributions.insert(facts.distributions.end(), packages.begin(), packages.end());
  }
  index_modules(facts, env.python_version, env.system_root);
  facts.torch = torch_facts(facts);
  facts.triton = triton_facts(facts);
  facts.other_python_sites = other_python_sites(env, facts);
  return facts;
}

StaticFacts gather_static_facts(const PythonEnv& env) {
  return gather_static_facts(env, bare_environment(env));
}

}  // namespace envcontract::probes
