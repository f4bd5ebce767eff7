// probes/library_lookup.cpp: where the loader of an env's interpreter
// finds the libraries a contract names, and which C library (and glibc
// version) it gets: real ELF files in real trees, and the real loader
// asked the same question where it can be.
#include "probes/library_lookup.hpp"

#include <gnu/libc-version.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/pep440.hpp"
#include "tests/support/compile.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::probes {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// A real executable standing in for python: it dlopens each name it is
// given and prints the path the loader found ("-" when none), so the real
// loader answers what lookup_libraries answers.
constexpr const char* k_interpreter_source = R"(#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    void* handle = dlopen(argv[i], RTLD_NOW);
    struct link_map* map = NULL;
    if (handle != NULL && dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0) {
      printf("%s\n", map->l_name);
    } else {
      printf("-\n");
    }
  }
  return 0;
}
)";

void build_interpreter(const fs::path& output, const std::vector<std::string>& arguments = {}) {
  fs::create_directories(output.parent_path());
  const std::string source = output.string() + ".c";
  std::ofstream(source) << k_interpreter_source;
  std::vector<std::string> argv = {"/usr/bin/cc", "-o", output.string(), source,
                                   "-Wl,--no-as-needed"};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  argv.push_back("-ldl");
  const auto result = testing::run_command(argv);
  ASSERT_EQ(result.exit_code, 0) << result.err;
}

void build_library(const fs::path& output, const std::vector<std::string>& arguments = {}) {
  std::vector<std::string> with_soname = {"-Wl,-soname," + output.filename().string()};
  with_soname.insert(with_soname.end(), arguments.begin(), arguments.end());
  testing::build_shared_library(
      output, "int " + output.stem().stem().string() + "_f(void) { " + "return 1; }\n",
      with_soname);
  // Its source stays beside it ("libfoo.so.1.c"): a file whose name only
  // starts like the library's is no other version of it.
}

// What the real loader finds for each name when `python` runs, normalised
// ("" when it finds nothing).
std::vector<fs::path> real_loader_finds(const fs::path& python,
                                        const std::vector<std::string>& names,
                                        const std::string& ld_library_path = "") {
  std::vector<std::string> argv = {"/usr/bin/env", "LD_LIBRARY_PATH=" + ld_library_path,
                                   python.string()};
  argv.insert(argv.end(), names.begin(), names.end());
  const auto run = testing::run_command(argv);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  std::vector<fs::path> found;
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line);) {
    found.push_back(line == "-" ? fs::path() : fs::path(line).lexically_normal());
  }
  return found;
}

PythonEnv env_with_python(const fs::path& python) {
  PythonEnv env;
  env.prefix = python.parent_path().parent_path();
  env.python = python;
  return env;
}

const std::shared_ptr<const loader::LdCache> k_no_cache;

bool contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// A venv's bin/python leads, link by link (relative, absolute, through a
// linked directory), to the base interpreter: the loader takes $ORIGIN
// from that real path. No interpreter, a dangling link or a loop: none.
TEST(LibraryLookup, TheLoadedInterpreterIsBinPythonWithEveryLinkResolved) {
  TempDir dir;
  const fs::path base = fs::canonical(dir.path());
  dir.write("base/bin/python3.11", "#!interpreter\n");
  fs::create_directories(base / "venv" / "bin");
  fs::create_symlink(base / "base" / "bin", base / "bin-link");
  fs::create_symlink("../../bin-link/python3.11", base / "venv" / "bin" / "python3");
  fs::create_symlink("python3", base / "venv" / "bin" / "python");
  EXPECT_EQ(loaded_interpreter(env_with_python(base / "venv" / "bin" / "python")),
            base / "base" / "bin" / "python3.11");

  EXPECT_EQ(loaded_interpreter(env_with_python(base / "venv" / "bin" / "absent")), fs::path());
  fs::create_symlink(base / "gone" / "python3.11", base / "venv" / "bin" / "dangling");
  EXPECT_EQ(loaded_interpreter(env_with_python(base / "venv" / "bin" / "dangling")), fs::path());
  fs::create_symlink("loop-b", base / "venv" / "bin" / "loop-a");
  fs::create_symlink("loop-a", base / "venv" / "bin" / "loop-b");
  EXPECT_EQ(loaded_interpreter(env_with_python(base / "venv" / "bin" / "loop-a")), fs::path());
}

// An env of another system tree follows the tree's own links, as the
// kernel does inside it: an absolute link, or ".." past its "/", stays in
// the tree; a link to a file only the host has leads nowhere.
TEST(LibraryLookup, AnInterpreterInATreeIsFollowedInsideTheTree) {
  TempDir dir;
  const fs::path root = fs::canonical(dir.path()) / "rootfs";
  const fs::path bin = root / "opt" / "env" / "bin";
  fs::create_directories(bin);
  dir.write("rootfs/usr/bin/python3.11", "#!interpreter\n");
  fs::create_symlink("/usr/bin/python3.11", bin / "python");
  fs::create_symlink("../../../../../../../../../usr/bin/python3.11", bin / "python-up");
  fs::create_symlink("/bin/sh", bin / "python-host");
  PythonEnv env = env_with_python(bin / "python");
  env.system_root = root;
  EXPECT_EQ(loaded_interpreter(env), root / "usr" / "bin" / "python3.11");
  env.python = bin / "python-up";
  EXPECT_EQ(loaded_interpreter(env), root / "usr" / "bin" / "python3.11");
  env.python = bin / "python-host";
  EXPECT_EQ(loaded_interpreter(env), fs::path());
}

// LD_LIBRARY_PATH is split as the loader splits it (":" or ";", empty
// entries dropped); in another tree every absolute directory, the
// system's included, is that tree's, and ".." cannot climb out of it.
TEST(LibraryLookup, TheSearchEnvironmentIsTheTreesOwn) {
  const auto cache = std::make_shared<const loader::LdCache>();
  const facts::Environment environment = {{"LD_LIBRARY_PATH", "/opt/a::/opt/../../etc;/usr/b:"},
                                          {"PATH", "/usr/bin"}};
  const auto host = search_environment(environment, cache);
  EXPECT_EQ(host.ld_library_path, (std::vector<std::string>{"/opt/a", "/opt/../../etc", "/usr/b"}));
  EXPECT_EQ(host.system_dirs, loader::SearchEnvironment().system_dirs);
  EXPECT_EQ(host.root, fs::path("/"));
  EXPECT_EQ(host.cache, cache);

  const fs::path root = "/srv/images/rootfs";
  const auto tree = search_environment(environment, cache, root);
  EXPECT_EQ(tree.ld_library_path,
            (std::vector<std::string>{"/srv/images/rootfs/opt/a", "/srv/images/rootfs/etc",
                                      "/srv/images/rootfs/usr/b"}));
  EXPECT_EQ(tree.system_dirs,
            (std::vector<fs::path>{root / "lib/x86_64-linux-gnu", root / "usr/lib/x86_64-linux-gnu",
                                   root / "lib", root / "usr/lib"}));
  EXPECT_EQ(tree.root, root);

  EXPECT_TRUE(search_environment({{"PATH", "/usr/bin"}}, cache).ld_library_path.empty());
}

// A library in a directory of LD_LIBRARY_PATH is found there, as the real
// loader finds it; one of another version is not, and the miss names
// every place searched and the version that is there. One lookup per
// name, in the order asked.
TEST(LibraryLookup, LdLibraryPathIsSearchedAsTheLoaderSearchesIt) {
  TempDir dir;
  const fs::path base = fs::canonical(dir.path());
  build_interpreter(base / "env" / "bin" / "python3.11");
  fs::create_symlink("python3.11", base / "env" / "bin" / "python");
  const fs::path vendor = base / "vendor" / "lib";
  build_library(vendor / "libenvc_lookup_a.so.1");
  const std::vector<std::string> names = {"libenvc_lookup_a.so.1", "libenvc_lookup_a.so.2"};
  loader::ElfCache elf_cache;
  const auto lookups =
      lookup_libraries(env_with_python(base / "env" / "bin" / "python"),
                       {{"LD_LIBRARY_PATH", vendor.string()}}, names, k_no_cache, elf_cache);
  ASSERT_EQ(lookups.size(), 2U);
  EXPECT_EQ(lookups[0].name, names[0]);
  EXPECT_EQ(lookups[0].path, vendor / "libenvc_lookup_a.so.1");
  EXPECT_EQ(lookups[0].found_via, "LD_LIBRARY_PATH");
  EXPECT_TRUE(lookups[0].searched.empty());
  EXPECT_EQ(lookups[0].incomplete, "");

  EXPECT_EQ(lookups[1].name, names[1]);
  EXPECT_EQ(lookups[1].path, fs::path());
  EXPECT_EQ(lookups[1].incomplete, "");
  ASSERT_FALSE(lookups[1].searched.empty());
  EXPECT_EQ(lookups[1].searched.front(), vendor.string() + " (LD_LIBRARY_PATH)");
  EXPECT_TRUE(contains(lookups[1].searched, "/usr/lib (system)"));
  EXPECT_EQ(lookups[1].other_versions, std::vector<fs::path>{vendor / "libenvc_lookup_a.so.1"});

  EXPECT_EQ(real_loader_finds(base / "env" / "bin" / "python", names, vendor.string()),
            (std::vector<fs::path>{lookups[0].path, lookups[1].path}));
}

// The interpreter's RPATH ($ORIGIN/../lib) is expanded from its real
// directory, not from the venv's bin/ that links to it: the base's
// library is found, never the decoy next to the venv, as the real loader
// finds it.
TEST(LibraryLookup, TheInterpretersRpathIsExpandedFromItsRealDirectory) {
  TempDir dir;
  const fs::path base = fs::canonical(dir.path());
  build_interpreter(base / "base" / "bin" / "python3.11",
                    {"-Wl,-rpath,$ORIGIN/../lib", "-Wl,--disable-new-dtags"});
  build_library(base / "base" / "lib" / "libenvc_rpath.so.1");
  build_library(base / "venv" / "lib" / "libenvc_rpath.so.1");  // the decoy
  fs::create_directories(base / "venv" / "bin");
  fs::create_symlink(base / "base" / "bin" / "python3.11", base / "venv" / "bin" / "python");
  loader::ElfCache elf_cache;
  const auto lookups = lookup_libraries(env_with_python(base / "venv" / "bin" / "python"), {},
                                        {"libenvc_rpath.so.1"}, k_no_cache, elf_cache);
  ASSERT_EQ(lookups.size(), 1U);
  EXPECT_EQ(lookups[0].path, base / "base" / "lib" / "libenvc_rpath.so.1");
  EXPECT_EQ(lookups[0].found_via, "RPATH of python3.11");
  EXPECT_EQ(real_loader_finds(base / "venv" / "bin" / "python", {"libenvc_rpath.so.1"}),
            std::vector<fs::path>{lookups[0].path});
}

// A library the interpreter already loaded (here through its dependency's
// RUNPATH, which a dlopen from the interpreter would not search) is the
// one a later dlopen of its name gets.
TEST(LibraryLookup, ALibraryTheInterpreterAlreadyLoadedIsTheOneFound) {
  TempDir dir;
  const fs::path base = fs::canonical(dir.path());
  const fs::path lib = base / "base" / "lib";
  build_library(lib / "inner" / "libenvc_inner.so.1");
  build_library(lib / "libenvc_dep.so.1", {"-L" + (lib / "inner").string(), "-l:libenvc_inner.so.1",
                                           "-Wl,-rpath,$ORIGIN/inner", "-Wl,--enable-new-dtags"});
  build_interpreter(base / "base" / "bin" / "python3.11",
                    {"-L" + lib.string(), "-l:libenvc_dep.so.1", "-Wl,-rpath,$ORIGIN/../lib",
                     "-Wl,--disable-new-dtags", "-Wl,-rpath-link," + (lib / "inner").string()});
  loader::ElfCache elf_cache;
  const auto lookups = lookup_libraries(env_with_python(base / "base" / "bin" / "python3.11"), {},
                                        {"libenvc_inner.so.1"}, k_no_cache, elf_cache);
  ASSERT_EQ(lookups.size(), 1U);
  EXPECT_EQ(lookups[0].path, lib / "inner" / "libenvc_inner.so.1");
  EXPECT_EQ(lookups[0].found_via, "RUNPATH of libenvc_dep.so.1");
  EXPECT_EQ(real_loader_finds(base / "base" / "bin" / "python3.11", {"libenvc_inner.so.1"}),
            std::vector<fs::path>{lookups[0].path});
}

// An env whose interpreter is gone finds nothing, and says why, for each
// name; nor has it a C library.
TEST(LibraryLookup, AnEnvWithoutItsInterpreterFindsNothing) {
  TempDir dir;
  loader::ElfCache elf_cache;
  const PythonEnv env = env_with_python(dir.path() / "env" / "bin" / "python");
  const auto lookups = lookup_libraries(env, {}, {"libm.so.6", "libc.so.6"}, k_no_cache, elf_cache);
  ASSERT_EQ(lookups.size(), 2U);
  for (const auto& lookup : lookups) {
    EXPECT_EQ(lookup.path, fs::path()) << lookup.name;
    EXPECT_EQ(lookup.searched, std::vector<std::string>{"(the env's interpreter is missing)"});
    EXPECT_EQ(lookup.incomplete, "");
  }
  EXPECT_EQ(lookups[1].name, "libc.so.6");
  const auto glibc = glibc_facts(env, {}, k_no_cache, elf_cache);
  EXPECT_EQ(glibc.path, fs::path());
  EXPECT_EQ(glibc.version, "");
  EXPECT_FALSE(glibc.problem.empty());
}

// In another tree, LD_LIBRARY_PATH and the system directories are the
// tree's: its vendor library is found below it, and a library only the
// host has (libm.so.6) is not, nor is any host directory searched.
TEST(LibraryLookup, ATreesLibrariesAreLookedUpInsideIt) {
  TempDir dir;
  const fs::path base = fs::canonical(dir.path());
  const fs::path root = base / "rootfs";
  build_interpreter(root / "usr" / "bin" / "python3.11");
  fs::create_directories(root / "env" / "bin");
  fs::create_symlink("/usr/bin/python3.11", root / "env" / "bin" / "python");
  build_library(root / "opt" / "vendor" / "lib" / "libenvc_vendor.so.1");
  // The host's directory of the same name holds one too: never the tree's.
  build_library(base / "opt" / "vendor" / "lib" / "libenvc_vendor.so.1");
  PythonEnv env = env_with_python(root / "env" / "bin" / "python");
  env.system_root = root;
  loader::ElfCache elf_cache;
  const auto lookups = lookup_libraries(
      env, {{"LD_LIBRARY_PATH", (base / "opt/vendor/lib").string() + ":/opt/vendor/lib"}},
      {"libenvc_vendor.so.1", "libm.so.6"}, k_no_cache, elf_cache);
  ASSERT_EQ(lookups.size(), 2U);
  EXPECT_EQ(lookups[0].path, root / "opt/vendor/lib/libenvc_vendor.so.1");
  EXPECT_EQ(lookups[0].found_via, "LD_LIBRARY_PATH");
  EXPECT_EQ(lookups[1].path, fs::path());
  ASSERT_FALSE(lookups[1].searched.empty());
  for (const auto& place : lookups[1].searched) {
    EXPECT_TRUE(place.starts_with(root.string() + "/")) << place;
  }
  EXPECT_TRUE(
      contains(lookups[1].searched, (root / "lib/x86_64-linux-gnu").string() + " (system)"));
}

// The host's C library is the one this very process runs with, and its
// version the newest GLIBC_x.y its version definitions name, as readelf
// reads them.
TEST(LibraryLookup, TheHostsCLibraryAndItsNewestGlibcVersion) {
  TempDir dir;
  const fs::path python = fs::canonical(dir.path()) / "env" / "bin" / "python3.11";
  build_interpreter(python);
  loader::ElfCache elf_cache;
  const auto glibc =
      glibc_facts(env_with_python(python), {},
                  std::make_shared<const loader::LdCache>(loader::LdCache::load()), elf_cache);
  EXPECT_EQ(glibc.problem, "");
  ASSERT_FALSE(glibc.path.empty());
  const auto ours = real_loader_finds(python, {"libc.so.6"});
  ASSERT_EQ(ours.size(), 1U);
  EXPECT_TRUE(fs::equivalent(glibc.path, ours[0])) << glibc.path << " vs " << ours[0];

  // readelf's version definitions (not the symbols' versions, nor those
  // libc needs from ld.so): the newest numbered GLIBC_ one.
  const auto readelf = testing::run_command(
      {"/usr/bin/env", "LC_ALL=C", "/usr/bin/readelf", "-V", "-W", glibc.path});
  ASSERT_EQ(readelf.exit_code, 0) << readelf.err;
  std::string newest;
  bool in_definitions = false;
  std::istringstream lines(readelf.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("Version ")) {
      in_definitions = line.starts_with("Version definition section");
    }
    const auto at = line.find("Name: GLIBC_");
    if (!in_definitions || at == std::string::npos) {
      continue;
    }
    const std::string number = line.substr(at + 12, line.find_first_of(" \t", at + 12) - at - 12);
    if (number.find_first_not_of("0123456789.") == std::string::npos &&
        (newest.empty() || common::compare_versions(newest, number).value_or(0) < 0)) {
      newest = number;
    }
  }
  EXPECT_EQ(glibc.version, newest);
  // No newer than the glibc this process reports itself.
  EXPECT_LE(common::compare_versions(glibc.version, gnu_get_libc_version()).value_or(1), 0);
}

// The version is the numerically newest GLIBC_x.y (2.10 after 2.9, which
// text would put first); GLIBC_PRIVATE and names that are not plain
// release numbers count for nothing. The libc.so.6 LD_LIBRARY_PATH gives
// the interpreter is the one read.
TEST(LibraryLookup, TheGlibcVersionIsTheNumericallyNewestGlibcVersionDefined) {
  TempDir dir;
  const fs::path base = fs::canonical(dir.path());
  const fs::path python = base / "env" / "bin" / "python3.11";
  build_interpreter(python);
  const fs::path script = dir.write("libc.map",
                                    "GLIBC_2.2.5 { global: f_225; local: *; };\n"
                                    "GLIBC_2.9 { global: f_29; } GLIBC_2.2.5;\n"
                                    "GLIBC_2.10 { global: f_210; } GLIBC_2.9;\n"
                                    "GLIBC_2.50beta { global: f_250; } GLIBC_2.10;\n"
                                    "GLIBC_PRIVATE { global: f_private; };\n");
  const fs::path fake = base / "fake" / "libc.so.6";
  testing::build_shared_library(
      fake,
      "int f_225(void) { return 0; }\nint f_29(void) { return 0; }\n"
      "int f_210(void) { return 0; }\nint f_250(void) { return 0; }\n"
      "int f_private(void) { return 0; }\n",
      {"-Wl,-soname,libc.so.6", "-Wl,--version-script," + script.string(), "-nostdlib"});
  loader::ElfCache elf_cache;
  const facts::Environment environment = {{"LD_LIBRARY_PATH", fake.parent_path().string()}};
  const auto glibc = glibc_facts(env_with_python(python), environment, k_no_cache, elf_cache);
  EXPECT_EQ(glibc.path, fake);
  EXPECT_EQ(glibc.version, "2.10");
  EXPECT_EQ(glibc.problem, "");

  // A libc.so.6 that defines no GLIBC_ version (musl's, a stub) has none.
  const fs::path stub = base / "stub" / "libc.so.6";
  testing::build_shared_library(stub, "int stub(void) { return 0; }\n",
                                {"-Wl,-soname,libc.so.6", "-nostdlib"});
  const auto none =
      glibc_facts(env_with_python(python), {{"LD_LIBRARY_PATH", stub.parent_path().string()}},
                  k_no_cache, elf_cache);
  EXPECT_EQ(none.path, stub);
  EXPECT_EQ(none.version, "");
  EXPECT_FALSE(none.problem.empty());
}

}  // namespace
}  // namespace envcontract::probes
