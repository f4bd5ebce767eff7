// discovery/env_files.cpp: the files that decide how an env runs, found in
// a real tree.
#include <gtest/gtest.h>

#include <filesystem>

#include "discovery/env_files.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::discovery {
namespace {

namespace fs = std::filesystem;

facts::PythonEnv env_at(const fs::path& prefix, facts::EnvKind kind, const std::string& version) {
  facts::PythonEnv env;
  env.prefix = prefix;
  env.kind = kind;
  env.python_version = version;
  return env;
}

// Several lib/pythonX.Y (an upgrade left the old one): the interpreter's own
// first, then the rest by name, whatever order the directory lists them in.
TEST(EnvFiles, TheInterpretersSitePackagesFirstThenByName) {
  testing::TempDir dir;
  for (const char* version : {"python3.12", "python3.10", "python3.11", "python3.9"}) {
    fs::create_directories(dir.path() / "lib" / version / "site-packages");
  }
  fs::create_directories(dir.path() / "lib" / "python3.8");  // no site-packages
  fs::create_directories(dir.path() / "lib" / "pkgconfig");
  const auto site = [&](const char* version) {
    return dir.path() / "lib" / version / "site-packages";
  };
  EXPECT_EQ(find_site_packages(env_at(dir.path(), facts::EnvKind::venv, "3.11.4")),
            (std::vector<fs::path>{site("python3.11"), site("python3.10"), site("python3.12"),
                                   site("python3.9")}));
  // A version only the lib directory tells ("3.12") finds its own as well.
  EXPECT_EQ(find_site_packages(env_at(dir.path(), facts::EnvKind::venv, "3.12")).front(),
            site("python3.12"));
  EXPECT_TRUE(
      find_site_packages(env_at(dir.path() / "absent", facts::EnvKind::venv, "3.11")).empty());
}

// conda runs activate.d scripts in name order and reads env_vars.d files
// after them; a venv has bin/activate.
TEST(EnvFiles, ActivationInputsInTheOrderActivationReadsThem) {
  testing::TempDir dir;
  dir.write("etc/conda/activate.d/20-vendor.sh", "");
  dir.write("etc/conda/activate.d/10-base.sh", "");
  dir.write("etc/conda/activate.d/README", "");
  dir.write("etc/conda/env_vars.d/b.json", "{}");
  dir.write("etc/conda/env_vars.d/a.json", "{}");
  const fs::path conda = dir.path() / "etc/conda";
  EXPECT_EQ(activation_inputs(env_at(dir.path(), facts::EnvKind::conda, "3.11")),
            (std::vector<fs::path>{conda / "activate.d/10-base.sh",
                                   conda / "activate.d/20-vendor.sh", conda / "env_vars.d/a.json",
                                   conda / "env_vars.d/b.json", dir.path() / "conda-meta/state"}));
  EXPECT_EQ(activation_inputs(env_at(dir.path(), facts::EnvKind::venv, "3.11")),
            (std::vector<fs::path>{dir.path() / "bin/activate"}));
}

}  // namespace
}  // namespace envcontract::discovery
