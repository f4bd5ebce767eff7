// probes/distributions.cpp: the distributions installed into a site-packages
// directory (dist-info, egg-info) and into a conda prefix (conda-meta), read
// from the files installers write.
#include "probes/distributions.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "process/small_files.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::probes {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const Distribution* named(const std::vector<Distribution>& found, const std::string& normalized,
                          const std::string& source) {
  const auto it = std::find_if(found.begin(), found.end(), [&](const Distribution& item) {
    return item.normalized == normalized && item.source == source;
  });
  return it == found.end() ? nullptr : &*it;
}

std::vector<std::string> normalized_names(const std::vector<Distribution>& found) {
  std::vector<std::string> names;
  for (const auto& distribution : found) {
    names.push_back(distribution.normalized);
  }
  return names;
}

bool contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// What pip leaves for a wheel: METADATA, INSTALLER (with its newline),
// top_level.txt and RECORD. Every field comes from its own file.
TEST(Distributions, AWheelInstallIsReadFromItsDistInfo) {
  TempDir dir;
  const fs::path site = dir.path() / "site-packages";
  dir.write("site-packages/requests-2.31.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: requests\nVersion: 2.31.0\nSummary: HTTP\n");
  dir.write("site-packages/requests-2.31.0.dist-info/INSTALLER", "pip\n");
  dir.write("site-packages/requests-2.31.0.dist-info/top_level.txt", "requests\n\n");
  dir.write("site-packages/requests-2.31.0.dist-info/RECORD",
            "requests/__init__.py,sha256=a,1\nrequests/api.py,sha256=b,2\n"
            "requests-2.31.0.dist-info/METADATA,sha256=c,3\n");
  dir.write("site-packages/requests/__init__.py", "");
  const auto found = scan_site_packages_distributions(site);
  ASSERT_EQ(found.size(), 1U) << "the package directory itself is no distribution";
  const Distribution& requests = found.front();
  EXPECT_EQ(requests.name, "requests");
  EXPECT_EQ(requests.normalized, "requests");
  EXPECT_EQ(requests.version, "2.31.0");
  EXPECT_EQ(requests.installer, "pip");
  EXPECT_EQ(requests.source, "dist-info");
  EXPECT_EQ(requests.metadata, site / "requests-2.31.0.dist-info");
  EXPECT_EQ(requests.top_level, std::vector<std::string>{"requests"});
  EXPECT_EQ(requests.packages, std::vector<std::string>{"requests"});
}

// The name is kept as written and normalised as PEP 503 says (runs of "-",
// "_" and "." become one "-", lower case); the list is sorted by the
// normalised name whatever order the directory lists them in.
TEST(Distributions, NamesAreNormalisedAsPep503AndListedInThatOrder) {
  TempDir dir;
  const fs::path site = dir.path() / "site-packages";
  dir.write("site-packages/Zope.Interface-6.0.dist-info/METADATA",
            "Name: Zope.Interface\nVersion: 6.0\n");
  dir.write("site-packages/typing_extensions-4.9.0.dist-info/METADATA",
            "Name: typing_extensions\nVersion: 4.9.0\n");
  dir.write("site-packages/Foo__Bar-1.0.dist-info/METADATA",
            "Name: Foo__Bar..-baz\nVersion: 1.0\n");
  dir.write("site-packages/absl_py-2.1.0.dist-info/METADATA", "Name: absl-py\nVersion: 2.1.0\n");
  const auto found = scan_site_packages_distributions(site);
  EXPECT_EQ(
      normalized_names(found),
      (std::vector<std::string>{"absl-py", "foo-bar-baz", "typing-extensions", "zope-interface"}));
  const auto* zope = named(found, "zope-interface", "dist-info");
  ASSERT_NE(zope, nullptr);
  EXPECT_EQ(zope->name, "Zope.Interface");
  const auto* foo = named(found, "foo-bar-baz", "dist-info");
  ASSERT_NE(foo, nullptr);
  EXPECT_EQ(foo->name, "Foo__Bar..-baz");
}

// setuptools' egg-info comes as a directory with PKG-INFO (setup.py
// install, develop) or as a single PKG-INFO-format file (distutils). No
// INSTALLER or RECORD: neither an installer nor packages are claimed.
TEST(Distributions, EggInfoDirectoriesAndFilesAreDistributions) {
  TempDir dir;
  const fs::path site = dir.path() / "site-packages";
  dir.write("site-packages/PyYAML-5.3.1-py3.11.egg-info/PKG-INFO",
            "Metadata-Version: 1.1\nName: PyYAML\nVersion: 5.3.1\n");
  dir.write("site-packages/PyYAML-5.3.1-py3.11.egg-info/top_level.txt", "_yaml\r\nyaml\r\n");
  dir.write("site-packages/distro_info-1.0.egg-info",
            "Metadata-Version: 1.0\nName: distro-info\nVersion: 1.0\n");
  const auto found = scan_site_packages_distributions(site);
  ASSERT_EQ(found.size(), 2U);
  const auto* yaml = named(found, "pyyaml", "egg-info");
  ASSERT_NE(yaml, nullptr);
  EXPECT_EQ(yaml->version, "5.3.1");
  EXPECT_EQ(yaml->installer, "");
  EXPECT_EQ(yaml->metadata, site / "PyYAML-5.3.1-py3.11.egg-info");
  EXPECT_EQ(yaml->top_level, (std::vector<std::string>{"_yaml", "yaml"}));
  EXPECT_TRUE(yaml->packages.empty());
  const auto* distro = named(found, "distro-info", "egg-info");
  ASSERT_NE(distro, nullptr);
  EXPECT_EQ(distro->version, "1.0");
  EXPECT_EQ(distro->metadata, site / "distro_info-1.0.egg-info");
}

// Without METADATA (an interrupted install, a file only root may read) the
// directory's own name still says name-version; a name without a version
// gives no version rather than a made-up one.
TEST(Distributions, WithoutMetadataTheDirectoryNameSaysNameAndVersion) {
  TempDir dir;
  const fs::path site = dir.path() / "site-packages";
  fs::create_directories(site / "charset_normalizer-3.3.2.dist-info");
  dir.write("site-packages/charset_normalizer-3.3.2.dist-info/INSTALLER", "uv");
  dir.write("site-packages/noversion.dist-info/RECORD", "noversion.py,,\n");
  // Headers without a Name are no better than none.
  dir.write("site-packages/blank-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nSummary: x\n");
  const auto found = scan_site_packages_distributions(site);
  ASSERT_EQ(found.size(), 3U);
  const auto* charset = named(found, "charset-normalizer", "dist-info");
  ASSERT_NE(charset, nullptr);
  EXPECT_EQ(charset->name, "charset_normalizer");
  EXPECT_EQ(charset->version, "3.3.2");
  EXPECT_EQ(charset->installer, "uv");
  const auto* noversion = named(found, "noversion", "dist-info");
  ASSERT_NE(noversion, nullptr);
  EXPECT_EQ(noversion->version, "");
  EXPECT_EQ(noversion->top_level, std::vector<std::string>{"noversion"});
  const auto* blank = named(found, "blank", "dist-info");
  ASSERT_NE(blank, nullptr);
  EXPECT_EQ(blank->version, "0.1");
}

// setuptools names an installed egg-info directory
// name-version-pyX.Y.egg-info; without PKG-INFO the version is the part
// between the first two dashes, not "5.3.1-py3.11", which no PEP 440
// comparison of a contract could use.
TEST(Distributions, WithoutPkgInfoAnEggInfoNameGivesTheVersionWithoutThePythonTag) {
  TempDir dir;
  const fs::path site = dir.path() / "site-packages";
  fs::create_directories(site / "PyYAML-5.3.1-py3.11.egg-info");
  const auto found = scan_site_packages_distributions(site);
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0].normalized, "pyyaml");
  EXPECT_EQ(found[0].version, "5.3.1");
}

// METADATA is RFC 822: headers end at the first blank line (the
// description may say "Version: 9.9"), the first of a repeated header wins
// as email.message_from_string's does, a folded continuation line is no
// header of its own, and CRLF line ends read the same.
TEST(Distributions, OnlyTheFirstOfEachHeaderBeforeTheBodyCounts) {
  TempDir dir;
  const fs::path site = dir.path() / "site-packages";
  dir.write("site-packages/first-1.0.dist-info/METADATA",
            "Metadata-Version: 2.1\r\nName: first\r\nVersion: 1.0\r\nVersion: 2.0\r\n"
            "Summary: a long\r\n summary\r\n Name: folded\r\n\r\nName: body\r\nVersion: 9.9\r\n");
  dir.write("site-packages/late-3.0.dist-info/METADATA",
            "Metadata-Version: 2.1\n\nName: fromthebody\nVersion: 9.9\n");
  const auto found = scan_site_packages_distributions(site);
  ASSERT_EQ(found.size(), 2U);
  const auto* first = named(found, "first", "dist-info");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->name, "first");
  EXPECT_EQ(first->version, "1.0");
  // A Name only in the body is none: the directory name says instead.
  const auto* late = named(found, "late", "dist-info");
  ASSERT_NE(late, nullptr);
  EXPECT_EQ(late->version, "3.0");
  EXPECT_EQ(named(found, "fromthebody", "dist-info"), nullptr);
}

// A METADATA with a megabyte of description is read as far as its
// headers need (its top), not refused; the agent reads no more of it.
TEST(Distributions, AHugeMetadataStillGivesItsHeaders) {
  TempDir dir;
  const fs::path site = dir.path() / "site-packages";
  dir.write("site-packages/big-1.0.dist-info/METADATA",
            "Name: big\nVersion: 1.0\n\n" + std::string(1 << 20, 'x') + "\n");
  process::FileProblemLog log;
  const auto found = scan_site_packages_distributions(site);
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0].name, "big");
  EXPECT_EQ(found[0].version, "1.0");
  EXPECT_TRUE(log.take().empty());
}

// Files that are bounded are refused past their bound, with the refusal
// logged by path: an INSTALLER of 100 KiB says no installer, a RECORD with
// a line longer than 64 KiB names no top-level module. The distribution is
// still listed.
TEST(Distributions, OversizedInstallerAndRecordAreRefusedNotRead) {
  TempDir dir;
  const fs::path site = dir.path() / "site-packages";
  const fs::path info = site / "hostile-1.0.dist-info";
  dir.write("site-packages/hostile-1.0.dist-info/METADATA", "Name: hostile\nVersion: 1.0\n");
  dir.write("site-packages/hostile-1.0.dist-info/INSTALLER", std::string(100 * 1024, 'p'));
  dir.write("site-packages/hostile-1.0.dist-info/RECORD",
            "evil.py,sha256=" + std::string(65 * 1024, 'a') + ",1\n");
  process::FileProblemLog log;
  const auto found = scan_site_packages_distributions(site);
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0].version, "1.0");
  EXPECT_EQ(found[0].installer, "");
  EXPECT_TRUE(found[0].top_level.empty());
  std::vector<fs::path> refused;
  for (const auto& problem : log.take()) {
    refused.push_back(problem.path);
  }
  std::sort(refused.begin(), refused.end());
  EXPECT_EQ(refused, (std::vector<fs::path>{info / "INSTALLER", info / "RECORD"}));
}

// A FIFO where METADATA should be would block a reader for good: it is
// refused without being opened for reading, and the directory name says
// name and version.
TEST(Distributions, AMetadataThatIsAFifoIsRefusedWithoutBlocking) {
  TempDir dir;
  const fs::path site = dir.path() / "site-packages";
  const fs::path info = site / "fifo-2.0.dist-info";
  fs::create_directories(info);
  ASSERT_EQ(::mkfifo((info / "METADATA").c_str(), 0644), 0);
  process::FileProblemLog log;
  const auto found = scan_site_packages_distributions(site);
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0].name, "fifo");
  EXPECT_EQ(found[0].version, "2.0");
  const auto problems = log.take();
  ASSERT_EQ(problems.size(), 1U);
  EXPECT_EQ(problems[0].path, info / "METADATA");
}

// RECORD names files outside site-packages with ".." (console scripts in
// bin/, headers in include/): they install no importable name. Nor do the
// dist-info itself, .data, __pycache__ or top-level files that are not
// modules (.pth files); a top-level .py or extension module is one name.
TEST(Distributions, RecordPathsOutsideSitePackagesAreNoTopLevelNames) {
  TempDir dir;
  const fs::path site = dir.path() / "site-packages";
  dir.write("site-packages/tool-1.0.dist-info/METADATA", "Name: tool\nVersion: 1.0\n");
  dir.write("site-packages/tool-1.0.dist-info/RECORD",
            "../../../bin/tool,sha256=a,1\n"
            "../../../include/tool/tool.h,sha256=b,2\n"
            "tool-1.0.dist-info/RECORD,,\n"
            "tool-1.0.data/scripts/x,sha256=c,3\n"
            "__pycache__/single.cpython-311.pyc,,\n"
            "tool.pth,sha256=d,4\n"
            "single.py,sha256=e,5\n"
            "_native.cpython-311-x86_64-linux-gnu.so,sha256=f,6\n"
            "toolpkg/__init__.py,sha256=g,7\n"
            "toolpkg/sub/__init__.py,sha256=h,8\n");
  const auto found = scan_site_packages_distributions(site);
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0].top_level, (std::vector<std::string>{"single", "_native", "toolpkg"}));
  EXPECT_EQ(found[0].packages, std::vector<std::string>{"toolpkg"});
}

// A RECORD path that is absolute (data files installed to /etc by some
// installers; anything in a RECORD an env's owner wrote) names no top-level
// module, not even "" (the text before its first "/").
TEST(Distributions, AnAbsoluteRecordPathIsNoTopLevelName) {
  TempDir dir;
  const fs::path site = dir.path() / "site-packages";
  dir.write("site-packages/abs-1.0.dist-info/METADATA", "Name: abs\nVersion: 1.0\n");
  dir.write("site-packages/abs-1.0.dist-info/RECORD",
            "/etc/abs/abs.conf,sha256=a,1\n/opt/abs/__init__.py,sha256=b,2\n"
            "abs/__init__.py,sha256=c,3\n");
  const auto found = scan_site_packages_distributions(site);
  ASSERT_EQ(found.size(), 1U);
  EXPECT_FALSE(contains(found[0].top_level, "")) << "an empty top-level name";
  EXPECT_FALSE(contains(found[0].packages, "")) << "an empty package name";
  EXPECT_TRUE(contains(found[0].top_level, "abs"));
}

// top_level.txt, when it names anything, is what the distribution says it
// installs; an empty one is no better than none and RECORD says instead.
TEST(Distributions, AnEmptyTopLevelTxtFallsBackToRecord) {
  TempDir dir;
  const fs::path site = dir.path() / "site-packages";
  dir.write("site-packages/said-1.0.dist-info/METADATA", "Name: said\nVersion: 1.0\n");
  dir.write("site-packages/said-1.0.dist-info/top_level.txt", "declared\n");
  dir.write("site-packages/said-1.0.dist-info/RECORD", "recorded/__init__.py,,\n");
  dir.write("site-packages/empty-1.0.dist-info/METADATA", "Name: empty\nVersion: 1.0\n");
  dir.write("site-packages/empty-1.0.dist-info/top_level.txt", "\n  \n");
  dir.write("site-packages/empty-1.0.dist-info/RECORD", "recorded_too/__init__.py,,\n");
  const auto found = scan_site_packages_distributions(site);
  const auto* said = named(found, "said", "dist-info");
  ASSERT_NE(said, nullptr);
  EXPECT_EQ(said->top_level, std::vector<std::string>{"declared"});
  // The packages still come from RECORD: they say who wrote __init__.py.
  EXPECT_EQ(said->packages, std::vector<std::string>{"recorded"});
  const auto* empty = named(found, "empty", "dist-info");
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(empty->top_level, std::vector<std::string>{"recorded_too"});
}

// An upgrade that failed half way leaves two dist-info directories of one
// distribution: both are installed as far as importlib.metadata is
// concerned, and both are listed, next to each other.
TEST(Distributions, TwoVersionsOfOneDistributionAreBothListed) {
  TempDir dir;
  const fs::path site = dir.path() / "site-packages";
  dir.write("site-packages/numpy-1.26.4.dist-info/METADATA", "Name: numpy\nVersion: 1.26.4\n");
  dir.write("site-packages/numpy-2.0.1.dist-info/METADATA", "Name: numpy\nVersion: 2.0.1\n");
  dir.write("site-packages/numpy-1.22.0-py3.11.egg-info/PKG-INFO", "Name: numpy\nVersion: 1.22\n");
  dir.write("site-packages/aaa-1.0.dist-info/METADATA", "Name: aaa\nVersion: 1.0\n");
  dir.write("site-packages/zzz-1.0.dist-info/METADATA", "Name: zzz\nVersion: 1.0\n");
  const auto found = scan_site_packages_distributions(site);
  EXPECT_EQ(normalized_names(found),
            (std::vector<std::string>{"aaa", "numpy", "numpy", "numpy", "zzz"}));
  std::vector<std::pair<std::string, std::string>> numpys;
  for (const auto& distribution : found) {
    if (distribution.normalized == "numpy") {
      numpys.emplace_back(distribution.source, distribution.version);
    }
  }
  std::sort(numpys.begin(), numpys.end());
  EXPECT_EQ(numpys, (std::vector<std::pair<std::string, std::string>>{
                        {"dist-info", "1.26.4"}, {"dist-info", "2.0.1"}, {"egg-info", "1.22"}}));
}

// pip install -e with a PEP 660 backend writes an ordinary dist-info (its
// direct_url.json says editable) whose RECORD lists a .pth file and an
// import hook module, not the project's sources: it is listed as any
// other install, and the .pth is no top-level name.
TEST(Distributions, AnEditableInstallIsListedLikeAnyOther) {
  TempDir dir;
  const fs::path site = dir.path() / "site-packages";
  const std::string info = "site-packages/my_project-0.3.0.dist-info/";
  dir.write(info + "METADATA", "Metadata-Version: 2.1\nName: my-project\nVersion: 0.3.0\n");
  dir.write(info + "INSTALLER", "pip\n");
  dir.write(info + "direct_url.json",
            R"({"dir_info": {"editable": true}, "url": "file:///home/me/my-project"})");
  dir.write(info + "RECORD",
            "__editable__.my_project-0.3.0.pth,sha256=a,1\n"
            "__editable___my_project_0_3_0_finder.py,sha256=b,2\n"
            "my_project-0.3.0.dist-info/RECORD,,\n");
  dir.write("site-packages/__editable__.my_project-0.3.0.pth",
            "import __editable___my_project_0_3_0_finder; "
            "__editable___my_project_0_3_0_finder.install()\n");
  const auto found = scan_site_packages_distributions(site);
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0].normalized, "my-project");
  EXPECT_EQ(found[0].version, "0.3.0");
  EXPECT_EQ(found[0].installer, "pip");
  EXPECT_FALSE(contains(found[0].top_level, "__editable__"));
  EXPECT_TRUE(found[0].packages.empty());
}

// No site-packages at all (an env being created) is no distribution and
// no exception.
TEST(Distributions, AMissingSitePackagesHasNoDistributions) {
  TempDir dir;
  EXPECT_TRUE(scan_site_packages_distributions(dir.path() / "absent").empty());
  EXPECT_TRUE(scan_conda_packages(dir.path() / "absent").empty());
}

// conda-meta/NAME-VERSION-BUILD.json: name and version from the record,
// the installer conda; files that are not records (history) are skipped.
TEST(Distributions, CondaPackagesComeFromTheirCondaMetaRecords) {
  TempDir dir;
  dir.write("conda-meta/python-3.11.7-h955ad1f_0.json",
            R"({"name": "python", "version": "3.11.7", "build": "h955ad1f_0",)"
            R"( "files": ["bin/python3.11"], "depends": [{"deep": [[["nested"]]]}]})");
  dir.write("conda-meta/Ca_Certificates-2024.1-h06a4308_0.json",
            R"({"name": "Ca_Certificates", "version": "2024.1"})");
  dir.write("conda-meta/history", "==> 2024-01-01 <==\n+defaults::python-3.11.7-h955ad1f_0\n");
  dir.write("conda-meta/notes.txt", "{}");
  const auto found = scan_conda_packages(dir.path());
  EXPECT_EQ(normalized_names(found), (std::vector<std::string>{"ca-certificates", "python"}));
  const auto* python = named(found, "python", "conda-meta");
  ASSERT_NE(python, nullptr);
  EXPECT_EQ(python->version, "3.11.7");
  EXPECT_EQ(python->installer, "conda");
  EXPECT_EQ(python->metadata, dir.path() / "conda-meta/python-3.11.7-h955ad1f_0.json");
  EXPECT_EQ(found[0].name, "Ca_Certificates");
}

// A record that is not JSON, or whose name is not a string, still names
// its package by its file name, NAME-VERSION-BUILD, whose NAME may hold
// dashes; a file name without all three parts names nothing.
TEST(Distributions, ACondaRecordThatCannotBeReadIsNamedByItsFileName) {
  TempDir dir;
  dir.write("conda-meta/python-dateutil-2.8.2-pyhd8ed1ab_0.json", "{ not json");
  dir.write("conda-meta/libgcc-ng-13.2.0-h77fa898_7.json", R"({"name": 7, "version": "x"})");
  dir.write("conda-meta/two-parts.json", "[");
  dir.write("conda-meta/single.json", "[");
  const auto found = scan_conda_packages(dir.path());
  ASSERT_EQ(found.size(), 2U);
  const auto* dateutil = named(found, "python-dateutil", "conda-meta");
  ASSERT_NE(dateutil, nullptr);
  EXPECT_EQ(dateutil->name, "python-dateutil");
  EXPECT_EQ(dateutil->version, "2.8.2");
  const auto* libgcc = named(found, "libgcc-ng", "conda-meta");
  ASSERT_NE(libgcc, nullptr);
  EXPECT_EQ(libgcc->version, "13.2.0");
}

}  // namespace
}  // namespace envcontract::probes
