#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "probes/python_env.hpp"

namespace envcontract::probes {

// One installed distribution, as its metadata on disk describes it.
struct Distribution {
  std::string name;        // as written in its metadata
  std::string normalized;  // PEP 503: lower case, "-" separated
  std::string version;
  std::string installer;               // pip, conda, uv, ... ("" when unknown)
  std::string source;                  // dist-info, egg-info or conda-meta
  std::filesystem::path metadata;      // the file or dir the facts come from
  std::vector<std::string> top_level;  // importable top-level names it provides
  std::vector<std::string> files;      // RECORD entries (dist-info only), relative to site
};

// Distributions installed into `site_packages` (dist-info and egg-info).
std::vector<Distribution> scan_site_packages_distributions(
    const std::filesystem::path& site_packages);

// Conda packages recorded in `prefix`/conda-meta/*.json.
std::vector<Distribution> scan_conda_packages(const std::filesystem::path& prefix);

Json to_json(const Distribution& distribution);

}  // namespace envcontract::probes
