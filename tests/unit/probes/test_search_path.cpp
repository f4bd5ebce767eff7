// Static facts see what the interpreter sees: the search path computed from
// files is compared, entry by entry, with sys.path of the real interpreter
// on real layouts: Debian's system Python and its dist-packages, venvs with
// and without system site packages, the user site, PYTHONPATH, .pth files,
// and editable installs made by a real `pip install -e`.
#include "probes/search_path.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>

#include "discovery/discovery.hpp"
#include "probes/static_facts.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/system_venv.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::probes {
namespace {

namespace fs = std::filesystem;
using testing::run_command;
using testing::TempDir;

const fs::path k_debian_python = "/usr/bin/python3";

// The Debian interpreter this machine has, or "" (then the tests skip).
std::string debian_skip_reason() {
  if (!process::path_exists(k_debian_python)) {
    return "no " + k_debian_python.string() + " (install python3)";
  }
  if (!process::dir_exists("/usr/lib/python3/dist-packages/jwt")) {
    return "Debian's python3-jwt is not installed (scripts/test installs it)";
  }
  return "";
}

#define SKIP_WITHOUT_DEBIAN_PYTHON()                               \
  if (const auto reason = debian_skip_reason(); !reason.empty()) { \
    GTEST_SKIP() << reason;                                        \
  }

// What `python` prints for `code`, run in an environment of exactly `variables`.
Json run_python(const fs::path& python, const facts::Environment& variables,
                const std::string& code) {
  std::vector<std::string> argv = {"/usr/bin/env", "-i"};
  for (const auto& [name, value] : variables) {
    argv.push_back(name + "=" + value);
  }
  argv.insert(argv.end(), {python.string(), "-c", code});
  const auto result = run_command(argv);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return Json::parse(result.out, nullptr, false);
}

// sys.path beyond the standard library, as the interpreter builds it.
std::vector<std::string> real_search_path(const fs::path& python,
                                          const facts::Environment& variables) {
  const auto path = run_python(python, variables, R"(
import json, sys, sysconfig
standard = {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
print(json.dumps([p for p in sys.path[1:] if p not in standard
                  and not p.endswith(".zip") and not p.endswith("lib-dynload")]))
)");
  return path.is_array() ? path.get<std::vector<std::string>>() : std::vector<std::string>{};
}

std::vector<std::string> static_search_path(const SearchPath& path) {
  std::vector<std::string> entries;
  for (const auto& entry : path.entries) {
    entries.push_back(entry.path.string());
  }
  return entries;
}

PythonEnv env_at(const fs::path& prefix) {
  const auto env = discovery::describe_prefix(prefix);
  EXPECT_TRUE(env.has_value()) << prefix;
  return env.value_or(PythonEnv{});
}

fs::path make_venv(const fs::path& prefix, bool system_site) {
  std::vector<std::string> argv = {k_debian_python.string(), "-m", "venv", "--without-pip"};
  if (system_site) {
    argv.push_back("--system-site-packages");
  }
  argv.push_back(prefix.string());
  const auto result = run_command(argv);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return prefix;
}

fs::path site_of(const fs::path& venv) {
  for (const auto& entry : fs::directory_iterator(venv / "lib")) {
    if (entry.path().filename().string().starts_with("python")) {
      return entry.path() / "site-packages";
    }
  }
  return {};
}

const Distribution* find_distribution(const StaticFacts& facts, const std::string& name) {
  for (const auto& distribution : facts.distributions) {
    if (distribution.normalized == name) {
      return &distribution;
    }
  }
  return nullptr;
}

// Where the interpreter imports `module` from.
std::string imported_from(const fs::path& python, const facts::Environment& variables,
                          const std::string& module) {
  const auto file = run_python(python, variables,
                               "import json, os, " + module +
                                   "; print(json.dumps(os.path.dirname(" + module + ".__file__)))");
  return file.is_string() ? file.get<std::string>() : "";
}

TEST(SearchPath, DebianSystemInterpreterUsesDistPackages) {
  SKIP_WITHOUT_DEBIAN_PYTHON();
  TempDir home;
  const facts::Environment variables = {{"HOME", home.path().string()}};
  const auto env = env_at("/usr");
  EXPECT_EQ(env.kind, EnvKind::interpreter);
  const auto path = compute_search_path(env, variables);
  EXPECT_TRUE(path.debian_layout);
  EXPECT_TRUE(path.user_site);
  EXPECT_EQ(static_search_path(path), real_search_path(k_debian_python, variables));
  const auto facts = gather_static_facts(env, variables);
  const auto* jwt = find_distribution(facts, "pyjwt");
  ASSERT_NE(jwt, nullptr) << "Debian's PyJWT-*.egg-info was not read";
  EXPECT_EQ(jwt->source, "egg-info");
  EXPECT_EQ(facts.module_files.at("jwt").location, "/usr/lib/python3/dist-packages/jwt");
}

TEST(SearchPath, VenvWithSystemSitePackagesSeesDebiansPackages) {
  SKIP_WITHOUT_DEBIAN_PYTHON();
  TempDir dir;
  const auto venv = make_venv(dir.path() / "venv", true);
  const facts::Environment variables = {{"HOME", dir.path().string()}};
  const auto env = env_at(venv);
  const auto path = compute_search_path(env, variables);
  EXPECT_EQ(path.base_prefix, "/usr");
  EXPECT_EQ(static_search_path(path), real_search_path(venv / "bin/python", variables));
  EXPECT_EQ(path.entries.front().path, fs::canonical(site_of(venv)));
  const auto facts = gather_static_facts(env, variables);
  // The issue's case: torch and numpy from Debian were "not installed".
  const auto* jwt = find_distribution(facts, "pyjwt");
  ASSERT_NE(jwt, nullptr);
  EXPECT_EQ(jwt->metadata.parent_path(), "/usr/lib/python3/dist-packages");
  ASSERT_NE(find_distribution(facts, "pyyaml"), nullptr);
  EXPECT_EQ(facts.module_files.at("jwt").location,
            imported_from(venv / "bin/python", variables, "jwt"));
  // {site}: every site dir, the venv's own first.
  EXPECT_EQ(facts.site_packages.front(), fs::canonical(site_of(venv)));
  EXPECT_NE(std::find(facts.site_packages.begin(), facts.site_packages.end(),
                      "/usr/lib/python3/dist-packages"),
            facts.site_packages.end());
}

// A venv inside a container's rootfs (scanned with --root): pyvenv.cfg's
// home, .pth lines and PYTHONPATH name the rootfs' paths, so its base
// installation, system site packages and extra directories are the image's,
// never the agent host's (which has a /usr/lib/python3.X of its own).
TEST(SearchPath, InsideARootfsTheBaseAndPathsAreTheRootfsOwn) {
  TempDir dir;
  const auto rootfs = dir.path() / "rootfs";
  const std::string version = testing::system_python_version();
  dir.write("rootfs/etc/os-release", "ID=debian\n");
  dir.write("rootfs/usr/lib/python" + version + "/os.py", "");
  fs::create_directories(rootfs / ("usr/lib/python" + version + "/site-packages/imagepkg"));
  fs::create_directories(rootfs / "opt/extra");
  fs::create_directories(rootfs / "opt/pythonpath");
  const auto prefix = testing::make_system_venv(rootfs / "opt/venvs/app");
  std::ofstream(prefix / "pyvenv.cfg")
      << "home = /usr/bin\ninclude-system-site-packages = true\nversion = " << version << ".0\n";
  std::ofstream(testing::system_venv_site(prefix) / "extra.pth") << "/opt/extra\n";
  ASSERT_TRUE(fs::exists("/usr/lib/python" + version + "/os.py")) << "the host has its own";

  const auto env = discovery::describe_prefix(prefix, {}, rootfs);
  ASSERT_TRUE(env);
  ASSERT_EQ(env->system_root, rootfs);
  // ".." never climbs out of the rootfs, written as the image's path or as
  // the agent's (an activation script's $VIRTUAL_ENV/../..).
  std::ofstream(testing::system_venv_site(prefix) / "up.pth") << "../../../../../../../../etc\n";
  const std::string climbing =
      "/opt/pythonpath:/../../etc:" + (prefix / "../../../../../../../../../etc").string();
  const auto path = compute_search_path(*env, {{"PYTHONPATH", climbing}, {"HOME", "/nonexistent"}});
  EXPECT_EQ(path.base_prefix, rootfs / "usr");
  EXPECT_EQ(path.stdlib, rootfs / ("usr/lib/python" + version));
  std::vector<fs::path> entries;
  for (const auto& entry : path.entries) {
    entries.push_back(entry.path);
    EXPECT_TRUE(entry.path.string().starts_with(rootfs.string() + "/"))
        << entry.path << " is not the rootfs'";
  }
  for (const auto& wanted : {rootfs / "opt/pythonpath", rootfs / "opt/extra", rootfs / "etc",
                             rootfs / ("usr/lib/python" + version + "/site-packages")}) {
    EXPECT_NE(std::find(entries.begin(), entries.end(), wanted), entries.end()) << wanted;
  }
}

TEST(SearchPath, VenvWithoutSystemSitePackagesSeesOnlyItsOwn) {
  SKIP_WITHOUT_DEBIAN_PYTHON();
  TempDir dir;
  const auto venv = make_venv(dir.path() / "venv", false);
  // A user site exists, but a venv without system site packages ignores it.
  fs::create_directories(dir.path() / "userbase/lib/python3.11/site-packages");
  const facts::Environment variables = {{"HOME", dir.path().string()},
                                        {"PYTHONUSERBASE", (dir.path() / "userbase").string()}};
  const auto env = env_at(venv);
  const auto path = compute_search_path(env, variables);
  EXPECT_FALSE(path.user_site);
  EXPECT_EQ(static_search_path(path), real_search_path(venv / "bin/python", variables));
  ASSERT_EQ(path.entries.size(), 1U);
  const auto facts = gather_static_facts(env, variables);
  EXPECT_EQ(find_distribution(facts, "pyjwt"), nullptr);
  EXPECT_EQ(facts.module_files.count("jwt"), 0U);
}

TEST(SearchPath, UserSiteAndPythonPathComeWhereSitePyPutsThem) {
  SKIP_WITHOUT_DEBIAN_PYTHON();
  TempDir dir;
  const auto venv = make_venv(dir.path() / "venv", true);
  const auto version = site_of(venv).parent_path().filename().string();  // python3.11
  const auto user_site = dir.path() / "userbase/lib" / version / "site-packages";
  fs::create_directories(user_site / "usermod");
  std::ofstream(user_site / "usermod/__init__.py") << "";
  fs::create_directories(dir.path() / "extra/pathmod");
  std::ofstream(dir.path() / "extra/pathmod/__init__.py") << "";
  const facts::Environment variables = {{"HOME", dir.path().string()},
                                        {"PYTHONUSERBASE", (dir.path() / "userbase").string()},
                                        {"PYTHONPATH", (dir.path() / "extra").string()}};
  const auto env = env_at(venv);
  const auto path = compute_search_path(env, variables);
  EXPECT_TRUE(path.user_site);
  // PYTHONPATH first, then the venv's site-packages, the user site, the system's.
  EXPECT_EQ(static_search_path(path), real_search_path(venv / "bin/python", variables));
  ASSERT_GE(path.entries.size(), 3U);
  EXPECT_EQ(path.entries[0].origin, "PYTHONPATH");
  EXPECT_EQ(path.entries[2].path, user_site);
  const auto facts = gather_static_facts(env, variables);
  EXPECT_EQ(facts.module_files.at("usermod").location,
            imported_from(venv / "bin/python", variables, "usermod"));
  EXPECT_EQ(facts.module_files.at("pathmod").location,
            imported_from(venv / "bin/python", variables, "pathmod"));
  // PYTHONNOUSERSITE turns the user site off, as it does for the interpreter.
  auto no_user = variables;
  no_user["PYTHONNOUSERSITE"] = "1";
  EXPECT_EQ(static_search_path(compute_search_path(env, no_user)),
            real_search_path(venv / "bin/python", no_user));
  // A relative entry depends on where Python starts: noted, not guessed.
  auto relative = variables;
  relative["PYTHONPATH"] = "relative/dir";
  const auto notes = compute_search_path(env, relative).notes;
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& note) {
    return note.find("'relative/dir' is relative") != std::string::npos;
  }));
}

TEST(SearchPath, PthFilesAddDirectoriesInNameOrder) {
  SKIP_WITHOUT_DEBIAN_PYTHON();
  TempDir dir;
  const auto venv = make_venv(dir.path() / "venv", false);
  const auto site = site_of(venv);
  for (const char* name : {"absolute/absmod", "sitelocal/relmod"}) {
    fs::create_directories(dir.path() / name);
    std::ofstream(dir.path() / name / "__init__.py") << "";
  }
  fs::create_directories(site / "relative/relmod2");
  std::ofstream(site / "relative/relmod2/__init__.py") << "";
  std::ofstream(site / "b.pth") << "# a comment\n"
                                << (dir.path() / "absolute").string() << "\n"
                                << "relative\n"
                                << "does-not-exist\n"
                                << "import sys\n";
  std::ofstream(site / "a.pth") << (dir.path() / "sitelocal").string() << "   \n\n";
  const facts::Environment variables = {{"HOME", dir.path().string()}};
  const auto env = env_at(venv);
  const auto path = compute_search_path(env, variables);
  EXPECT_EQ(static_search_path(path), real_search_path(venv / "bin/python", variables));
  ASSERT_EQ(path.entries.size(), 4U);
  EXPECT_EQ(path.entries[1].origin, "a.pth in " + fs::canonical(site).string());
  ASSERT_EQ(path.notes.size(), 1U);
  EXPECT_NE(path.notes[0].find("b.pth"), std::string::npos) << path.notes[0];
  const auto facts = gather_static_facts(env, variables);
  for (const char* module : {"absmod", "relmod", "relmod2"}) {
    EXPECT_EQ(facts.module_files.at(module).location,
              imported_from(venv / "bin/python", variables, module));
  }
}

TEST(SearchPath, EditableInstallsMadeByRealPip) {
  SKIP_WITHOUT_DEBIAN_PYTHON();
  if (run_command({k_debian_python.string(), "-c", "import setuptools, pip"}).exit_code != 0) {
    GTEST_SKIP() << "Debian's python3-pip and python3-setuptools are not installed";
  }
  TempDir dir;
  const auto build = [&](const std::string& project, const std::string& name,
                         const std::string& version, const std::string& package,
                         const std::string& layout) {
    dir.write(project + "/pyproject.toml",
              "[build-system]\nrequires = [\"setuptools>=61\"]\n"
              "build-backend = \"setuptools.build_meta\"\n[project]\nname = \"" +
                  name + "\"\nversion = \"" + version + "\"\n" + layout);
    dir.write(project + "/" + (layout.find("where") != std::string::npos ? "src/" : "") + package +
                  "/__init__.py",
              "");
  };
  // A flat layout gets setuptools' import hook; a src layout a plain .pth.
  build("flat", "flat-pkg", "1.2.3", "flatpkg", "[tool.setuptools]\npackages = [\"flatpkg\"]\n");
  build("srcproj", "src-pkg", "0.4", "srcpkg",
        "[tool.setuptools.packages.find]\nwhere = [\"src\"]\n");
  const auto venv = make_venv(dir.path() / "venv", true);
  const auto pip =
      run_command({"/usr/bin/env", "HOME=" + dir.path().string(), (venv / "bin/python").string(),
                   "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index", "--no-deps",
                   "--no-cache-dir", "--disable-pip-version-check", "-e",
                   (dir.path() / "flat").string(), "-e", (dir.path() / "srcproj").string()});
  ASSERT_EQ(pip.exit_code, 0) << pip.err;
  const facts::Environment variables = {{"HOME", dir.path().string()}};
  const auto env = env_at(venv);
  const auto path = compute_search_path(env, variables);
  EXPECT_EQ(static_search_path(path), real_search_path(venv / "bin/python", variables));
  ASSERT_EQ(path.editable.size(), 1U);
  EXPECT_EQ(path.editable[0].module, "flatpkg");
  const auto facts = gather_static_facts(env, variables);
  for (const auto& [distribution, version] :
       std::map<std::string, std::string>{{"flat-pkg", "1.2.3"}, {"src-pkg", "0.4"}}) {
    const auto* found = find_distribution(facts, distribution);
    ASSERT_NE(found, nullptr) << distribution;
    EXPECT_EQ(found->version, version);
  }
  for (const char* module : {"flatpkg", "srcpkg"}) {
    EXPECT_EQ(facts.module_files.at(module).location,
              imported_from(venv / "bin/python", variables, module));
  }
}

// Python imports an editable install's finder once, however many .pth lines
// import it; here it is read once too, and what finders map is bounded: a
// .pth of 800 such lines, each reading a finder of 4,500 modules, made
// 3.6 million entries.
TEST(SearchPath, EditableFindersAreReadOnceAndBounded) {
  SKIP_WITHOUT_DEBIAN_PYTHON();
  TempDir dir;
  const auto venv = make_venv(dir.path() / "venv", false);
  const auto site = site_of(venv);
  fs::create_directories(dir.path() / "p");
  const std::string target = (dir.path() / "p").string();
  auto finder = [&](const std::string& name, int modules) {
    std::ofstream source(site / ("__editable___" + name + "_finder.py"));
    source << "MAPPING = {";
    for (int i = 0; i < modules; ++i) {
      source << "'m" << i << "': '" << target << "', ";
    }
    source << "}\n";
    std::ofstream pth(site / ("__editable__." + name + ".pth"));
    for (int line = 0; line < 800; ++line) {
      pth << "import __editable___" << name << "_finder; __editable___" << name
          << "_finder.install()\n";
    }
  };
  finder("two", 2);
  const facts::Environment variables = {{"HOME", dir.path().string()}};
  auto path = compute_search_path(env_at(venv), variables);
  EXPECT_EQ(path.editable.size(), 2U);
  EXPECT_EQ(path.incomplete, "");

  finder("many", 4500);
  path = compute_search_path(env_at(venv), variables);
  EXPECT_EQ(path.editable.size(), 4096U);
  EXPECT_EQ(path.incomplete, "more than 4096 modules of editable installs: the rest are not read");
}

TEST(SearchPath, AnEarlierCopyShadowsALaterOne) {
  SKIP_WITHOUT_DEBIAN_PYTHON();
  TempDir dir;
  const auto venv = make_venv(dir.path() / "venv", true);
  const auto site = site_of(venv);
  fs::create_directories(site / "jwt");
  std::ofstream(site / "jwt/__init__.py") << "";
  const facts::Environment variables = {{"HOME", dir.path().string()}};
  const auto facts = gather_static_facts(env_at(venv), variables);
  EXPECT_EQ(facts.module_files.at("jwt").location,
            imported_from(venv / "bin/python", variables, "jwt"));
  const auto shadowed = std::find_if(facts.shadowed.begin(), facts.shadowed.end(),
                                     [](const auto& module) { return module.module == "jwt"; });
  ASSERT_NE(shadowed, facts.shadowed.end());
  EXPECT_EQ(shadowed->path, "/usr/lib/python3/dist-packages/jwt");
}

TEST(SearchPath, ImportPrecedenceIsFileFinders) {
  SKIP_WITHOUT_DEBIAN_PYTHON();
  TempDir dir;
  const auto venv = make_venv(dir.path() / "venv", false);
  const auto site = site_of(venv);
  // A module file beats a namespace directory of its name; the standard
  // library beats a backport in site-packages; an extension built for
  // another Python is not importable at all.
  fs::create_directories(site / "both");
  std::ofstream(site / "both.py") << "";
  std::ofstream(site / "typing.py") << "";
  std::ofstream(site / "oldext.cpython-39-x86_64-linux-gnu.so") << "";
  const facts::Environment variables = {{"HOME", dir.path().string()}};
  const auto facts = gather_static_facts(env_at(venv), variables);
  for (const char* module : {"both", "typing"}) {
    const auto file = run_python(
        venv / "bin/python", variables,
        std::string("import json, ") + module + "; print(json.dumps(" + module + ".__file__))");
    EXPECT_EQ(facts.module_files.at(module).real, file.get<std::string>()) << module;
  }
  EXPECT_EQ(facts.module_files.count("oldext"), 0U);
}

// Where each module really is, links resolved as the interpreter's realpath
// resolves them: a module that is a link, a package that is a link, and a
// path entry reached through a link (each entry is resolved once, each
// module that is a link on its own).
TEST(SearchPath, ModulePathsResolveLinksAsTheInterpreterDoes) {
  SKIP_WITHOUT_DEBIAN_PYTHON();
  TempDir dir;
  const auto venv = make_venv(dir.path() / "venv", false);
  const auto site = site_of(venv);
  fs::create_directories(dir.path() / "elsewhere/linkedpkg");
  std::ofstream(dir.path() / "elsewhere/linkedmod.py") << "";
  std::ofstream(dir.path() / "elsewhere/linkedpkg/__init__.py") << "";
  std::ofstream(site / "plainmod.py") << "";
  fs::create_symlink(dir.path() / "elsewhere/linkedmod.py", site / "linkedmod.py");
  fs::create_directory_symlink(dir.path() / "elsewhere/linkedpkg", site / "linkedpkg");
  // A PYTHONPATH entry that is a link to a directory.
  fs::create_directories(dir.path() / "real-extra");
  std::ofstream(dir.path() / "real-extra/extramod.py") << "";
  fs::create_directory_symlink(dir.path() / "real-extra", dir.path() / "extra");
  const facts::Environment variables = {{"HOME", dir.path().string()},
                                        {"PYTHONPATH", (dir.path() / "extra").string()}};
  const auto facts = gather_static_facts(env_at(venv), variables);
  for (const char* module : {"plainmod", "linkedmod", "linkedpkg", "extramod"}) {
    const auto real = run_python(venv / "bin/python", variables,
                                 std::string("import json, os, ") + module + "; f = " + module +
                                     ".__file__; print(json.dumps(os.path.realpath("
                                     "os.path.dirname(f) if f.endswith('__init__.py') else f)))");
    ASSERT_EQ(facts.module_files.count(module), 1U) << module;
    EXPECT_EQ(facts.module_files.at(module).real, real.get<std::string>()) << module;
  }
  EXPECT_EQ(facts.module_files.at("linkedmod").real,
            fs::canonical(dir.path() / "elsewhere/linkedmod.py").string());
  EXPECT_EQ(facts.module_files.at("extramod").real,
            fs::canonical(dir.path() / "real-extra/extramod.py").string());
}

TEST(SearchPath, ASiteDirAlreadyOnPythonPathStillReadsItsPthFiles) {
  SKIP_WITHOUT_DEBIAN_PYTHON();
  TempDir dir;
  const auto venv = make_venv(dir.path() / "venv", false);
  const auto site = fs::canonical(site_of(venv));
  fs::create_directories(dir.path() / "extra");
  std::ofstream(site / "extra.pth") << (dir.path() / "extra").string() << "\n";
  const facts::Environment variables = {{"HOME", dir.path().string()},
                                        {"PYTHONPATH", site.string()}};
  const auto path = compute_search_path(env_at(venv), variables);
  EXPECT_EQ(static_search_path(path), real_search_path(venv / "bin/python", variables));
  EXPECT_EQ(path.site_dirs(), std::vector<fs::path>{site});
}

// Fedora, RHEL and openSUSE keep the standard library and compiled packages
// in lib64 (platlibdir), pure packages in lib. A layout, not an interpreter
// this machine has; the base holds a stock triton that the venv's FlagTree
// shadows.
TEST(SearchPath, Lib64BaseAndAShadowedProvider) {
  TempDir dir;
  const auto base = dir.path() / "base";
  dir.write("base/lib64/python3.11/os.py", "");
  dir.write("base/lib64/python3.11/site-packages/platmod/__init__.py", "");
  dir.write("base/lib/python3.11/site-packages/puremod/__init__.py", "");
  dir.write("base/lib/python3.11/site-packages/triton/__init__.py", "");
  dir.write("base/lib/python3.11/site-packages/triton-3.5.0.dist-info/METADATA",
            "Name: triton\nVersion: 3.5.0\n");
  dir.write("base/lib/python3.11/site-packages/triton-3.5.0.dist-info/RECORD",
            "triton/__init__.py,,\n");
  const auto venv = dir.path() / "venv";
  dir.write("venv/pyvenv.cfg", "home = " + (base / "bin").string() +
                                   "\ninclude-system-site-packages = false\n"
                                   "include-system-site-packages = true\nversion = 3.11.9\n");
  fs::create_directories(venv / "bin");
  fs::create_symlink("/bin/true", venv / "bin/python");
  dir.write("venv/lib/python3.11/site-packages/triton/__init__.py", "");
  dir.write("venv/lib/python3.11/site-packages/flagtree-0.7.0.dist-info/METADATA",
            "Name: flagtree\nVersion: 0.7.0\n");
  dir.write("venv/lib/python3.11/site-packages/flagtree-0.7.0.dist-info/RECORD",
            "triton/__init__.py,,\n");
  const auto facts = gather_static_facts(env_at(venv), {{"HOME", dir.path().string()}});
  // The last include-system-site-packages wins, as in site.py.
  EXPECT_EQ(facts.search_path.base_prefix, base);
  EXPECT_EQ(facts.search_path.stdlib, fs::canonical(base / "lib64/python3.11"));
  ASSERT_EQ(facts.site_packages.size(), 3U);
  EXPECT_EQ(facts.site_packages[1], base / "lib64/python3.11/site-packages");
  EXPECT_EQ(facts.site_packages[2], base / "lib/python3.11/site-packages");
  EXPECT_EQ(facts.module_files.at("platmod").location,
            (base / "lib64/python3.11/site-packages/platmod").string());
  EXPECT_EQ(facts.module_files.at("puremod").location,
            (base / "lib/python3.11/site-packages/puremod").string());
  // The imported triton is the venv's, and FlagTree provides it.
  EXPECT_EQ(facts.triton.location, fs::canonical(venv) / "lib/python3.11/site-packages/triton");
  EXPECT_EQ(facts.triton.provider, "flagtree");
}

TEST(SearchPath, HostilePthFilesAreBounded) {
  TempDir dir;
  const auto prefix = dir.path() / "venv";
  const auto site = prefix / "lib/python3.4/site-packages";
  fs::create_directories(site);
  fs::create_directories(prefix / "bin");
  // A version no installation here has: getpath's search for the base
  // (lib/python3.4/os.py at or above home) finds nothing, even at /.
  std::ofstream(prefix / "pyvenv.cfg") << "home = /nonexistent/bin\nversion = 3.4.10\n";
  fs::create_symlink("/bin/true", prefix / "bin/python");
  for (int i = 0; i < 300; ++i) {
    std::ofstream(site / ("p" + std::to_string(1000 + i) + ".pth")) << "/\n";
  }
  ASSERT_EQ(::mkfifo((site / "z.pth").c_str(), 0644), 0);
  process::FileProblemLog refused;
  const auto path = compute_search_path(env_at(prefix), {});
  // "/" is added once; the FIFO is never opened (it is past the bound here,
  // and read_env_file refuses FIFOs anyway); the base is named as gone.
  EXPECT_EQ(path.entries.size(), 2U);
  ASSERT_GE(path.notes.size(), 2U);
  EXPECT_TRUE(path.base_prefix.empty()) << "no base was found";
  EXPECT_FALSE(path.incomplete.empty()) << "not every .pth file was read";
  EXPECT_NE(path.notes[0].find("/nonexistent/bin"), std::string::npos) << path.notes[0];
  EXPECT_NE(path.notes[1].find("301 .pth files"), std::string::npos) << path.notes[1];
}

// setuptools' finder serves namespace packages from lists of directories:
// NAMESPACES: dict[str, list[str]] = {'ns': ['/src/ns']}.
TEST(SearchPath, StringListsDictOfAnEditableFinder) {
  const std::string finder =
      "MAPPING: dict[str, str] = {'proj': '/src/proj'}\n"
      "NAMESPACES: dict[str, list[str]] = {'ns': ['/src/ns', \"/more/ns\"], 'empty': []}\n";
  EXPECT_EQ(parse_string_lists_dict(finder, "NAMESPACES"),
            (std::map<std::string, std::vector<std::string>>{{"ns", {"/src/ns", "/more/ns"}},
                                                             {"empty", {}}}));
  EXPECT_EQ(parse_string_lists_dict("NAMESPACES: dict[str, list[str]] = {}\n", "NAMESPACES").size(),
            0U);
  // A list where one string is wanted, or a list that is not of strings: nothing.
  EXPECT_EQ(parse_string_dict("MAPPING = {'a': ['/x']}\n", "MAPPING").size(), 0U);
  EXPECT_EQ(parse_string_lists_dict("NAMESPACES = {'a': [x]}\n", "NAMESPACES").size(), 0U);
  EXPECT_EQ(parse_string_lists_dict("NAMESPACES = {'a': ['/x'\n", "NAMESPACES").size(), 0U);
}

TEST(SearchPath, StringDictOfAnEditableFinder) {
  EXPECT_EQ(parse_string_dict("MAPPING = {'a': '/src/a', \"b\": \"/src/b\"}\n", "MAPPING"),
            (std::map<std::string, std::string>{{"a", "/src/a"}, {"b", "/src/b"}}));
  EXPECT_EQ(
      parse_string_dict("import x\nMAPPING: dict[str, str] = {\n  'p': '/x\\'y',\n}\n", "MAPPING"),
      (std::map<std::string, std::string>{{"p", "/x'y"}}));
  EXPECT_EQ(parse_string_dict("MAPPING = {}\n", "MAPPING").size(), 0U);
  // Not a literal dict of strings: nothing, never a guess.
  EXPECT_EQ(parse_string_dict("MAPPING = dict(a='/x')\n", "MAPPING").size(), 0U);
  EXPECT_EQ(parse_string_dict("MAPPING = {'a': some_call()}\n", "MAPPING").size(), 0U);
  EXPECT_EQ(parse_string_dict("OTHER_MAPPING = {'a': '/x'}\n", "MAPPING").size(), 0U);
  EXPECT_EQ(parse_string_dict("MAPPING = {'a': '/x", "MAPPING").size(), 0U);
}

}  // namespace
}  // namespace envcontract::probes
