#include "discovery/env_files.hpp"

#include <algorithm>

#include "common/python_names.hpp"
#include "process/small_files.hpp"

namespace envcontract::discovery {
namespace fs = std::filesystem;

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& extension) {
  std::vector<fs::path> files;
  std::error_code error;
  for (const std::string& name : process::list_names(dir, error)) {
    if (fs::path(name).extension() == extension) {
      files.push_back(dir / name);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<fs::path> activation_inputs(const facts::PythonEnv& env) {
  std::vector<fs::path> inputs;
  if (env.kind == facts::EnvKind::conda) {
    inputs = sorted_files(env.prefix / "etc" / "conda" / "activate.d", ".sh");
    const auto vars = sorted_files(env.prefix / "etc" / "conda" / "env_vars.d", ".json");
    inputs.insert(inputs.end(), vars.begin(), vars.end());
    inputs.push_back(env.prefix / "conda-meta" / "state");
  } else if (env.kind == facts::EnvKind::venv) {
    inputs.push_back(env.prefix / "bin" / "activate");
  }
  return inputs;
}

std::vector<fs::path> find_site_packages(const facts::PythonEnv& env) {
  std::vector<fs::path> found;
  std::error_code error;
  for (const std::string& name : process::list_names(env.prefix / "lib", error)) {
    if (name.starts_with("python") &&
        process::dir_exists(env.prefix / "lib" / name / "site-packages")) {
      found.push_back(env.prefix / "lib" / name / "site-packages");
    }
  }
  // A prefix may carry several lib/pythonX.Y; the interpreter's own comes
  // first, the others in name order (never the directory's own order, which
  // differs from one copy of the env to another).
  std::sort(found.begin(), found.end());
  const std::string own = "python" + common::python_major_minor(env.python_version);
  std::stable_partition(found.begin(), found.end(), [&](const fs::path& path) {
    return path.parent_path().filename() == own ||
           path.parent_path().filename() == "python" + env.python_version;
  });
  return found;
}

}  // namespace envcontract::discovery
