#include "process/small_files.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "tests/support/temp_dir.hpp"

namespace envcontract::process {
namespace {

TEST(SmallFiles, PythonAssignmentsAreReadWithoutRunningCode) {
  const auto values = parse_python_assignments(
      "__version__ = '2.10.0+cu129'\n"
      "debug = False\n"
      "cuda: Optional[str] = \"12.9\"  # from the build\n"
      "hip = None\r\n"
      "git_version = compute()\n"
      "    indented = 'ignored'\n"
      "__version__ = '2.10.0+cu129.post1'\n");
  EXPECT_EQ(values.at("__version__"), std::optional<std::string>("2.10.0+cu129.post1"));
  EXPECT_EQ(values.at("cuda"), std::optional<std::string>("12.9"));
  EXPECT_EQ(values.at("hip"), std::nullopt);
  EXPECT_FALSE(values.contains("debug"));
  EXPECT_FALSE(values.contains("git_version"));
  EXPECT_FALSE(values.contains("indented"));
}

TEST(SmallFiles, HeadersStopAtTheBody) {
  const auto headers =
      parse_headers("Metadata-Version: 2.1\nName: torch\nVersion: 2.10.0\n\nName: body\n");
  EXPECT_EQ(headers.at("Name"), "torch");
  EXPECT_EQ(headers.at("Version"), "2.10.0");
}

TEST(SmallFiles, KeyValuesOfPyvenvCfg) {
  const auto values = parse_key_values(
      "home = /usr/bin\ninclude-system-site-packages = false\nVersion = 3.10.13\n");
  EXPECT_EQ(values.at("home"), "/usr/bin");
  EXPECT_EQ(values.at("version"), "3.10.13");
}

TEST(SmallFiles, AFifoIsRefusedWithoutBlocking) {
  testing::TempDir dir;
  const auto fifo = dir.path() / "version.py";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  // No writer ever opens it: a blocking open would never return.
  const auto read = read_file_bounded(fifo, file_limits::python_source);
  EXPECT_FALSE(read.text.has_value());
  EXPECT_EQ(read.refusal, "is a FIFO, not a regular file");
}

TEST(SmallFiles, DevicesAndDirectoriesAreRefused) {
  EXPECT_EQ(read_file_bounded("/dev/zero", file_limits::small_text).refusal,
            "is a character device, not a regular file");
  EXPECT_EQ(read_file_bounded("/tmp", file_limits::small_text).refusal,
            "is a directory, not a regular file");
}

TEST(SmallFiles, OversizedFilesAreRefusedUnlessTheirTopIsEnough) {
  testing::TempDir dir;
  const auto big = dir.write("condarc", std::string(2 * 1024 * 1024, 'x'));
  const auto refused = read_file_bounded(big, file_limits::conda_config);
  EXPECT_FALSE(refused.text.has_value());
  EXPECT_EQ(refused.refusal, "is 2097152 bytes, over the 1 MiB limit for a conda configuration");

  const auto metadata =
      dir.write("METADATA", "Name: torch\nVersion: 2.10.0\n\n" + std::string(1024 * 1024, 'd'));
  const auto top = read_file_bounded(metadata, file_limits::metadata);
  ASSERT_TRUE(top.text.has_value());
  EXPECT_EQ(top.text->size(), file_limits::metadata.max_bytes);
  EXPECT_EQ(parse_headers(*top.text).at("Version"), "2.10.0");
}

TEST(SmallFiles, LongLinesAreRefusedWhereLinesAreShort) {
  testing::TempDir dir;
  const auto source =
      dir.write("version.py", "__version__ = '" + std::string(30 * 1024, '9') + "'\n");
  const auto read = read_file_bounded(source, file_limits::python_source);
  EXPECT_FALSE(read.text.has_value());
  EXPECT_EQ(read.refusal, "has a line of 30736 bytes, over the 4 KiB limit for a Python source");
  EXPECT_FALSE(read_file_bounded("/nonexistent/file", file_limits::small_text).text.has_value());
  EXPECT_TRUE(read_file_bounded("/nonexistent/file", file_limits::small_text).refusal.empty());
}

TEST(SmallFiles, RefusalsGoToTheInnermostLogOfTheThread) {
  testing::TempDir dir;
  const auto fifo = dir.path() / "METADATA";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const auto good = dir.write("INSTALLER", "pip\n");
  FileProblemLog outer;
  {
    FileProblemLog inner;
    EXPECT_FALSE(read_env_file(fifo, file_limits::metadata).has_value());
    EXPECT_EQ(read_env_file(good, file_limits::small_text), std::optional<std::string>("pip\n"));
    const auto problems = inner.take();
    ASSERT_EQ(problems.size(), 1U);
    EXPECT_EQ(problems[0].path, fifo);
    EXPECT_EQ(problems[0].problem, "is a FIFO, not a regular file");
  }
  EXPECT_TRUE(outer.take().empty());
  // Without any log, a refusal is simply not recorded.
}

// Each scanner meets a megabyte line: linear time, no recursion, no crash
// (std::regex overflowed the stack on 30 KB).
TEST(SmallFiles, ScannersTakeMegabyteLines) {
  const std::string digits(1024 * 1024, '7');
  const auto values = parse_python_assignments("__version__ = '" + digits + "'\n" + "x = '" +
                                               std::string(1024 * 1024, ' ') + "\n" +
                                               std::string(1024 * 1024, 'a') + " = None\n");
  EXPECT_EQ(values.at("__version__")->size(), digits.size());
  EXPECT_FALSE(values.contains("x"));
  EXPECT_EQ(values.size(), 2U);
  EXPECT_EQ(first_release_number(digits), "");
  EXPECT_EQ(first_release_number(digits + ".1"), digits + ".1");
  EXPECT_EQ(first_release_number(std::string(1024 * 1024, '.') + "3.10.13.final.0"), "3.10.13");
  EXPECT_EQ(first_release_number("version_info = 3.10.13.final.0"), "3.10.13");
  EXPECT_EQ(first_release_number("3..1 and 2.7"), "2.7");
  EXPECT_TRUE(is_python_identifier("torch_C"));
  EXPECT_FALSE(is_python_identifier("2to3"));
  EXPECT_FALSE(is_python_identifier(std::string(1024 * 1024, 'a') + "-"));
  EXPECT_EQ(parse_headers("Name: " + digits + "\n").at("Name").size(), digits.size());
  EXPECT_EQ(parse_key_values("version = " + digits + "\n").at("version").size(), digits.size());
}

TEST(SmallFiles, AssignmentsOnlyOfPlainLiterals) {
  const auto values = parse_python_assignments(
      "a = 'x\\'y'\n"          // an escape: not read
      "b == 'z'\n"             // a comparison
      "c = 'open\n"            // unterminated
      "d = None2\n"            // not None
      "e = \"ok\"   # note\n"  // a comment after
      "f: str = 'typed'\n"
      "g = 'one' 'two'\n");  // implicit concatenation: not a plain literal
  EXPECT_EQ(values.size(), 2U);
  EXPECT_EQ(values.at("e"), std::optional<std::string>("ok"));
  EXPECT_EQ(values.at("f"), std::optional<std::string>("typed"));
}

const ListedEntry* listed(const std::vector<ListedEntry>& entries, const std::string& name) {
  const auto it = std::find_if(entries.begin(), entries.end(), [&](const ListedEntry& entry) {
    return entry.path.filename() == name;
  });
  return it == entries.end() ? nullptr : &*it;
}

TEST(SmallFiles, AListingSaysWhatEachEntryIsAndWhereALinkLeads) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "pkg/sub");
  std::ofstream(dir.path() / "pkg/module.py") << "x = 1\n";
  std::filesystem::create_directory_symlink(dir.path() / "pkg/sub", dir.path() / "pkg/to_dir");
  std::filesystem::create_symlink("module.py", dir.path() / "pkg/to_file");
  std::filesystem::create_symlink("nowhere", dir.path() / "pkg/dangling");
  std::error_code error;
  const auto entries = list_directory(dir.path() / "pkg", error);
  ASSERT_FALSE(error) << error.message();
  ASSERT_EQ(entries.size(), 5U);
  const auto* sub = listed(entries, "sub");
  ASSERT_NE(sub, nullptr);
  EXPECT_TRUE(sub->is_directory && !sub->is_link && !sub->is_regular);
  EXPECT_EQ(sub->path, dir.path() / "pkg/sub");
  const auto* module = listed(entries, "module.py");
  ASSERT_NE(module, nullptr);
  EXPECT_TRUE(module->is_regular && !module->is_link && !module->is_directory);
  const auto* to_dir = listed(entries, "to_dir");
  ASSERT_NE(to_dir, nullptr);
  EXPECT_TRUE(to_dir->is_link && to_dir->is_directory);
  const auto* to_file = listed(entries, "to_file");
  ASSERT_NE(to_file, nullptr);
  EXPECT_TRUE(to_file->is_link && to_file->is_regular);
  const auto* dangling = listed(entries, "dangling");
  ASSERT_NE(dangling, nullptr);
  EXPECT_TRUE(dangling->is_link && !dangling->is_directory && !dangling->is_regular);

  EXPECT_EQ(list_directory(dir.path() / "pkg", error, 2).size(), 2U);
  EXPECT_EQ(list_names(dir.path() / "pkg", error).size(), 5U);
  EXPECT_TRUE(list_directory(dir.path() / "missing", error).empty());
  EXPECT_EQ(error, std::errc::no_such_file_or_directory);
  EXPECT_TRUE(list_directory(dir.path() / "pkg/module.py", error).empty());
  EXPECT_EQ(error, std::errc::not_a_directory);
}

TEST(SmallFiles, AWalkNeverEntersALinkAndSaysWhenItsBoundsCutItShort) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "site/pkg/lib/deep");
  std::ofstream(dir.path() / "site/pkg/lib/libfoo.so") << "";
  std::ofstream(dir.path() / "site/pkg/lib/deep/libbar.so") << "";
  std::filesystem::create_directory_symlink("/", dir.path() / "site/pkg/to_root");
  std::filesystem::create_symlink("nowhere", dir.path() / "site/dangling");
  std::vector<std::string> seen;
  const auto walk = [&](std::size_t max_dirs, std::size_t max_depth) {
    seen.clear();
    return walk_tree(dir.path() / "site", max_dirs, max_depth, [&](const ListedEntry& entry) {
      seen.push_back(entry.path.lexically_relative(dir.path() / "site").string() +
                     (entry.is_link        ? "@"
                      : entry.is_directory ? "/"
                                           : ""));
      return !entry.is_link;
    });
  };
  EXPECT_TRUE(walk(100, 10));
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"dangling@", "pkg/", "pkg/lib/", "pkg/lib/deep/",
                                            "pkg/lib/deep/libbar.so", "pkg/lib/libfoo.so",
                                            "pkg/to_root@"}));
  // pkg is 1 below the top, lib 2, deep 3.
  EXPECT_FALSE(walk(100, 2));
  EXPECT_EQ(std::count(seen.begin(), seen.end(), "pkg/lib/deep/libbar.so"), 0);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), "pkg/lib/libfoo.so"), 1);
  EXPECT_FALSE(walk(2, 10));
  EXPECT_EQ(std::count(seen.begin(), seen.end(), "pkg/lib/libfoo.so"), 0);
}

// An image's rootfs on the host's disk: while a thread reads inside it, an
// absolute link in it leads to the tree's own file; outside the scope (or
// on another tree) the link is the host's, as the kernel follows it.
TEST(SmallFiles, InsideATreeItsAbsoluteLinksAreItsOwn) {
  testing::TempDir tree;
  testing::TempDir host;
  const std::filesystem::path vendor = host.path() / "vendor";
  std::filesystem::create_directories(vendor / "host-only");
  std::ofstream(vendor / "VERSION") << "host\n";
  std::filesystem::create_directories(tree.path() / vendor.relative_path() / "backends/xpu");
  std::ofstream(tree.path() / vendor.relative_path() / "VERSION") << "tree\n";
  std::filesystem::create_directories(tree.path() / "pkg");
  std::filesystem::create_directory_symlink(vendor, tree.path() / "pkg/vendor");
  const auto pkg = tree.path() / "pkg";
  const auto read_version = [&] {
    return read_file_bounded(pkg / "vendor/VERSION", file_limits::small_text).text.value_or("");
  };
  std::error_code error;
  {
    const ReadingInsideTree inside(tree.path().string() + "/");
    EXPECT_EQ(read_version(), "tree\n");
    EXPECT_TRUE(dir_exists(pkg / "vendor/backends/xpu"));
    EXPECT_FALSE(path_exists(pkg / "vendor/host-only"));
    const auto names = list_names(pkg / "vendor", error);
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()),
              (std::set<std::string>{"backends", "VERSION"}));
    {
      const ReadingInsideTree host_again("/");  // the innermost scope counts
      EXPECT_EQ(read_version(), "host\n");
    }
    EXPECT_EQ(read_version(), "tree\n");
  }
  EXPECT_EQ(read_version(), "host\n");
  EXPECT_TRUE(path_exists(pkg / "vendor/host-only"));
}

// A process whose root is `dir` (as a container's processes have the
// container's tree): /proc/PID/root/... is how the agent reads its files.
class ChrootedProcess {
 public:
  explicit ChrootedProcess(const std::filesystem::path& dir) : m_dir(dir) {
    m_pid = ::fork();
    if (m_pid == 0) {
      // Only async-signal-safe calls after fork; it ends with the test
      // process, even one that crashes.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::chroot(dir.c_str()) == 0) {
        ::pause();
      }
      ::_exit(1);
    }
  }
  ~ChrootedProcess() {
    if (m_pid > 0) {  // never kill(-1): that is every process
      ::kill(m_pid, SIGKILL);
      ::waitpid(m_pid, nullptr, 0);
    }
  }
  ChrootedProcess(const ChrootedProcess&) = delete;
  ChrootedProcess& operator=(const ChrootedProcess&) = delete;
  // Its root as the agent names it, once it has entered it (the link
  // names the directory from the agent's own root).
  std::filesystem::path root() const {
    if (m_pid <= 0) {
      return {};
    }
    const std::string root = "/proc/" + std::to_string(m_pid) + "/root";
    for (int tries = 0; tries < 500; ++tries) {
      std::error_code error;
      if (std::filesystem::read_symlink(root, error) == std::filesystem::canonical(m_dir)) {
        return root;
      }
      ::usleep(10000);
    }
    return {};
  }

 private:
  std::filesystem::path m_dir;
  pid_t m_pid = -1;
};

// The tree links /opt/vendor (absolute, as images do); the host has a
// directory of the same name with other files. A listing under the
// process's root follows the link inside the tree, for the directory
// listed and for an entry's type.
TEST(SmallFiles, UnderAProcessRootLinksAreFollowedInsideItsTree) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "chroot(2) needs root: this test runs as root in CI";
  }
  testing::TempDir tree;
  testing::TempDir host;
  const std::filesystem::path vendor = host.path() / "vendor";
  std::filesystem::create_directories(vendor / "host-only");
  std::filesystem::create_directories(tree.path() / vendor.relative_path() / "backends/xpu");
  std::filesystem::create_directories(tree.path() / "pkg");
  // Absolute, and naming a path the host has too: followed from the host's
  // root it would list the host's directory.
  std::filesystem::create_directory_symlink(vendor / "backends", tree.path() / "pkg/backends");
  std::filesystem::create_directory_symlink(vendor, tree.path() / "pkg/vendor");
  ChrootedProcess process(tree.path());
  const auto root = process.root();
  ASSERT_FALSE(root.empty()) << "the child never entered its root";

  std::error_code error;
  const auto backends = list_directory(root / "pkg/backends", error);
  ASSERT_FALSE(error) << error.message();
  ASSERT_EQ(backends.size(), 1U);
  EXPECT_EQ(backends[0].path.filename(), "xpu");
  EXPECT_TRUE(backends[0].is_directory);
  const auto names = list_names(root / "pkg/vendor", error);
  EXPECT_EQ(names, std::vector<std::string>{"backends"});
  const auto pkg = list_directory(root / "pkg", error);
  const auto* linked = listed(pkg, "backends");
  ASSERT_NE(linked, nullptr);
  EXPECT_TRUE(linked->is_link && linked->is_directory);
}

}  // namespace
}  // namespace envcontract::process
