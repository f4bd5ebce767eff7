// Loader-faithful linkage of every demo env, as the demo host's README says.
#include "probes/linkage_facts.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "contracts/host_judgement.hpp"
#include "discovery/discovery.hpp"
#include "probes/host_facts.hpp"
#include "probes/static_facts.hpp"
#include "tests/support/compile.hpp"
#include "tests/support/contract_text.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/system_venv.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::probes {
namespace {

namespace fs = std::filesystem;
using testing::demo_host;

struct EnvLinkage {
  LinkageFacts activated;
  LinkageFacts bare;
};

EnvLinkage linkage_of(const std::string& relative_prefix) {
  static loader::ElfCache elf_files;
  static const auto ld_cache = std::make_shared<const loader::LdCache>(loader::LdCache::load());
  const auto env = discovery::describe_prefix(demo_host() / relative_prefix).value();
  const auto sites = gather_static_facts(env).site_packages;
  const auto activation = activate(env);
  return {gather_linkage_facts(env, sites, activation.activated, Activation::activated, ld_cache,
                               elf_files),
          gather_linkage_facts(env, sites, activation.bare, Activation::bare, ld_cache, elf_files)};
}

bool loads_library(const LibraryLinkage& library, const std::string& name) {
  return std::any_of(library.closure.begin(), library.closure.end(),
                     [&](const auto& link) { return link.name == name; });
}

const LibraryLinkage& library(const LinkageFacts& facts, const std::string& suffix) {
  for (const auto& library : facts.libraries) {
    if (library.path.string().ends_with(suffix)) {
      return library;
    }
  }
  static const LibraryLinkage missing;
  ADD_FAILURE() << "no library ending in " << suffix;
  return missing;
}

TEST(LinkageFacts, AbiSignatureMismatchOfTheVendorPlugin) {
  const auto facts = linkage_of("miniconda3/envs/torch-fl-hf-test");
  const auto& plugin = library(facts.activated, "torch_xmlir/libxpytorch.so");
  EXPECT_FALSE(plugin.loads());
  ASSERT_EQ(plugin.symbols.unresolved.size(), 1U);
  const auto& symbol = plugin.symbols.unresolved[0];
  EXPECT_EQ(symbol.mangled, "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib");
  EXPECT_EQ(symbol.demangled,
            "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)");
  ASSERT_EQ(symbol.near_misses.size(), 1U);
  const auto& near_miss = symbol.near_misses.front();
  EXPECT_EQ(near_miss.kind, "parameters");
  EXPECT_EQ(near_miss.mangled, "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_jb");
  EXPECT_EQ(near_miss.demangled,
            "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, unsigned "
            "int, bool)");
  EXPECT_EQ(near_miss.library.filename(), "libc10_cuda.so");
  EXPECT_EQ(near_miss.differences,
            std::vector<std::string>{
                "4th parameter: int (wanted) vs unsigned int (defined in libc10_cuda.so)"});
}

TEST(LinkageFacts, MissingLibbkclWithWhoNeedsItAndWhereWeLooked) {
  for (const char* env :
       {"miniconda3/envs/torch-fl-hf-test", "miniconda3/envs/torch-fl-xpu-py310"}) {
    const auto facts = linkage_of(env);
    const auto& torch_fl = library(facts.activated, "torch_fl/lib/libtorch_fl.so");
    ASSERT_EQ(torch_fl.missing.size(), 1U) << env;
    const auto& miss = torch_fl.missing[0];
    EXPECT_EQ(miss.name, "libbkcl.so");
    EXPECT_EQ(miss.needed_by.filename(), "libtorch_fl.so");
    const std::string xpu_lib = (demo_host() / "usr/local/xpu/lib").string();
    // In the loader's order: LD_LIBRARY_PATH (set by activate.d), then the
    // library's own RUNPATH, then the cache and the system dirs.
    ASSERT_GE(miss.searched.size(), 4U);
    EXPECT_EQ(miss.searched[0], xpu_lib + " (LD_LIBRARY_PATH)");
    const std::string site = torch_fl.path.parent_path().parent_path().parent_path().string();
    EXPECT_EQ(miss.searched[2], site + "/torch/lib (RUNPATH of libtorch_fl.so)");
    EXPECT_TRUE(miss.other_versions.empty());
    // Its symbols were not judged: the missing library is the cause.
    EXPECT_TRUE(torch_fl.symbols.unresolved.empty());
  }
}

TEST(LinkageFacts, ADifferentVersionOfTheRuntimeExists) {
  const auto facts = linkage_of("miniconda3/envs/torch-xpu-py310");
  const auto& plugin = library(facts.activated, "torch_xmlir/libxpytorch.so");
  ASSERT_EQ(plugin.missing.size(), 1U);
  EXPECT_EQ(plugin.missing[0].name, "libxpurt.so.2");
  EXPECT_EQ(plugin.missing[0].other_versions,
            std::vector<fs::path>{demo_host() / "usr/local/xpu/lib/libxpurt.so.1"});
}

TEST(LinkageFacts, UndefinedSymbolWithoutNearMiss) {
  const auto facts = linkage_of("venvs/xpu210v");
  const auto& plugin = library(facts.activated, "torch_xmlir/libxpytorch.so");
  ASSERT_EQ(plugin.symbols.unresolved.size(), 1U);
  const auto& symbol = plugin.symbols.unresolved[0];
  EXPECT_EQ(symbol.mangled, "_ZN2at4_ops5triu_10redispatchEN3c1014DispatchKeySetERNS_6TensorEl");
  EXPECT_EQ(symbol.demangled,
            "at::_ops::triu_::redispatch(c10::DispatchKeySet, at::Tensor&, long)");
  // at::_ops::tril_ is defined, but it is another function: no near miss.
  EXPECT_TRUE(symbol.near_misses.empty());
}

TEST(LinkageFacts, ProvisionedEnvLoadsCleanlyAndHasNoCudaLinkage) {
  const auto facts = linkage_of("miniconda3/envs/torch-fl-cpu");
  for (const auto& library : facts.activated.libraries) {
    EXPECT_TRUE(library.loads()) << library.path;
  }
  const auto& torch_fl = library(facts.activated, "torch_fl/lib/libtorch_fl.so");
  EXPECT_FALSE(loads_library(torch_fl, "libtorch_cuda.so"));
  EXPECT_TRUE(loads_library(torch_fl, "libxpurt.so.1"));
}

TEST(LinkageFacts, CudaTorchReachesLibtorchCuda) {
  const auto facts = linkage_of("miniconda3/envs/torch-fl-hf-test");
  const auto& torch = library(facts.activated, "torch/lib/libtorch.so");
  EXPECT_TRUE(loads_library(torch, "libtorch_cuda.so"));
  // Through the closure: the vendor plugin reaches libc10.so via libc10_cuda.so.
  const auto& plugin = library(facts.activated, "torch_xmlir/libxpytorch.so");
  const auto link = std::find_if(plugin.closure.begin(), plugin.closure.end(),
                                 [](const auto& entry) { return entry.name == "libc10.so"; });
  ASSERT_NE(link, plugin.closure.end());
  EXPECT_EQ(link->needed_by, "libc10_cuda.so");
}

TEST(LinkageFacts, ActivationArtifactShowsInLinkageToo) {
  const auto facts = linkage_of("miniconda3/envs/torch-fl-activate");
  EXPECT_TRUE(library(facts.activated, "torch_fl/lib/libtorch_fl.so").loads());
  const auto& bare = library(facts.bare, "torch_fl/lib/libtorch_fl.so");
  ASSERT_EQ(bare.missing.size(), 1U);
  EXPECT_EQ(bare.missing[0].name, "libxpu_fl_runtime.so");
}

// A container's rootfs scanned with --root: its envs' libraries resolve as
// the rootfs' loader would, through its own directories and ld.so.cache,
// with its interpreter (bin/python -> /usr/bin/python3 is the rootfs'). A
// vendor library only the rootfs has is found there; the same tree read as
// a plain directory of envs (no os-release) is judged by the host's loader.
TEST(LinkageFacts, InsideARootfsLibrariesResolveInItsOwnTree) {
  testing::TempDir dir;
  testing::open_to_all(dir.path());
  const auto rootfs = dir.path() / "rootfs";
  const auto libdir = rootfs / "usr/lib/x86_64-linux-gnu";
  const auto vendor_dir = rootfs / "opt/vendor/lib";
  fs::create_directories(libdir);
  fs::create_directories(vendor_dir);
  fs::create_directories(rootfs / "usr/bin");
  dir.write("rootfs/etc/os-release", "ID=debian\n");
  dir.write("rootfs/etc/ld.so.conf", "/opt/vendor/lib\n");
  fs::copy_file(fs::canonical("/usr/bin/python3"), rootfs / "usr/bin/python3");
  testing::build_shared_library(libdir / "libvendor.so.1", "int vendor_fn(void) { return 1; }",
                                {"-nostdlib", "-Wl,-soname,libvendor.so.1"});
  testing::build_shared_library(vendor_dir / "libvendor2.so.1",
                                "int vendor2_fn(void) { return 2; }",
                                {"-nostdlib", "-Wl,-soname,libvendor2.so.1"});
  ASSERT_FALSE(fs::exists("/usr/lib/x86_64-linux-gnu/libvendor.so.1"));
  // The rootfs' own cache, as its image build leaves it (ldconfig chroots: root only).
  const bool with_cache =
      ::geteuid() == 0 && fs::exists("/sbin/ldconfig") &&
      testing::run_command({"/sbin/ldconfig", "-r", rootfs.string()}).exit_code == 0;
  const auto prefix = testing::make_system_venv(rootfs / "opt/venvs/app");
  const auto site = testing::system_venv_site(prefix);
  std::vector<std::string> link = {"-nostdlib", "-L" + libdir.string(), "-l:libvendor.so.1"};
  if (with_cache) {
    link.insert(link.end(), {"-L" + vendor_dir.string(), "-l:libvendor2.so.1"});
  }
  testing::build_shared_library(site / "ext.so",
                                with_cache
                                    ? "int vendor_fn(void); int vendor2_fn(void);\n"
                                      "int ext(void) { return vendor_fn() + vendor2_fn(); }"
                                    : "int vendor_fn(void);\nint ext(void) { return vendor_fn(); }",
                                link);
  for (auto path = site; path != dir.path(); path = path.parent_path()) {
    testing::open_to_all(path);
  }

  const auto ext_of = [&] {
    HostFactsOptions options;
    options.discovery.roots = {rootfs};
    const auto host = gather_host_facts(options, std::make_shared<FactCaches>());
    EXPECT_EQ(host.envs.size(), 1U);
    return host.envs.empty() ? LibraryLinkage{} : library(host.envs[0].linkage, "/ext.so");
  };
  const auto linked = ext_of();
  const auto path_of = [&](const std::string& name) {
    for (const auto& link_entry : linked.closure) {
      if (link_entry.name == name) {
        return link_entry.path;
      }
    }
    return std::string();
  };
  EXPECT_EQ(path_of("libvendor.so.1"), (libdir / "libvendor.so.1").string());
  if (with_cache) {
    EXPECT_EQ(path_of("libvendor2.so.1"), vendor_dir / "libvendor2.so.1");
  }
  for (const auto& missing : linked.missing) {
    EXPECT_NE(missing.name.substr(0, 9), "libvendor") << missing.name << " is in the rootfs";
  }
  EXPECT_TRUE(linked.symbols.unresolved.empty());

  fs::remove(rootfs / "etc/os-release");
  const auto on_host = ext_of();
  EXPECT_TRUE(std::any_of(on_host.missing.begin(), on_host.missing.end(), [](const auto& missing) {
    return missing.name == "libvendor.so.1";
  })) << "a directory of envs is read with the host's loader";
}

// A library whose RUNPATH names more directories than any real one: its
// closure is cut at the bound, and neither the env nor a linkage check on
// that library is compliant on what was left unresolved.
TEST(LinkageFacts, AClosureCutShortByABoundIsNoEvidence) {
  testing::TempDir dir;
  const auto prefix = testing::make_system_venv(dir.path() / "venv");
  const auto site = testing::system_venv_site(prefix);
  std::string runpath;
  for (int i = 0; i < 1500; ++i) {
    runpath += (runpath.empty() ? "/nowhere/d" : ":/nowhere/d") + std::to_string(i);
  }
  testing::build_shared_library(dir.path() / "scratch/libforbidden.so",
                                "int forbidden(void) { return 0; }");
  testing::build_shared_library(site / "ext.so",
                                "int forbidden(void); int ext(void) { return forbidden(); }",
                                {"-L" + (dir.path() / "scratch").string(), "-lforbidden",
                                 "-Wl,--enable-new-dtags", "-Wl,-rpath," + runpath});
  fs::remove_all(dir.path() / "scratch");

  HostFactsOptions options;
  options.discovery.prefixes = {prefix};
  const auto host = gather_host_facts(options, std::make_shared<FactCaches>());
  ASSERT_EQ(host.envs.size(), 1U);
  const auto& env = host.envs[0];
  const auto& ext = library(env.linkage, "/ext.so");
  const std::string cut =
      "the RUNPATH of ext.so names more than 1024 directories: only the first are searched, so "
      "what it loads is unknown";
  EXPECT_EQ(ext.error, cut);
  EXPECT_FALSE(ext.loads());
  EXPECT_TRUE(
      std::any_of(env.refused_files.begin(), env.refused_files.end(), [&](const auto& problem) {
        return problem.path == site / "ext.so" &&
               problem.problem == "is not fully resolved: " + cut;
      }));

  const auto loaded = testing::load_checks(
      "  - {id: no-forbidden, kind: linkage, library: \"{site}/ext.so\", "
      "must_not_need: [libforbidden.so]}\n");
  ASSERT_TRUE(loaded.contract) << testing::joined(loaded);
  const auto judged = contracts::judge_host(*loaded.contract, host);
  ASSERT_EQ(judged.envs.size(), 1U);
  EXPECT_EQ(judged.envs[0].judgement.verdict, contracts::EnvVerdict::error);
  bool linkage_checked = false;
  for (const auto& check : judged.envs[0].judgement.checks) {
    if (check.id == "no-forbidden") {
      linkage_checked = true;
      EXPECT_EQ(check.status, contracts::CheckStatus::error);
      ASSERT_TRUE(check.diagnosis.has_value());
      EXPECT_EQ(check.diagnosis->summary, "ext.so could not be analysed: " + cut);
    }
  }
  EXPECT_TRUE(linkage_checked);
}

// An env whose activation sets an LD_LIBRARY_PATH of more directories than
// the resolver searches: a library a `libraries` check forbids is then
// neither found nor missing, and the check has no verdict (it passed,
// "absent", on a search cut short).
TEST(LinkageFacts, ALookupCutShortIsNeitherPresentNorAbsent) {
  testing::TempDir dir;
  const auto prefix = testing::make_system_venv(dir.path() / "venv");
  std::string dirs;
  for (int i = 0; i < 1100; ++i) {
    dirs += (dirs.empty() ? "/nowhere/d" : ":/nowhere/d") + std::to_string(i);
  }
  std::ofstream(prefix / "bin/activate", std::ios::app)
      << "export LD_LIBRARY_PATH=" << dirs << "\n";
  const auto loaded =
      testing::load_checks("  - {id: no-foo, kind: libraries, absent: [libfoo-forbidden.so.1]}\n");
  ASSERT_TRUE(loaded.contract) << testing::joined(loaded);

  HostFactsOptions options;
  options.discovery.prefixes = {prefix};
  options.request.library_names = {"libfoo-forbidden.so.1"};
  const auto host = gather_host_facts(options, std::make_shared<FactCaches>());
  ASSERT_EQ(host.envs.size(), 1U);
  ASSERT_EQ(host.envs[0].library_lookups.size(), 1U);
  const std::string cut =
      "LD_LIBRARY_PATH names more than 1024 directories: only the first are searched, so what it "
      "loads is unknown";
  EXPECT_EQ(host.envs[0].library_lookups[0].incomplete, cut);
  const auto judged = contracts::judge_host(*loaded.contract, host);
  ASSERT_EQ(judged.envs.size(), 1U);
  EXPECT_NE(judged.envs[0].judgement.verdict, contracts::EnvVerdict::compliant);
  bool checked = false;
  for (const auto& check : judged.envs[0].judgement.checks) {
    if (check.id == "no-foo") {
      checked = true;
      EXPECT_EQ(check.status, contracts::CheckStatus::error);
      ASSERT_TRUE(check.diagnosis.has_value());
      EXPECT_EQ(check.diagnosis->summary,
                "where the loader finds libfoo-forbidden.so.1 is unknown: " + cut);
    }
  }
  EXPECT_TRUE(checked);
}

}  // namespace
}  // namespace envcontract::probes
