// Static facts of each demo env, read from files without running env code.
#include "probes/static_facts.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "discovery/discovery.hpp"
#include "probes/distributions.hpp"
#include "process/small_files.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::probes {
namespace {

namespace fs = std::filesystem;
using testing::demo_host;

StaticFacts facts_of(const std::string& relative_prefix) {
  const auto env = discovery::describe_prefix(demo_host() / relative_prefix);
  EXPECT_TRUE(env.has_value()) << relative_prefix;
  return env ? gather_static_facts(*env) : StaticFacts{};
}

bool contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

const Distribution* find_distribution(const StaticFacts& facts, const std::string& name,
                                      const std::string& source) {
  for (const auto& distribution : facts.distributions) {
    if (distribution.normalized == name && distribution.source == source) {
      return &distribution;
    }
  }
  return nullptr;
}

// The static facts of a venv made in `dir` whose site-packages holds
// `site_files` (path under site-packages, contents).
StaticFacts facts_of_venv(const testing::TempDir& dir,
                          const std::vector<std::pair<std::string, std::string>>& site_files) {
  dir.write("env/pyvenv.cfg", "home = /nonexistent/bin\nversion = 3.11.7\n");
  dir.write("env/bin/python", "");
  for (const auto& [path, contents] : site_files) {
    dir.write("env/lib/python3.11/site-packages/" + path, contents);
  }
  const auto env = discovery::describe_prefix(dir.path() / "env");
  EXPECT_TRUE(env.has_value());
  return env ? gather_static_facts(*env) : StaticFacts{};
}

TEST(StaticFacts, CudaTorchOfTheHfTestEnv) {
  const auto facts = facts_of("miniconda3/envs/torch-fl-hf-test");
  ASSERT_TRUE(facts.torch.present);
  EXPECT_EQ(facts.torch.version, "2.10.0+cu129");
  EXPECT_EQ(facts.torch.base, "2.10.0");
  EXPECT_EQ(facts.torch.local, "cu129");
  EXPECT_EQ(facts.torch.cuda, std::optional<std::string>("12.9"));
  EXPECT_EQ(facts.torch.hip, std::nullopt);
  EXPECT_EQ(facts.torch.distribution_version, "2.10.0+cu129");
  EXPECT_TRUE(contains(facts.torch.libraries, "libtorch_cuda.so"));
  EXPECT_TRUE(contains(facts.torch.libraries, "libc10_cuda.so"));
  EXPECT_TRUE(facts.module_files.contains("torch_xmlir"));
  EXPECT_TRUE(facts.module_files.contains("torch_fl"));
  EXPECT_EQ(facts.torch.location,
            demo_host() / "miniconda3/envs/torch-fl-hf-test/lib/python3.10/site-packages/torch");
}

TEST(StaticFacts, CpuTorchAndFlagTreeOfTheProvisionedEnv) {
  const auto facts = facts_of("miniconda3/envs/torch-fl-cpu");
  EXPECT_EQ(facts.torch.version, "2.10.0+cpu");
  EXPECT_EQ(facts.torch.cuda, std::nullopt);
  EXPECT_FALSE(contains(facts.torch.libraries, "libtorch_cuda.so"));
  EXPECT_FALSE(facts.module_files.contains("torch_xmlir"));
  ASSERT_TRUE(facts.triton.present);
  EXPECT_EQ(facts.triton.provider, "flagtree");
  EXPECT_EQ(facts.triton.provider_version, "0.7.0+xpu3.6");
  EXPECT_EQ(facts.triton.version, std::optional<std::string>("3.6.0"));
  EXPECT_EQ(facts.triton.backends, std::vector<std::string>{"xpu"});
  EXPECT_EQ(facts.triton.providers, std::vector<std::string>{"flagtree"});
}

// Stock triton and FlagTree both claim the `triton` package (top_level.txt);
// the one whose RECORD lists triton/__init__.py wrote the copy imported.
// RECORD's paths are CSV: quoted when they hold a comma, as here.
TEST(StaticFacts, TheTritonProviderIsTheDistributionWhoseRecordOwnsItsInit) {
  testing::TempDir dir;
  const auto facts = facts_of_venv(
      dir, {{"triton/__init__.py", "__version__ = '3.6.0'\n"},
            {"flagtree-0.7.0.dist-info/METADATA", "Name: flagtree\nVersion: 0.7.0\n"},
            {"flagtree-0.7.0.dist-info/top_level.txt", "triton\n"},
            {"flagtree-0.7.0.dist-info/RECORD", "triton/backends/xpu/driver.py,sha256=abc,10\n"},
            {"triton-3.6.0.dist-info/METADATA", "Name: triton\nVersion: 3.6.0\n"},
            {"triton-3.6.0.dist-info/top_level.txt", "triton\n"},
            {"triton-3.6.0.dist-info/RECORD",
             "\"triton/a,b.py\",sha256=abc,10\n\"triton/__init__.py\",sha256=def,20\n"}});
  ASSERT_TRUE(facts.triton.present);
  EXPECT_EQ(facts.triton.providers, (std::vector<std::string>{"flagtree", "triton"}));
  EXPECT_EQ(facts.triton.provider, "triton");
  EXPECT_EQ(facts.triton.provider_version, "3.6.0");
  const auto* stock = find_distribution(facts, "triton", "dist-info");
  ASSERT_NE(stock, nullptr);
  EXPECT_EQ(stock->packages, std::vector<std::string>{"triton"});
}

// Modern build backends write no top_level.txt: RECORD alone names what a
// wheel installs. Only a package's own __init__.py claims the package, not
// one of its subpackages' (stock triton ships triton/backends/nvidia/
// __init__.py too), and a RECORD written with CRLF reads the same.
TEST(StaticFacts, TheTritonProviderIsFoundFromRecordAloneWhateverItsLineEnds) {
  testing::TempDir dir;
  const auto facts = facts_of_venv(
      dir,
      {{"triton/__init__.py", "__version__ = '3.2.0'\n"},
       {"flagtree-0.7.0.dist-info/METADATA", "Name: flagtree\nVersion: 0.7.0\n"},
       {"flagtree-0.7.0.dist-info/RECORD",
        "triton/backends/xpu/__init__.py,sha256=a,1\r\ntriton/__init__.py,sha256=b,2\r\n"
        "flagtree-0.7.0.dist-info/METADATA,sha256=c,3\r\n"},
       {"triton-3.5.0.dist-info/METADATA", "Name: triton\nVersion: 3.5.0\n"},
       {"triton-3.5.0.dist-info/RECORD",
        "triton/backends/nvidia/__init__.py,sha256=d,4\ntriton/language/core.py,sha256=e,5\n"}});
  ASSERT_TRUE(facts.triton.present);
  EXPECT_EQ(facts.triton.provider, "flagtree");
  EXPECT_EQ(facts.triton.provider_version, "0.7.0");
  const auto* flagtree = find_distribution(facts, "flagtree", "dist-info");
  ASSERT_NE(flagtree, nullptr);
  EXPECT_EQ(flagtree->top_level, std::vector<std::string>{"triton"});
  EXPECT_EQ(flagtree->packages, std::vector<std::string>{"triton"});
  const auto* stock = find_distribution(facts, "triton", "dist-info");
  ASSERT_NE(stock, nullptr);
  EXPECT_EQ(stock->top_level, std::vector<std::string>{"triton"});
  EXPECT_TRUE(stock->packages.empty());
}

TEST(StaticFacts, StockTritonWithoutVersionOrXpuBackend) {
  const auto facts = facts_of("miniconda3/envs/torch-fl-xpu-py311");
  ASSERT_TRUE(facts.triton.present);
  EXPECT_EQ(facts.triton.provider, "triton");
  EXPECT_EQ(facts.triton.provider_version, "3.5.0");
  EXPECT_EQ(facts.triton.version, std::nullopt);
  EXPECT_EQ(facts.triton.backends, (std::vector<std::string>{"amd", "nvidia"}));
  EXPECT_EQ(facts.site_packages.size(), 1U);
  EXPECT_EQ(facts.site_packages[0].parent_path().filename(), "python3.11");
}

TEST(StaticFacts, DistributionsFromPipAndConda) {
  const auto facts = facts_of("miniconda3/envs/torch-fl-cpu");
  const auto* torch = find_distribution(facts, "torch", "dist-info");
  ASSERT_NE(torch, nullptr);
  EXPECT_EQ(torch->version, "2.10.0+cpu");
  EXPECT_EQ(torch->installer, "pip");
  EXPECT_EQ(torch->top_level, std::vector<std::string>{"torch"});
  const auto* torch_fl = find_distribution(facts, "torch-fl", "dist-info");
  ASSERT_NE(torch_fl, nullptr);
  EXPECT_EQ(torch_fl->name, "torch_fl");
  const auto* python = find_distribution(facts, "python", "conda-meta");
  ASSERT_NE(python, nullptr);
  EXPECT_EQ(python->installer, "conda");
  EXPECT_TRUE(python->version.starts_with("3.10"));
}

// An egg-info that is a link to itself (or where its reader may not go)
// is one unreadable distribution: it never costs the env the others.
TEST(StaticFacts, AnEggInfoLinkThatLoopsCostsNoOtherDistribution) {
  testing::TempDir dir;
  const fs::path site = dir.path() / "site-packages";
  dir.write("site-packages/good-1.0.dist-info/METADATA", "Name: good\nVersion: 1.0\n");
  fs::create_symlink("loop.egg-info", site / "loop.egg-info");
  std::vector<Distribution> found;
  ASSERT_NO_THROW(found = scan_site_packages_distributions(site));
  const auto good = std::find_if(found.begin(), found.end(),
                                 [](const Distribution& item) { return item.name == "good"; });
  ASSERT_NE(good, found.end());
  EXPECT_EQ(good->version, "1.0");
}

// RECORDs are bounded per file and, together, per env: twenty dist-info
// directories whose RECORDs link to one 8 MiB file read 128 MiB of it, and
// the rest are refused by name (the env's facts then say they are
// incomplete), never read twenty times over.
TEST(StaticFacts, RecordsLinkedToOneLargeFileAreBoundedPerEnv) {
  testing::TempDir dir;
  std::string record;
  for (int i = 0; record.size() < (8U << 20); ++i) {
    record += "pkg/module_" + std::to_string(i) + ".py,sha256=abcdefabcdefabcdef,1234\n";
  }
  dir.write("large-RECORD", record);
  for (int i = 0; i < 20; ++i) {
    const std::string info = "site-packages/p" + std::to_string(100 + i) + "-1.0.dist-info";
    dir.write(info + "/METADATA", "Name: p" + std::to_string(100 + i) + "\nVersion: 1.0\n");
    fs::create_symlink(dir.path() / "large-RECORD", dir.path() / info / "RECORD");
  }
  process::FileProblemLog log;
  const auto found = scan_site_packages_distributions(dir.path() / "site-packages");
  ASSERT_EQ(found.size(), 20U) << "every distribution is still listed";
  std::size_t read_records = 0;
  for (const auto& distribution : found) {
    // Without top_level.txt the names come from RECORD, when it was read.
    read_records += distribution.top_level == std::vector<std::string>{"pkg"} ? 1 : 0;
  }
  EXPECT_EQ(read_records, 15U) << "128 MiB holds fifteen of these RECORDs";
  const auto problems = log.take();
  ASSERT_EQ(problems.size(), 5U);
  EXPECT_EQ(problems[0].problem,
            "is not read: the env's RECORD file lists add up to more than 128 MiB (links to one "
            "large file?)");
  EXPECT_EQ(problems[0].path.filename(), "RECORD");
}

// Without top_level.txt the importable names come from RECORD, which may
// be tens of thousands of lines: read in linear time (a list searched for
// each line took 16 s for these 50,000 names, and would take hours for a
// hostile RECORD of a million). Facts are kept between scans: real wheels
// install a few dozen names at most, so a RECORD of made-up ones keeps its
// first 1,024, in order, each once.
TEST(StaticFacts, ALongRecordKeepsItsFirstTopLevelNamesInOrder) {
  testing::TempDir dir;
  constexpr int k_modules = 50'000;
  std::string record = "first/__init__.py,sha256=x,1\n";
  for (int i = 0; i < k_modules; ++i) {
    record += "m" + std::to_string(i) + ".py,sha256=x,1\n";
    record += "m" + std::to_string(i) + ".py,sha256=x,1\n";  // listed twice, kept once
    record += "p" + std::to_string(i) + "/__init__.py,sha256=x,1\n";
  }
  record += "big-1.0.dist-info/METADATA,,\n";
  dir.write("site-packages/big-1.0.dist-info/METADATA", "Name: big\nVersion: 1.0\n");
  dir.write("site-packages/big-1.0.dist-info/RECORD", record);
  const auto found = scan_site_packages_distributions(dir.path() / "site-packages");
  ASSERT_EQ(found.size(), 1U);
  ASSERT_EQ(found[0].top_level.size(), 1024U);
  EXPECT_EQ(found[0].top_level[0], "first");
  EXPECT_EQ(found[0].top_level[1], "m0");
  EXPECT_EQ(found[0].top_level[2], "p0");
  EXPECT_EQ(found[0].top_level.back(), "m511");
  ASSERT_EQ(found[0].packages.size(), 512U);
  EXPECT_EQ(found[0].packages.front(), "first");
  EXPECT_EQ(found[0].packages.back(), "p510");
}

// What the prefix holds for another Python than its interpreter's is
// listed apart, never read as the env's; lib/python3/ (every Python 3's) is
// not another Python's.
TEST(StaticFacts, SiteDirsOfAnotherPythonAreListedApart) {
  // (A name no system has: the venv, whose pyvenv.cfg does not say, includes
  // the system's site packages, as CPython's site.py does, and a Debian host
  // with python3-numpy has a numpy there.)
  testing::TempDir dir;
  dir.write("env/lib/python3.10/site-packages/vendornum/__init__.py", "");
  dir.write("env/lib/python3.10/site-packages/vendornum-1.26.4.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: vendornum\nVersion: 1.26.4\n");
  dir.write("env/lib/python3/site-packages/shared.py", "");
  const auto facts = facts_of_venv(dir, {{"ours.py", ""}});
  EXPECT_TRUE(facts.module_files.contains("ours"));
  EXPECT_FALSE(facts.module_files.contains("vendornum"));
  ASSERT_EQ(facts.other_python_sites.size(), 1U);
  const auto& other = facts.other_python_sites.front();
  EXPECT_EQ(other.python, "3.10");
  EXPECT_EQ(other.path, dir.path() / "env/lib/python3.10/site-packages");
  EXPECT_EQ(other.modules, std::vector<std::string>{"vendornum"});
  ASSERT_EQ(other.distributions.size(), 1U);
  EXPECT_EQ(other.distributions.front().version, "1.26.4");
}

TEST(StaticFacts, VenvWithoutCondaMetadata) {
  const auto facts = facts_of("venvs/xpu210v");
  EXPECT_EQ(facts.torch.version, "2.10.0+cu129");
  EXPECT_FALSE(facts.triton.present);
  EXPECT_EQ(find_distribution(facts, "python", "conda-meta"), nullptr);
  EXPECT_TRUE(facts.module_files.contains("torch_xmlir"));
}

TEST(StaticFacts, BaseWithoutTorch) {
  const auto facts = facts_of("miniconda3");
  EXPECT_FALSE(facts.torch.present);
  EXPECT_FALSE(facts.triton.present);
  EXPECT_NE(find_distribution(facts, "conda", "conda-meta"), nullptr);
}

TEST(StaticFacts, MalformedFilesAreProblemsNotCrashes) {
  testing::TempDir dir;
  const fs::path site = dir.path() / "lib/python3.10/site-packages";
  fs::create_directories(dir.path() / "conda-meta");
  fs::create_directories(dir.path() / "bin");
  fs::create_symlink("/bin/true", dir.path() / "bin/python");
  dir.write("conda-meta/python-3.10.13-h1_0.json", "{ not json");
  dir.write("conda-meta/numpy-1.26.4-py310_0.json", "\x01\x02garbage");
  dir.write("lib/python3.10/site-packages/torch/version.py",
            "import os\n__version__ = os.environ['NEVER_RUN']\ncuda = None\n");
  dir.write("lib/python3.10/site-packages/weird-1.0.dist-info/METADATA", std::string(10, '\0'));
  fs::create_directories(site / "triton/backends");
  const auto env = discovery::describe_prefix(dir.path());
  ASSERT_TRUE(env.has_value());
  const auto facts = gather_static_facts(*env);
  EXPECT_TRUE(facts.torch.present);
  EXPECT_EQ(facts.torch.version, "");
  EXPECT_EQ(facts.torch.problem, "torch/version.py has no literal __version__");
  EXPECT_EQ(facts.torch.cuda, std::nullopt);
  EXPECT_TRUE(facts.triton.present);
  EXPECT_EQ(facts.triton.provider, "");
  // Conda records fall back to their file names when unreadable.
  const auto* numpy = find_distribution(facts, "numpy", "conda-meta");
  ASSERT_NE(numpy, nullptr);
  EXPECT_EQ(numpy->version, "1.26.4");
  const auto* weird = find_distribution(facts, "weird", "dist-info");
  ASSERT_NE(weird, nullptr);
  EXPECT_EQ(weird->version, "1.0");
}

}  // namespace
}  // namespace envcontract::probes
