#include "probes/static_facts.hpp"

#include <algorithm>

#include "probes/small_files.hpp"

namespace envcontract::probes {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> list_modules(const std::vector<fs::path>& sites) {
  std::vector<std::string> modules;
  for (const auto& site : sites) {
    std::error_code error;
    for (fs::directory_iterator it(site, error), end; !error && it != end; it.increment(error)) {
      const std::string name = it->path().filename().string();
      std::string module;
      if (dir_exists(it->path())) {
        module = name;  // packages, namespace packages included
      } else if (name.ends_with(".py")) {
        module = name.substr(0, name.size() - 3);
      } else if (name.ends_with(".so")) {
        module = name.substr(0, name.find('.'));  // torch_C.cpython-310-x86_64-linux-gnu.so
      }
      if (is_python_identifier(module) && module != "__pycache__" &&
          std::find(modules.begin(), modules.end(), module) == modules.end()) {
        modules.push_back(module);
      }
    }
  }
  std::sort(modules.begin(), modules.end());
  return modules;
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

// The first site-packages holding package `name`, as Python's path order finds it.
std::optional<fs::path> find_package(const std::vector<fs::path>& sites, const std::string& name) {
  for (const auto& site : sites) {
    if (dir_exists(site / name)) {
      return site / name;
    }
  }
  return std::nullopt;
}

TorchFacts torch_facts(const std::vector<fs::path>& sites,
                       const std::vector<Distribution>& distributions) {
  TorchFacts torch;
  const auto location = find_package(sites, "torch");
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

TritonFacts triton_facts(const std::vector<fs::path>& sites,
                         const std::vector<Distribution>& distributions) {
  TritonFacts triton;
  const auto location = find_package(sites, "triton");
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

StaticFacts gather_static_facts(const PythonEnv& env) {
  StaticFacts facts;
  facts.site_packages = find_site_packages(env);
  for (const auto& site : facts.site_packages) {
    auto found = scan_site_packages_distributions(site);
    facts.distributions.insert(facts.distributions.end(), found.begin(), found.end());
  }
  if (env.kind == EnvKind::conda) {
    auto packages = scan_conda_packages(env.prefix);
    facts.distributions.insert(facts.distributions.end(), packages.begin(), packages.end());
  }
  facts.modules = list_modules(facts.site_packages);
  facts.torch = torch_facts(facts.site_packages, facts.distributions);
  facts.triton = triton_facts(facts.site_packages, facts.distributions);
  return facts;
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
  auto distributions = Json::array();
  for (const auto& distribution : facts.distributions) {
    distributions.push_back(to_json(distribution));
  }
  json["distributions"] = distributions;
  return json;
}

}  // namespace envcontract::probes
