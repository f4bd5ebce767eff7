#include "probes/static_facts.hpp"

#include <algorithm>

#include <map>
#include <set>

#include "probes/activation.hpp"
#include "probes/small_files.hpp"

namespace envcontract::probes {
namespace fs = std::filesystem;

namespace {

// One importable top-level name found on the path.
struct Found {
  fs::path path;
  bool regular = false;  // a package with __init__.py or a module file; else a namespace portion
};

// What FileFinder finds for `name` in one directory: a package, an
// extension module, a source module, or a namespace portion, in that order.
std::optional<Found> find_in_entry(const fs::path& entry, const std::string& child) {
  const fs::path path = entry / child;
  if (dir_exists(path)) {
    if (!is_python_identifier(child) || child == "__pycache__") {
      return std::nullopt;
    }
    return Found{path, path_exists(path / "__init__.py")};
  }
  std::string module;
  if (child.ends_with(".py")) {
    module = child.substr(0, child.size() - 3);
  } else if (child.ends_with(".so")) {
    module = child.substr(0, child.find('.'));  // torch_C.cpython-310-x86_64-linux-gnu.so
  }
  if (!is_python_identifier(module)) {
    return std::nullopt;
  }
  return Found{path, true};
}

std::string module_name(const std::string& child) {
  return child.substr(0, child.find('.'));
}

// Where `import NAME` finds each top-level name: the first regular package
// or module along the path, else the first namespace portion (PathFinder's
// rule), else an editable install's import hook. Later regular copies are
// shadowed: present on disk, never imported.
void index_modules(StaticFacts& facts) {
  std::map<std::string, Found> index;
  for (const auto& entry : facts.search_path.entries) {
    std::vector<std::string> children;
    std::error_code error;
    for (fs::directory_iterator it(entry.path, error), end; !error && it != end;
         it.increment(error)) {
      children.push_back(it->path().filename().string());
    }
    // Within one directory the package wins over a module file of its name,
    // an extension over a source file.
    std::sort(children.begin(), children.end(), [&](const auto& a, const auto& b) {
      const auto rank = [&](const std::string& child) {
        return child.ends_with(".py") ? 2 : child.ends_with(".so") ? 1 : 0;
      };
      return std::pair(module_name(a), rank(a)) < std::pair(module_name(b), rank(b));
    });
    std::set<std::string> seen_here;
    for (const auto& child : children) {
      const auto found = find_in_entry(entry.path, child);
      const std::string name = module_name(child);
      if (!found || !seen_here.insert(name).second) {
        continue;
      }
      auto it = index.find(name);
      if (it == index.end() || (!it->second.regular && found->regular)) {
        index[name] = *found;
      } else if (found->regular) {
        facts.shadowed.push_back({name, found->path, it->second.path});
      }
    }
  }
  for (const auto& editable : facts.search_path.editable) {
    index.emplace(editable.module, Found{editable.path, true});
  }
  for (const auto& [name, found] : index) {
    facts.modules.push_back(name);
    std::error_code error;
    const auto canonical = fs::weakly_canonical(found.path, error);
    facts.module_paths[name] = error ? found.path : canonical;
    facts.module_locations[name] = found.path;
  }
}

const Distribution* providing(const std::vector<Distribution>& distributions,
                              const std::string& module) {
  for (const auto& distribution : distributions) {
    if (std::find(distribution.top_level.begin(), distribution.top_level.end(), module) !=
        distribution.top_level.end()) {
      return &distribution;
    }
  }
  return nullptr;
}

// The package `name` as the interpreter imports it, when it is a directory.
std::optional<fs::path> find_package(const StaticFacts& facts, const std::string& name) {
  const auto it = facts.module_locations.find(name);
  if (it == facts.module_locations.end() || !dir_exists(it->second)) {
    return std::nullopt;
  }
  return it->second;
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
  const auto source = read_env_file(torch.location / "version.py", file_limits::python_source);
  if (!source) {
    torch.problem = "cannot read " + (torch.location / "version.py").string();
  } else {
    const auto values = parse_python_assignments(*source);
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
  for (const auto& distribution : distributions) {
    if (distribution.normalized == "torch" && distribution.source != "conda-meta") {
      torch.distribution_version = distribution.version;
    }
  }
  std::error_code error;
  for (fs::directory_iterator it(torch.location / "lib", error), end; !error && it != end;
       it.increment(error)) {
    torch.libraries.push_back(it->path().filename().string());
  }
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
  for (const auto& distribution : distributions) {
    if (std::find(distribution.files.begin(), distribution.files.end(), "triton/__init__.py") !=
        distribution.files.end()) {
      triton.provider = distribution.normalized;
      triton.provider_version = distribution.version;
    }
  }
  if (triton.provider.empty()) {
    if (const auto* distribution = providing(distributions, "triton")) {
      triton.provider = distribution->normalized;
      triton.provider_version = distribution->version;
    }
  }
  if (const auto source =
          read_env_file(triton.location / "__init__.py", file_limits::python_source)) {
    const auto values = parse_python_assignments(*source);
    if (const auto it = values.find("__version__"); it != values.end()) {
      triton.version = it->second;
    }
  }
  std::error_code error;
  for (fs::directory_iterator it(triton.location / "backends", error), end; !error && it != end;
       it.increment(error)) {
    if (dir_exists(it->path()) && it->path().filename() != "__pycache__") {
      triton.backends.push_back(it->path().filename().string());
    }
  }
  std::sort(triton.backends.begin(), triton.backends.end());
  return triton;
}

Json optional_json(const std::optional<std::string>& value) {
  return value ? Json(*value) : Json(nullptr);
}

}  // namespace

std::vector<fs::path> find_site_packages(const PythonEnv& env) {
  std::vector<fs::path> found;
  std::error_code error;
  for (fs::directory_iterator it(env.prefix / "lib", error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with("python") && dir_exists(it->path() / "site-packages")) {
      found.push_back(it->path() / "site-packages");
    }
  }
  // A prefix may carry several lib/pythonX.Y; the interpreter's own comes first.
  const std::string own = "python" + env.python_version.substr(0, env.python_version.rfind('.'));
  std::stable_partition(found.begin(), found.end(), [&](const fs::path& path) {
    return path.parent_path().filename() == own ||
           path.parent_path().filename() == "python" + env.python_version;
  });
  return found;
}

StaticFacts gather_static_facts(const PythonEnv& env, const Environment& environment) {
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
  index_modules(facts);
  facts.torch = torch_facts(facts);
  facts.triton = triton_facts(facts);
  return facts;
}

StaticFacts gather_static_facts(const PythonEnv& env) {
  return gather_static_facts(env, bare_environment(env));
}

Json to_json(const StaticFacts& facts) {
  Json json;
  auto sites = Json::array();
  for (const auto& site : facts.site_packages) {
    sites.push_back(site.string());
  }
  json["site_packages"] = sites;
  Json torch = nullptr;
  if (facts.torch.present) {
    torch = {{"location", facts.torch.location.string()},
             {"version", facts.torch.version},
             {"base", facts.torch.base},
             {"local", facts.torch.local},
             {"cuda", optional_json(facts.torch.cuda)},
             {"hip", optional_json(facts.torch.hip)},
             {"distribution_version", facts.torch.distribution_version},
             {"libraries", facts.torch.libraries},
             {"problem", facts.torch.problem}};
  }
  json["torch"] = torch;
  Json triton = nullptr;
  if (facts.triton.present) {
    triton = {{"location", facts.triton.location.string()},
              {"provider", facts.triton.provider},
              {"provider_version", facts.triton.provider_version},
              {"version", optional_json(facts.triton.version)},
              {"backends", facts.triton.backends},
              {"providers", facts.triton.providers}};
  }
  json["triton"] = triton;
  json["modules"] = facts.modules;
  json["search_path"] = to_json(facts.search_path);
  Json paths = Json::object();
  for (const auto& [name, path] : facts.module_paths) {
    paths[name] = path.string();
  }
  json["module_paths"] = paths;
  auto shadowed = Json::array();
  for (const auto& module : facts.shadowed) {
    shadowed.push_back(
        {{"module", module.module}, {"path", module.path.string()}, {"by", module.by.string()}});
  }
  json["shadowed"] = shadowed;
  auto distributions = Json::array();
  for (const auto& distribution : facts.distributions) {
    distributions.push_back(to_json(distribution));
  }
  json["distributions"] = distributions;
  return json;
}

}  // namespace envcontract::probes
