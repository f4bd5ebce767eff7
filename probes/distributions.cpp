#include "probes/distributions.hpp"

#include <algorithm>
#include <sstream>
#include <unordered_map>

#include "common/json_from_outside.hpp"
#include "common/python_names.hpp"
#include "process/small_files.hpp"

namespace envcontract::probes {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines_of(const std::optional<std::string>& text) {
  std::vector<std::string> lines;
  if (!text) {
    return lines;
  }
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    line = process::trim(line);
    if (!line.empty()) {
      lines.push_back(line);
    }
  }
  return lines;
}

// The first field of a RECORD line (CSV: path,hash,size; a path with a
// comma is quoted).
std::string_view record_path(std::string_view line) {
  if (line.starts_with('"')) {
    const auto close = line.find('"', 1);
    return line.substr(1, close == std::string_view::npos ? std::string_view::npos : close - 1);
  }
  return line.substr(0, line.find(','));
}

// What the facts take from a RECORD: the top-level names it installs (used
// when top_level.txt is missing, common for wheels built by modern
// backends) and the packages whose __init__.py it lists. The list itself is
// not kept: a real env's RECORDs are tens of thousands of lines, MBs held
// for as long as its facts are.
struct RecordSummary {
  std::vector<std::string> top_level;
  std::vector<std::string> packages;
};

// Real distributions install a handful of top-level names (the most on a
// full ML host: a few dozen). A RECORD that lists more than this is kept to
// its first names, so that one env's made-up RECORD cannot hold the agent's
// memory for as long as its facts are kept.
constexpr std::size_t k_most_record_names = 1024;

RecordSummary summarize_record(const std::optional<std::string>& text) {
  RecordSummary summary;
  if (!text) {
    return summary;
  }
  // A RECORD holds up to a million lines: each name looked up in a set,
  // not in the list (which a hostile one made quadratic). The value says
  // whether the name is already among the packages.
  std::unordered_map<std::string, bool> seen;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    line = process::trim(line);
    const std::string_view file = record_path(line);
    if (file.empty()) {
      continue;
    }
    const auto slash = file.find('/');
    std::string first(file.substr(0, slash));
    // An absolute path (a file installed outside site-packages) names no
    // top-level module: its text before the first "/" is empty.
    if (first.empty() || first.ends_with(".dist-info") || first.ends_with(".data") ||
        first.starts_with("..") || first == "__pycache__") {
      continue;
    }
    const bool package_init =
        slash != std::string_view::npos && file.substr(slash) == "/__init__.py";
    if (slash == std::string_view::npos) {
      if (!first.ends_with(".py") && !first.ends_with(".so")) {
        continue;
      }
      first = first.substr(0, first.find('.'));
    }
    if (seen.size() >= k_most_record_names && !seen.contains(first)) {
      continue;
    }
    auto [at, inserted] = seen.try_emplace(first, false);
    if (package_init && !at->second) {
      at->second = true;
      summary.packages.push_back(first);
    }
    if (inserted) {
      summary.top_level.push_back(std::move(first));
    }
  }
  return summary;
}

}  // namespace

std::vector<Distribution> scan_site_packages_distributions(const fs::path& site_packages) {
  std::vector<Distribution> distributions;
  std::error_code error;
  for (const process::ListedEntry& entry : process::list_directory(site_packages, error)) {
    const fs::path& path = entry.path;
    const std::string name = path.filename().string();
    Distribution distribution;
    std::optional<std::string> metadata;
    RecordSummary record;
    if (name.ends_with(".dist-info")) {
      distribution.source = "dist-info";
      metadata = process::read_env_file(path / "METADATA", process::file_limits::metadata);
      distribution.installer =
          process::trim(process::read_env_file(path / "INSTALLER", process::file_limits::small_text)
                            .value_or(""));
      record =
          summarize_record(process::read_env_file(path / "RECORD", process::file_limits::record));
      distribution.packages = std::move(record.packages);
    } else if (name.ends_with(".egg-info")) {
      distribution.source = "egg-info";
      // A link that loops or leads where its reader may not go is read as
      // a file, and that read fails: never an exception that costs the
      // env every other distribution.
      metadata = entry.is_directory
                     ? process::read_env_file(path / "PKG-INFO", process::file_limits::metadata)
                     : process::read_env_file(path, process::file_limits::metadata);
    } else {
      continue;
    }
    distribution.metadata = path;
    const auto headers = process::parse_headers(metadata.value_or(""));
    if (const auto found = headers.find("Name"); found != headers.end()) {
      distribution.name = found->second;
    }
    if (const auto found = headers.find("Version"); found != headers.end()) {
      distribution.version = found->second;
    }
    if (distribution.name.empty()) {
      // Unreadable metadata: the directory name still says name-version.
      // setuptools names an egg NAME-VERSION[-pyX.Y[-PLATFORM]]: the
      // version ends at the next dash (names and versions in it are escaped
      // with "_" for "-").
      const std::string stem = path.stem().string();
      const auto dash = stem.find('-');
      distribution.name = stem.substr(0, dash);
      distribution.version = dash == std::string::npos
                                 ? ""
                                 : stem.substr(dash + 1, stem.find('-', dash + 1) - dash - 1);
    }
    distribution.normalized = common::normalize_distribution_name(distribution.name);
    distribution.top_level =
        lines_of(process::read_env_file(path / "top_level.txt", process::file_limits::small_text));
    if (distribution.top_level.empty()) {
      distribution.top_level = std::move(record.top_level);
    }
    distributions.push_back(std::move(distribution));
  }
  std::sort(distributions.begin(), distributions.end(),
            [](const auto& a, const auto& b) { return a.normalized < b.normalized; });
  return distributions;
}

std::vector<Distribution> scan_conda_packages(const fs::path& prefix) {
  std::vector<Distribution> packages;
  std::error_code error;
  for (const std::string& name : process::list_names(prefix / "conda-meta", error)) {
    const fs::path path = prefix / "conda-meta" / name;
    if (path.extension() != ".json") {
      continue;
    }
    Distribution package;
    package.source = "conda-meta";
    package.installer = "conda";
    package.metadata = path;
    // Conda records can be large (a "files" list per package); name and
    // version come first, but parse the whole record to be safe.
    const auto text = process::read_env_file(path, process::file_limits::conda_record);
    // Only the top-level name and version are needed: everything deeper is
    // dropped while parsing, so nesting cannot make the document large.
    auto parsed = common::parse_outside_json(
        text.value_or(""), "conda-meta record",
        {.max_bytes = process::file_limits::conda_record.max_bytes, .kept_depth = 1});
    const Json record = parsed ? std::move(parsed).value() : Json();
    if (record.is_object() && record.contains("name") && record["name"].is_string()) {
      package.name = record["name"];
      package.version = process::text_field(record, "version");
    } else {
      // name-version-build.json, from the file name alone.
      const std::string stem = path.stem().string();
      const auto build_dash = stem.rfind('-');
      const auto version_dash =
          build_dash == std::string::npos ? std::string::npos : stem.rfind('-', build_dash - 1);
      if (version_dash == std::string::npos) {
        continue;
      }
      package.name = stem.substr(0, version_dash);
      package.version = stem.substr(version_dash + 1, build_dash - version_dash - 1);
    }
    package.normalized = common::normalize_distribution_name(package.name);
    packages.push_back(std::move(package));
  }
  std::sort(packages.begin(), packages.end(),
            [](const auto& a, const auto& b) { return a.normalized < b.normalized; });
  return packages;
}

}  // namespace envcontract::probes
