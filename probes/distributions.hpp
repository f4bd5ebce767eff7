#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "discovery/python_env.hpp"
#include "facts/static_facts.hpp"
#include "probes/fact_names.hpp"

namespace envcontract::probes {

using facts::to_json;

using facts::Distribution;

// Distributions installed into `site_packages` (dist-info and egg-info).
std::vector<Distribution> scan_site_packages_distributions(
    const std::filesystem::path& site_packages);

// Conda packages recorded in `prefix`/conda-meta/*.json.
std::vector<Distribution> scan_conda_packages(const std::filesystem::path& prefix);

}  // namespace envcontract::probes
