// Our resolver against the real dynamic loader: libraries with RPATH,
// RUNPATH and $ORIGIN layouts, missing and present dependencies, versioned
// and missing symbols, wrong-class candidates. For each case the verdict of
// dlopen(RTLD_NOW) (and ldd's "not found") must match ours.
#include "loader/library_resolver.hpp"

#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "loader/elf_file.hpp"
#include "loader/symbol_resolution.hpp"
#include "process/small_files.hpp"
#include "tests/support/compile.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::loader {
namespace {

namespace fs = std::filesystem;

struct Verdicts {
  std::string loader;  // "ok" or dlerror()
  LinkClosure closure;
  SymbolReport symbols;
  bool ours_loads() const {
    return closure.missing.empty() && symbols.unresolved.empty() &&
           symbols.missing_versions.empty();
  }
};

class ResolverVersusLoader : public ::testing::Test {
 public:
  fs::path dir(const std::string& name) const { return m_dir.path() / name; }

  void library(const std::string& path, const std::string& source,
               std::vector<std::string> arguments = {}) {
    const std::string soname = fs::path(path).filename().string();
    arguments.insert(arguments.begin(), "-Wl,-soname," + soname);
    testing::build_shared_library(dir(path), source, arguments);
  }

  Verdicts compare(const std::string& path, const std::string& ld_library_path = "") {
    Verdicts verdicts;
    const auto run = testing::run_command(
        {"/usr/bin/env", "LD_LIBRARY_PATH=" + ld_library_path, DLOPEN_CHECK_PATH, dir(path)});
    verdicts.loader = run.out.substr(0, run.out.find('\n'));
    SearchEnvironment search;
    search.cache = m_cache;
    search.ld_library_path = split_search_path(ld_library_path);
    verdicts.closure = resolve_closure(dir(path), DLOPEN_CHECK_PATH, search, m_elf_files);
    verdicts.symbols = resolve_symbols(verdicts.closure);
    EXPECT_EQ(verdicts.loader == "ok", verdicts.ours_loads())
        << path << ": the loader says '" << verdicts.loader << "'";
    return verdicts;
  }

  // ldd's "=> not found" names, for agreement on missing libraries.
  std::vector<std::string> ldd_not_found(const std::string& path,
                                         const std::string& ld_library_path = "") {
    const auto run = testing::run_command(
        {"/usr/bin/env", "LD_LIBRARY_PATH=" + ld_library_path, "/usr/bin/ldd", dir(path)});
    std::vector<std::string> names;
    std::istringstream lines(run.out);
    for (std::string line; std::getline(lines, line);) {
      const auto arrow = line.find(" => not found");
      if (arrow != std::string::npos) {
        names.push_back(
            line.substr(line.find_first_not_of(" \t"), arrow - line.find_first_not_of(" \t")));
      }
    }
    return names;
  }

  static std::vector<std::string> missing_names(const Verdicts& verdicts) {
    std::vector<std::string> names;
    for (const auto& miss : verdicts.closure.missing) {
      names.push_back(miss.name);
    }
    return names;
  }

  // Our closure of `path` alone (no executable), with the host's cache.
  LinkClosure closure_of(const std::string& path, SearchEnvironment search = {}) {
    search.cache = m_cache;
    return resolve_closure(dir(path), {}, search, m_elf_files);
  }

  testing::TempDir m_dir;
  std::shared_ptr<const LdCache> m_cache = std::make_shared<LdCache>(LdCache::load());
  ElfCache m_elf_files;
};

TEST_F(ResolverVersusLoader, RunpathWithOrigin) {
  library("b/libB.so", "int b(void) { return 2; }");
  library("a/libA.so", "int b(void); int a(void) { return b(); }",
          {"-L" + dir("b").string(), "-lB", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/../b"});
  const auto verdicts = compare("a/libA.so");
  EXPECT_EQ(verdicts.loader, "ok");
  const auto found = std::find_if(verdicts.closure.objects.begin(), verdicts.closure.objects.end(),
                                  [](const auto& object) { return object.needed_as == "libB.so"; });
  ASSERT_NE(found, verdicts.closure.objects.end());
  EXPECT_EQ(found->found_via, "RUNPATH of libA.so");
  EXPECT_EQ(found->path, dir("b/libB.so"));
}

TEST_F(ResolverVersusLoader, MissingDependencyNamesWhoNeedsItAndWhereWeLooked) {
  library("scratch/libnothere.so", "int gone(void) { return 0; }");
  library("c/libC.so", "int gone(void); int c(void) { return gone(); }",
          {"-L" + dir("scratch").string(), "-lnothere", "-Wl,--enable-new-dtags",
           "-Wl,-rpath,$ORIGIN"});
  fs::remove_all(dir("scratch"));
  const auto verdicts = compare("c/libC.so");
  EXPECT_NE(verdicts.loader.find("libnothere.so: cannot open shared object file"),
            std::string::npos);
  ASSERT_EQ(missing_names(verdicts), std::vector<std::string>{"libnothere.so"});
  EXPECT_EQ(ldd_not_found("c/libC.so"), std::vector<std::string>{"libnothere.so"});
  const auto& miss = verdicts.closure.missing[0];
  EXPECT_EQ(miss.needed_by, dir("c/libC.so"));
  ASSERT_FALSE(miss.searched.empty());
  EXPECT_EQ(miss.searched[0], dir("c").string() + " (RUNPATH of libC.so)");
  EXPECT_NE(std::find(miss.searched.begin(), miss.searched.end(), "/etc/ld.so.cache"),
            miss.searched.end());
  EXPECT_EQ(miss.searched.back(), "/usr/lib (system)");
}

TEST_F(ResolverVersusLoader, RpathIsInheritedByDependenciesButRunpathIsNot) {
  library("g/libG.so", "int g(void) { return 7; }");
  library("f/libF.so", "int g(void); int f(void) { return g(); }",
          {"-L" + dir("g").string(), "-lG"});
  library("e-rpath/libE.so", "int f(void); int e(void) { return f(); }",
          {"-L" + dir("f").string(), "-lF", "-Wl,--disable-new-dtags",
           "-Wl,-rpath,$ORIGIN/../f:$ORIGIN/../g"});
  library("e-runpath/libE.so", "int f(void); int e(void) { return f(); }",
          {"-L" + dir("f").string(), "-lF", "-Wl,--enable-new-dtags",
           "-Wl,-rpath,$ORIGIN/../f:$ORIGIN/../g"});
  EXPECT_EQ(compare("e-rpath/libE.so").loader, "ok");
  const auto runpath = compare("e-runpath/libE.so");
  EXPECT_NE(runpath.loader, "ok");
  ASSERT_EQ(missing_names(runpath), std::vector<std::string>{"libG.so"});
  EXPECT_EQ(runpath.closure.missing[0].needed_by, dir("f/libF.so"));
  EXPECT_EQ(ldd_not_found("e-runpath/libE.so"), std::vector<std::string>{"libG.so"});
}

TEST_F(ResolverVersusLoader, LdLibraryPathDecides) {
  library("i/libI.so", "int i(void) { return 9; }");
  library("h/libH.so", "int i(void); int h(void) { return i(); }",
          {"-L" + dir("i").string(), "-lI"});
  EXPECT_EQ(missing_names(compare("h/libH.so")), std::vector<std::string>{"libI.so"});
  const auto with_path = compare("h/libH.so", dir("i").string());
  EXPECT_EQ(with_path.loader, "ok");
  EXPECT_TRUE(with_path.closure.missing.empty());
}

TEST_F(ResolverVersusLoader, MissingVersionNode) {
  m_dir.write("v2.map", "VERS_2 { global: vfunc; local: *; };\n");
  m_dir.write("v1.map", "VERS_1 { global: vfunc; local: *; };\n");
  library("v/libv.so", "int vfunc(void) { return 2; }",
          {"-Wl,--version-script," + dir("v2.map").string()});
  library("u/libU.so", "int vfunc(void); int u(void) { return vfunc(); }",
          {"-L" + dir("v").string(), "-lv", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/../v"});
  // The library is replaced by a build that only has the older version.
  library("v/libv.so", "int vfunc(void) { return 1; }",
          {"-Wl,--version-script," + dir("v1.map").string()});
  const auto verdicts = compare("u/libU.so");
  EXPECT_NE(verdicts.loader.find("version `VERS_2' not found"), std::string::npos)
      << verdicts.loader;
  ASSERT_EQ(verdicts.symbols.missing_versions.size(), 1U);
  EXPECT_EQ(verdicts.symbols.missing_versions[0].version, "VERS_2");
  EXPECT_EQ(verdicts.symbols.missing_versions[0].library, "libv.so");
}

TEST_F(ResolverVersusLoader, UndefinedSymbolAndWeakReference) {
  library("x/libx.so", "int xfunc(void) { return 1; }");
  library("w/libW.so",
          "int xfunc(void);\n__attribute__((weak)) int maybe(void);\n"
          "int w(void) { return xfunc() + (maybe ? maybe() : 0); }",
          {"-L" + dir("x").string(), "-lx", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/../x"});
  EXPECT_EQ(compare("w/libW.so").loader, "ok");
  library("x/libx.so", "int other(void) { return 1; }");
  const auto verdicts = compare("w/libW.so");
  EXPECT_NE(verdicts.loader.find("undefined symbol: xfunc"), std::string::npos);
  ASSERT_EQ(verdicts.symbols.unresolved.size(), 1U);
  EXPECT_EQ(verdicts.symbols.unresolved[0].mangled, "xfunc");
  EXPECT_TRUE(verdicts.symbols.unresolved[0].near_misses.empty());
}

TEST_F(ResolverVersusLoader, WrongClassCandidatesAreSkipped) {
  const auto probe = testing::run_command({"/usr/bin/cc", "-m32", "-shared", "-fPIC", "-o",
                                           dir("probe32.so").string(), "-x", "c", "/dev/null"});
  if (probe.exit_code != 0) {
    GTEST_SKIP() << "no 32-bit toolchain (apt install gcc-multilib)";
  }
  library("l64/libL.so", "int l(void) { return 64; }");
  library("l32/libL.so", "int l(void) { return 32; }", {"-m32"});
  library("k/libK.so", "int l(void); int k(void) { return l(); }",
          {"-L" + dir("l64").string(), "-lL"});
  const auto verdicts = compare("k/libK.so", dir("l32").string() + ":" + dir("l64").string());
  EXPECT_EQ(verdicts.loader, "ok");
  const auto found = std::find_if(verdicts.closure.objects.begin(), verdicts.closure.objects.end(),
                                  [](const auto& object) { return object.needed_as == "libL.so"; });
  ASSERT_NE(found, verdicts.closure.objects.end());
  EXPECT_EQ(found->path, dir("l64/libL.so"));
}

TEST_F(ResolverVersusLoader, PlatformTokenIsExpanded) {
  // glibc picks $PLATFORM from the CPU: "haswell" on many Intel machines.
  const std::string platform = host_loader_platform();
  ASSERT_FALSE(platform.empty());
  library("p/" + platform + "/libQ.so", "int q(void) { return 1; }");
  library("p/libP.so", "int q(void); int p(void) { return q(); }",
          {"-L" + dir("p/" + platform).string(), "-lQ", "-Wl,--enable-new-dtags",
           "-Wl,-rpath,$ORIGIN/$PLATFORM"});
  EXPECT_EQ(compare("p/libP.so").loader, "ok");
  // A directory named for another platform is not searched, by either.
  const std::string other = platform == "x86_64" ? "haswell" : "x86_64";
  library("o/" + other + "/libR.so", "int r(void) { return 1; }");
  library("o/libO.so", "int r(void); int o(void) { return r(); }",
          {"-L" + dir("o/" + other).string(), "-lR", "-Wl,--enable-new-dtags",
           "-Wl,-rpath,$ORIGIN/$PLATFORM"});
  EXPECT_NE(compare("o/libO.so").loader, "ok");
}

TEST(LdCache, ReadsTheHostsCache) {
  const auto cache = LdCache::load();
  EXPECT_EQ(cache.problem(), "");
  EXPECT_GT(cache.size(), 10U);
  const auto libc = cache.lookup("libc.so.6");
  ASSERT_FALSE(libc.empty());
  EXPECT_TRUE(fs::exists(libc[0]));
  testing::TempDir dir;
  dir.write("broken.cache", "glibc-ld.so.cache1.1\xff\xff\xff\x7f");
  EXPECT_NE(LdCache::load(dir.path() / "broken.cache").problem(), "");
  EXPECT_NE(LdCache::load(dir.path() / "missing.cache").problem(), "");
}

}  // namespace
}  // namespace envcontract::loader

namespace envcontract::loader {
namespace {

// Within a scan a library is parsed once for every env that loads it, and
// read again when it changes; the scanner's clear() forgets all of them.
TEST(ElfCache, ParsesOnceUntilTheFileChangesOrIsCleared) {
  testing::TempDir dir;
  const auto path = dir.path() / "libonce.so";
  testing::build_shared_library(path, "int once(void) { return 1; }");
  ElfCache cache;
  const auto first = cache.get(path);
  ASSERT_TRUE(first.ok());
  const auto again = cache.get(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(first.value().get(), again.value().get());  // the same parsed file
  // Rebuilt with another size: parsed anew.
  testing::build_shared_library(path, "int once(void) { return 1; } int more(void) { return 2; }");
  const auto rebuilt = cache.get(path);
  ASSERT_TRUE(rebuilt.ok());
  EXPECT_NE(first.value().get(), rebuilt.value().get());
  EXPECT_EQ(rebuilt.value()->definitions("more").size(), 1U);
  EXPECT_EQ(cache.size(), 1U);
  cache.clear();
  EXPECT_EQ(cache.size(), 0U);
  // A holder keeps its file alive past clear().
  EXPECT_EQ(rebuilt.value()->definitions("once").size(), 1U);
}

// Hard links to one library (conda's package cache links every env's copy
// to its own; trees copied with `cp -al`) are parsed once and held once,
// whatever path names them; a copy of the same bytes is a file of its own.
TEST(ElfCache, HardLinksToOneFileAreParsedAndHeldOnce) {
  testing::TempDir dir;
  const auto path = dir.path() / "libshared.so";
  testing::build_shared_library(path, "int shared(void) { return 1; }");
  fs::create_directories(dir.path() / "env2/lib");
  const auto linked = dir.path() / "env2/lib/libshared.so";
  fs::create_hard_link(path, linked);
  const auto copied = dir.path() / "libcopy.so";
  fs::copy_file(path, copied);
  ElfCache cache;
  const auto first = cache.get(path);
  ASSERT_TRUE(first.ok());
  const std::uint64_t one = cache.bytes_held();
  EXPECT_GT(one, 0U);
  const auto other_name = cache.get(linked);
  ASSERT_TRUE(other_name.ok());
  EXPECT_EQ(first.value().get(), other_name.value().get());
  EXPECT_EQ(cache.bytes_held(), one);
  EXPECT_EQ(cache.size(), 2U);  // both names are known
  const auto copy = cache.get(copied);
  ASSERT_TRUE(copy.ok());
  EXPECT_NE(first.value().get(), copy.value().get());
  EXPECT_EQ(cache.bytes_held(), 2 * one);
  // One name's file rebuilt: parsed anew for it; the other name is still the
  // old file (read again: unlinking a name changes the inode's change time).
  fs::remove(linked);
  testing::build_shared_library(linked,
                                "int shared(void) { return 1; } int more(void) { return 2; }");
  const auto rebuilt = cache.get(linked);
  ASSERT_TRUE(rebuilt.ok());
  EXPECT_EQ(rebuilt.value()->definitions("more").size(), 1U);
  const auto old_file = cache.get(path);
  ASSERT_TRUE(old_file.ok());
  EXPECT_TRUE(old_file.value()->definitions("more").empty());
  EXPECT_EQ(old_file.value()->definitions("shared").size(), 1U);
}

// "/nowhere/d0:/nowhere/d1:..." of `count` directories.
std::string search_list(std::size_t count) {
  std::string list;
  for (std::size_t i = 0; i < count; ++i) {
    list += (list.empty() ? "/nowhere/d" : ":/nowhere/d") + std::to_string(i);
  }
  return list;
}

// A RUNPATH of more directories than any real one: the first are searched
// and the closure is said to be incomplete, never complete on a cut list.
TEST_F(ResolverVersusLoader, ASearchListLongerThanAnyRealOneLeavesTheClosureIncomplete) {
  library("scratch/libnothere.so", "int gone(void) { return 0; }");
  library("c/libC.so", "int gone(void); int c(void) { return gone(); }",
          {"-L" + dir("scratch").string(), "-lnothere", "-Wl,--enable-new-dtags",
           "-Wl,-rpath," + search_list(1500)});
  fs::remove_all(dir("scratch"));
  const auto closure = closure_of("c/libC.so");
  EXPECT_EQ(closure.incomplete,
            "the RUNPATH of libC.so names more than 1024 directories: only the first are "
            "searched, so what it loads is unknown");
  EXPECT_TRUE(closure.missing.empty()) << "a search cut short finds no missing library";

  // LD_LIBRARY_PATH likewise.
  SearchEnvironment search;
  search.ld_library_path = split_search_path(search_list(3000));
  EXPECT_EQ(search.ld_library_path.size(), k_max_search_list_dirs + 1);
  library("e/libE.so", "int e(void) { return 5; }");
  EXPECT_EQ(closure_of("e/libE.so", search).incomplete,
            "LD_LIBRARY_PATH names more than 1024 directories: only the first are searched, so "
            "what it loads is unknown");
  search.ld_library_path = split_search_path(search_list(1024));
  EXPECT_EQ(closure_of("e/libE.so", search).incomplete, "");
}

// `count` missing libraries as DT_NEEDED entries of `library` (one stub
// without a soname, linked under `count` names, then removed).
void needing_missing(ResolverVersusLoader& test, const std::string& library, int count,
                     const std::string& runpath) {
  const std::string scratch = "scratch-" + std::to_string(count);
  testing::build_shared_library(test.dir(scratch + "/libstub.so"), "int stub(void) { return 0; }");
  std::vector<std::string> arguments = {"-L" + test.dir(scratch).string(), "-Wl,--no-as-needed",
                                        "-Wl,--enable-new-dtags", "-Wl,-rpath," + runpath};
  for (int i = 0; i < count; ++i) {
    fs::create_symlink("libstub.so", test.dir(scratch + "/libn" + std::to_string(i) + ".so"));
    arguments.push_back("-ln" + std::to_string(i));
  }
  test.library(library, "int d(void) { return 4; }", arguments);
  fs::remove_all(test.dir(scratch));
}

// Sixty missing libraries, each looked for in 2,048 directories
// (LD_LIBRARY_PATH and RUNPATH): the resolution stops at its bound of steps.
// Seventy missing through a short search: at the bound of misses kept.
TEST_F(ResolverVersusLoader, ResolutionStopsAtItsBoundsOfStepsAndMisses) {
  // Another version of two of them in the first directory searched: the
  // first miss is given the hint, the 41st (past the first 16) is not.
  fs::create_directories(dir("hints"));
  for (const char* name : {"libn0.so.1", "libn40.so.1"}) {
    std::ofstream(dir("hints") / name) << "";
  }
  needing_missing(*this, "d/libD.so", 60, search_list(1024));
  SearchEnvironment search;
  search.ld_library_path = split_search_path(dir("hints").string() + ":" + search_list(1023));
  const auto closure = closure_of("d/libD.so", search);
  EXPECT_EQ(closure.incomplete,
            "resolving it took more than 100000 steps (libraries needed and files tried), so "
            "what it loads is unknown");
  ASSERT_GT(closure.missing.size(), 41U);
  EXPECT_LT(closure.missing.size(), 60U);
  EXPECT_EQ(closure.missing[0].other_versions, std::vector<fs::path>{dir("hints/libn0.so.1")});
  EXPECT_EQ(closure.missing[40].name, "libn40.so");
  EXPECT_TRUE(closure.missing[40].other_versions.empty());
  // What each miss keeps of where it was looked for is bounded too.
  EXPECT_EQ(closure.missing[0].searched.size(), 257U);
  EXPECT_EQ(closure.missing[0].searched.back(), "(and more places, not listed)");

  needing_missing(*this, "e/libE.so", 70, "$ORIGIN");
  const auto many = closure_of("e/libE.so");
  EXPECT_EQ(many.incomplete,
            "more than 64 of the libraries it needs are missing, so what it loads is unknown");
  EXPECT_EQ(many.missing.size(), 64U);
}

// What one closure's parsed objects hold is bounded (sparse files of 200 MiB
// sections each cost their owner no disk); and so is what the cache keeps,
// past which a file is returned but not kept.
TEST_F(ResolverVersusLoader, WhatAClosureAndTheCacheHoldIsBounded) {
  library("a/libA.so", "int a(void) { return 1; }");
  EXPECT_EQ(closure_of("a/libA.so").incomplete, "");
  SearchEnvironment search;
  search.max_closure_bytes = 64 * 1024;  // libA fits, libc does not
  const auto closure = closure_of("a/libA.so", search);
  EXPECT_EQ(closure.incomplete,
            "the libraries it loads hold more than 64 KiB of symbol tables, so what it loads is "
            "unknown");

  library("b/libB.so", "int b(void) { return 2; }");
  const auto a = ElfFile::open(dir("a/libA.so"));
  ASSERT_TRUE(a.ok());
  ElfCache small(a.value()->bytes_held() + 16);
  ASSERT_TRUE(small.get(dir("a/libA.so")).ok());
  EXPECT_EQ(small.bytes_held(), a.value()->bytes_held());
  const auto b = small.get(dir("b/libB.so"));
  ASSERT_TRUE(b.ok()) << "a file past the bound is still read";
  EXPECT_EQ(small.size(), 1U) << "but not kept";
  EXPECT_EQ(small.bytes_held(), a.value()->bytes_held());
  small.clear();
  EXPECT_EQ(small.bytes_held(), 0U);
}

// A crafted file met while resolving is a hostile file of the env being
// read, each time an env meets it, not only when it is first parsed.
TEST(ElfCache, ACraftedFileIsReportedToEachReaderThatMeetsIt) {
  testing::TempDir dir;
  const auto path = dir.path() / "libcrafted.so";
  std::string source;
  for (int i = 0; i < 300; ++i) {
    source += "int crafted_" + std::to_string(i) + "(void) { return " + std::to_string(i) + "; }\n";
  }
  testing::build_shared_library(path, source);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  in.close();
  // Every NUL of every string table but each table's last: names run on.
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(bytes.data());
  for (unsigned i = 0; i < header->e_shnum; ++i) {
    const auto& section = reinterpret_cast<const Elf64_Shdr*>(bytes.data() + header->e_shoff)[i];
    if (section.sh_type == SHT_STRTAB && section.sh_size > 1) {
      std::replace(
          bytes.begin() + static_cast<std::ptrdiff_t>(section.sh_offset),
          bytes.begin() + static_cast<std::ptrdiff_t>(section.sh_offset + section.sh_size - 1),
          '\0', 'x');
    }
  }
  dir.write("libcrafted.so", bytes);
  ElfCache cache;
  for (int reader = 0; reader < 2; ++reader) {
    process::FileProblemLog log;
    EXPECT_FALSE(cache.get(path).ok());
    const auto problems = log.take();
    ASSERT_EQ(problems.size(), 1U) << "reader " << reader;
    EXPECT_EQ(problems[0].path, path);
    EXPECT_TRUE(problems[0].problem.starts_with(
        "is refused as a shared library: its symbol and library names add up"))
        << problems[0].problem;
  }
}

}  // namespace
}  // namespace envcontract::loader
