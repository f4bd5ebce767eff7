// process/system_root.cpp: paths read inside another OS tree as its own
// processes would read them. Real trees in temporary directories, with the
// links a hostile image or container would plant: absolute links to host
// paths, ".." past the tree's "/", loops, and magic links of /proc.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "facts/path_pattern.hpp"
#include "process/system_root.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::process {
namespace {

namespace fs = std::filesystem;

// Everything a descriptor reads, up to 4 KiB.
std::string read_all(int fd) {
  std::string text(4096, '\0');
  const ssize_t got = ::read(fd, text.data(), text.size());
  text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return text;
}

// A tree with an OS's marker and the links a hostile image ships: /lib an
// absolute link, /escape a climb of ".." far past its "/", /host an
// absolute link naming a real host directory, and a loop. Beside it, on
// the host, that directory with a secret of the host's.
class SystemRootTree : public ::testing::Test {
 protected:
  void SetUp() override {
    m_root = fs::canonical(m_dir.path()) / "rootfs";
    m_outside = fs::canonical(m_dir.path()) / "outside";
    m_dir.write("rootfs/etc/os-release", "ID=test\n");
    m_dir.write("rootfs/etc/marker", "the tree's marker\n");
    m_dir.write("rootfs/usr/lib/a.so", "");
    m_dir.write("rootfs/usr/lib/b.so", "");
    m_dir.write("outside/secret", "the host's secret\n");
    m_dir.write("outside/a.so", "");
    fs::create_symlink("/usr/lib", m_root / "lib");
    fs::create_symlink("../../../../../../../../../../..", m_root / "escape");
    fs::create_symlink(m_outside, m_root / "host");
    fs::create_symlink(m_outside / "secret", m_root / "secret");
    fs::create_symlink("/ping", m_root / "pong");
    fs::create_symlink("/pong", m_root / "ping");
  }

  testing::TempDir m_dir;
  fs::path m_root;
  fs::path m_outside;
};

TEST_F(SystemRootTree, AnOsReleaseMarksASystemRootEvenAsADanglingLink) {
  EXPECT_TRUE(is_system_root("/"));
  EXPECT_TRUE(is_system_root(""));
  EXPECT_TRUE(is_system_root(m_root));
  EXPECT_FALSE(is_system_root(m_outside)) << "envs, not an OS";
  fs::create_directories(m_dir.path() / "image/usr/lib");
  fs::create_symlink("../usr/lib/os-release", m_dir.path() / "image/usr/lib/os-release");
  EXPECT_TRUE(is_system_root(m_dir.path() / "image"));
}

// Only /proc/NUMBER/root (however spelled) is a process's root: "self" is
// the agent's own, and anything below or beside it is a path like others.
TEST(SystemRoot, OnlyANumberedProcesssRootIsAProcessRoot) {
  EXPECT_TRUE(is_process_root("/proc/4242/root"));
  EXPECT_TRUE(is_process_root("/proc//4242/./root"));
  EXPECT_FALSE(is_process_root("/proc/self/root"));
  EXPECT_FALSE(is_process_root("/proc/4242/root/usr"));
  EXPECT_FALSE(is_process_root("/proc/4242/cwd"));
  EXPECT_FALSE(is_process_root("/proc/42a/root"));
  EXPECT_FALSE(is_process_root("/proc/1234567890/root")) << "longer than any PID";
  EXPECT_FALSE(is_process_root("/proc/root"));
  EXPECT_FALSE(is_process_root("/srv/proc/4242/root"));
}

// Lexical: ".." stops at the tree's "/", a path already under the tree is
// not put under it twice, and a sibling sharing the tree's name as a
// prefix is a path of the tree like any other.
TEST(SystemRoot, UnderRootNeverClimbsAboveTheTree) {
  const fs::path root = "/srv/tree";
  EXPECT_EQ(under_root(root, "/usr/lib"), "/srv/tree/usr/lib");
  EXPECT_EQ(under_root(root, "/srv/tree/usr/lib"), "/srv/tree/usr/lib");
  EXPECT_EQ(under_root(root, "/srv/tree"), "/srv/tree");
  EXPECT_EQ(under_root(root, "/"), "/srv/tree");
  EXPECT_EQ(under_root(root, "/../../etc/shadow"), "/srv/tree/etc/shadow");
  EXPECT_EQ(under_root(root, "/srv/tree/../../etc/shadow"), "/srv/tree/etc/shadow");
  EXPECT_EQ(under_root(root, "/usr/./lib//../lib64"), "/srv/tree/usr/lib64");
  EXPECT_EQ(under_root(root, "/srv/tree2/etc"), "/srv/tree/srv/tree2/etc");
  EXPECT_EQ(under_root("/", "/../etc"), "/../etc") << "the host: as it is";
  EXPECT_EQ(under_root(root, "lib/x"), "lib/x") << "relative: as it is";
}

// The tree's links are resolved as its processes resolve them; the result
// is named under the tree, whatever host path a link names.
TEST_F(SystemRootTree, CanonicalInResolvesHostileLinksInsideTheTree) {
  std::error_code error;
  EXPECT_EQ(canonical_in(m_root, m_root / "lib/a.so", error), m_root / "usr/lib/a.so");
  EXPECT_FALSE(error) << error.message();
  EXPECT_EQ(canonical_in(m_root, "/lib/a.so", error), m_root / "usr/lib/a.so")
      << "a path as the tree names it";
  EXPECT_EQ(canonical_in(m_root, m_root / "lib/absent/more", error), m_root / "usr/lib/absent/more")
      << "what does not exist is appended as it is";
  EXPECT_FALSE(error) << error.message();
  EXPECT_EQ(canonical_in(m_root, m_root / "escape/etc/marker", error), m_root / "etc/marker");
  const auto climbed = canonical_in(m_root, m_root / "../../etc/marker", error);
  EXPECT_TRUE(climbed.string().starts_with(m_root.string() + "/")) << climbed;

  // A link to a host path the tree does not have leads nowhere: left as
  // it is (as weakly_canonical leaves it), never resolved to the host's.
  EXPECT_EQ(canonical_in(m_root, m_root / "host/secret", error), m_root / "host/secret");
  EXPECT_FALSE(error) << error.message();
  EXPECT_EQ(canonical_in(m_root, m_root / "secret", error), m_root / "secret");
  // Where the tree has that path, it is the tree's, named under the tree.
  m_dir.write("rootfs" + m_outside.string() + "/secret", "the tree's own\n");
  EXPECT_EQ(canonical_in(m_root, m_root / "host/secret", error),
            under_root(m_root, m_outside / "secret"));
  EXPECT_EQ(canonical_in(m_root, m_root / "secret", error),
            under_root(m_root, m_outside / "secret"));
}

TEST_F(SystemRootTree, CanonicalInOfALoopIsAnErrorNotAHang) {
  std::error_code error;
  const auto path = m_root / "ping/etc";
  EXPECT_EQ(canonical_in(m_root, path, error), path);
  EXPECT_EQ(error, std::errc::too_many_symbolic_link_levels);
}

// The tree may be named through a link of the host's: results are named
// under the root as given.
TEST_F(SystemRootTree, CanonicalInOfATreeNamedThroughALink) {
  const auto named = m_dir.path() / "image-link";
  fs::create_symlink(m_root, named);
  std::error_code error;
  EXPECT_EQ(canonical_in(named, named / "lib/a.so", error), named / "usr/lib/a.so");
  EXPECT_FALSE(error) << error.message();
  EXPECT_EQ(canonical_in(m_dir.path() / "no-tree", "/etc", error), "/etc");
  EXPECT_TRUE(error) << "no tree there";
}

TEST_F(SystemRootTree, CanonicalInOfTheHostIsWeaklyCanonical) {
  std::error_code error;
  EXPECT_EQ(canonical_in("/", m_root / "host/absent", error), m_outside / "absent");
  EXPECT_FALSE(error) << error.message();
}

// A tree whose real path is the host's "/" (a rootfs: or root given as a
// link to "/") resolves paths like any other tree, not "not below the tree"
// for each (the prefix to strip would have been "//").
TEST_F(SystemRootTree, CanonicalInOfATreeThatIsTheHostsRootThroughALink) {
  const auto slash = m_dir.path() / "slash";
  fs::create_symlink("/", slash);
  std::error_code error;
  // The tree's own "/" is the host's: the rootfs' absolute link lib ->
  // /usr/lib starts there, and a.so, absent, is appended as it is.
  const auto resolved = canonical_in(slash, slash / m_root.relative_path() / "lib/a.so", error);
  EXPECT_FALSE(error) << error.message();
  EXPECT_EQ(resolved, slash / "usr/lib/a.so");
  const auto directory = canonical_in(slash, slash / m_root.relative_path() / "usr/lib", error);
  EXPECT_FALSE(error) << error.message();
  EXPECT_EQ(directory, slash / m_root.relative_path() / "usr/lib");
}

// Runs a child that enters a mount namespace of its own and pivots its
// root into `tree`, as a container runtime starts a container's process;
// its PID, or -1 (errno set) where mounts cannot be made here. Only system
// calls between fork and exit: the test binary is threaded.
pid_t start_container(const fs::path& tree, int& release_fd) {
  int ready[2];
  int hold[2];
  if (::pipe2(ready, O_CLOEXEC) != 0 || ::pipe2(hold, O_CLOEXEC) != 0) {
    return -1;
  }
  const std::string path = tree.string();
  const pid_t child = ::fork();
  if (child == 0) {
    // Only the parent's end of `hold` may keep it open: its close is the signal.
    ::close(ready[0]);
    ::close(hold[1]);
    char step = 0;
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount(path.c_str(), path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
        ::chdir(path.c_str()) != 0 || ::syscall(SYS_pivot_root, ".", ".") != 0 ||
        ::umount2(".", MNT_DETACH) != 0 || ::chdir("/") != 0) {
      step = static_cast<char>(errno);
      (void)::write(ready[1], &step, 1);
      ::_exit(1);
    }
    (void)::write(ready[1], &step, 1);
    (void)::read(hold[0], &step, 1);  // until the parent closes its end
    ::_exit(0);
  }
  ::close(ready[1]);
  ::close(hold[0]);
  char step = 1;
  const bool started = child > 0 && ::read(ready[0], &step, 1) == 1 && step == 0;
  ::close(ready[0]);
  release_fd = hold[1];
  if (!started) {
    ::close(hold[1]);
    if (child > 0) {
      ::waitpid(child, nullptr, 0);
    }
    errno = step;
    return -1;
  }
  return child;
}

// A running container's files through /proc/PID/root: the kernel names
// them from the container's "/", and its links stay inside it.
TEST_F(SystemRootTree, CanonicalInOfAContainersProcessRoot) {
  int release = -1;
  const pid_t container = start_container(m_root, release);
  if (container < 0) {
    GTEST_SKIP() << "skipped: cannot start a process in a mount namespace of its own: "
                 << std::strerror(errno);
  }
  // Ended whatever fails below: closing its pipe lets it exit.
  struct Stop {
    pid_t pid;
    int release;
    ~Stop() {
      ::close(release);
      ::waitpid(pid, nullptr, 0);
    }
  } stop{container, release};
  const fs::path root = "/proc/" + std::to_string(container) + "/root";
  std::error_code error;
  EXPECT_EQ(canonical_in(root, root / "lib/a.so", error), root / "usr/lib/a.so");
  EXPECT_FALSE(error) << error.message();
  EXPECT_EQ(canonical_in(root, root / "escape/etc/marker", error), root / "etc/marker");
  EXPECT_EQ(canonical_in(root, root / "host/secret", error), root / "host/secret")
      << "the host's directory is not the container's";
  const SystemRoot tree(root);
  const int fd = tree.open_inside("/host/secret", O_RDONLY, true);
  EXPECT_LT(fd, 0) << "the host's secret read through the container's link";
  if (fd >= 0) {
    ::close(fd);
  }
}

TEST_F(SystemRootTree, InsideAndOutsideTranslateNamesOnlyOfTheTree) {
  const SystemRoot tree(m_root);
  const std::string root = m_root.string();
  EXPECT_FALSE(tree.is_host());
  EXPECT_EQ(tree.error(), "");
  EXPECT_EQ(tree.inside(root), "/");
  EXPECT_EQ(tree.inside(root + "/usr/lib"), "/usr/lib");
  EXPECT_EQ(tree.inside("/usr/lib"), "/usr/lib");
  EXPECT_EQ(tree.inside(root + "2/usr/lib"), root + "2/usr/lib") << "a sibling is not the tree";
  EXPECT_EQ(tree.outside("/usr/lib"), root + "/usr/lib");
  EXPECT_EQ(tree.outside("usr/lib"), root + "/usr/lib");

  const SystemRoot host("/");
  EXPECT_TRUE(host.is_host());
  EXPECT_EQ(host.inside(root + "/usr"), root + "/usr");
  EXPECT_EQ(host.outside("/usr"), "/usr");
}

// Opened below the tree's root: neither ".." nor a link climbs out, and a
// link to a host file finds only what the tree has at that name.
TEST_F(SystemRootTree, OpenInsideNeverLeavesTheTree) {
  const SystemRoot tree(m_root);
  for (const char* path :
       {"/etc/marker", "/../../../../etc/marker", "/escape/etc/marker", "etc/marker"}) {
    const int fd = tree.open_inside(path, O_RDONLY, true);
    ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
    EXPECT_EQ(read_all(fd), "the tree's marker\n") << path;
    ::close(fd);
  }
  for (const char* path : {"/host/secret", "/secret"}) {
    errno = 0;
    EXPECT_LT(tree.open_inside(path, O_RDONLY, true), 0) << path;
    EXPECT_EQ(errno, ENOENT) << path;
  }
  // Its own copy at the host's path is what the link names inside it.
  m_dir.write("rootfs" + m_outside.string() + "/secret", "the tree's own\n");
  const int fd = tree.open_inside("/secret", O_RDONLY, true);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  EXPECT_EQ(read_all(fd), "the tree's own\n");
  ::close(fd);

  errno = 0;
  EXPECT_LT(tree.open_inside("/lib", O_RDONLY, false), 0) << "not following: the link refused";
  EXPECT_EQ(errno, ELOOP);
}

// /proc inside a tree (a container's rootfs has it mounted) holds magic
// links that lead wherever the reader stands: the agent's own root.
TEST_F(SystemRootTree, MagicLinksInTheTreeAreNeverFollowed) {
  fs::create_directories(m_root / "proc");
  if (::mount("/proc", (m_root / "proc").c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    GTEST_SKIP() << "skipped: cannot bind-mount /proc here: " << std::strerror(errno);
  }
  // Detached before the temporary tree is removed, whatever fails below.
  struct Unmount {
    fs::path at;
    ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
  } unmount{m_root / "proc"};
  fs::create_symlink("/proc/self/root/etc", m_root / "hostetc");
  const SystemRoot tree(m_root);
  for (const std::string& path :
       std::vector<std::string>{"/proc/self/root" + m_outside.string() + "/secret",
                                "/hostetc/os-release", "/proc/self/cwd"}) {
    errno = 0;
    const int fd = tree.open_inside(path, O_RDONLY, true);
    EXPECT_LT(fd, 0) << path;
    EXPECT_EQ(errno, ELOOP) << path;
    if (fd >= 0) {
      ::close(fd);
    }
  }
  struct stat info {};
  EXPECT_FALSE(tree.stat("/proc/self/root" + m_outside.string() + "/secret", info));
}

TEST_F(SystemRootTree, StatFollowsLinksInsideTheTreeAndLstatDoesNot) {
  const SystemRoot tree(m_root);
  struct stat followed {};
  struct stat real {};
  ASSERT_TRUE(tree.stat("/lib/a.so", followed));
  ASSERT_EQ(::stat((m_root / "usr/lib/a.so").c_str(), &real), 0);
  EXPECT_EQ(followed.st_ino, real.st_ino);
  EXPECT_EQ(followed.st_dev, real.st_dev);
  struct stat link {};
  ASSERT_TRUE(tree.stat("/lib", link, false));
  EXPECT_TRUE(S_ISLNK(link.st_mode));
  struct stat host {};
  EXPECT_FALSE(tree.stat("/host/secret", host)) << "the host's file, not the tree's";
  EXPECT_TRUE(tree.stat("/secret", host, false)) << "the link itself is there";
}

TEST_F(SystemRootTree, ReadLinkGivesTheTargetAsWritten) {
  const SystemRoot tree(m_root);
  EXPECT_EQ(tree.read_link("/lib"), "/usr/lib");
  EXPECT_EQ(tree.read_link("/host"), m_outside.string());
  fs::create_symlink("a.so", m_root / "usr/lib/liba.so");
  EXPECT_EQ(tree.read_link("/lib/liba.so"), "a.so") << "the directory's link followed inside";
  EXPECT_EQ(tree.read_link("/../../lib"), "/usr/lib");
  errno = 0;
  EXPECT_EQ(tree.read_link("/etc/marker"), std::nullopt);
  EXPECT_NE(errno, 0);
  EXPECT_EQ(tree.read_link("/absent"), std::nullopt);
}

// Globs list the tree's directories, through its links, and name the
// matches under the tree: never the host's /usr/lib, nor /outside behind
// /host.
TEST_F(SystemRootTree, GlobMatchesTheTreesFilesNamedUnderIt) {
  const SystemRoot tree(m_root);
  const std::string root = m_root.string();
  const std::vector<std::string> both = {root + "/lib/a.so", root + "/lib/b.so"};
  EXPECT_EQ(tree.glob("/lib/*.so").paths, both);
  EXPECT_EQ(tree.glob(root + "/lib/*.so").paths, both) << "a host path under the tree";
  EXPECT_EQ(tree.glob(facts::glob_literal(root) + "/lib/?.so").paths, both);
  EXPECT_EQ(tree.glob("/lib/a.so").paths, std::vector<std::string>{root + "/lib/a.so"});
  const auto none = tree.glob("/host/*.so");
  EXPECT_TRUE(none.paths.empty()) << none.paths.front();
  EXPECT_EQ(none.error, "");
  EXPECT_TRUE(tree.glob("/host/secret").paths.empty());
}

// A tree whose own path holds glob's special characters: the tree's path
// is matched literally, never as a pattern.
TEST(SystemRoot, GlobInATreeWhosePathLooksLikeAPattern) {
  testing::TempDir dir;
  dir.write("tree[1]*/usr/lib/a.so", "");
  dir.write("tree1x/usr/lib/wrong.so", "");
  const auto root = fs::canonical(dir.path()) / "tree[1]*";
  const SystemRoot tree(root);
  const std::vector<std::string> expected = {root.string() + "/usr/lib/a.so"};
  EXPECT_EQ(tree.glob("/usr/lib/*.so").paths, expected);
  EXPECT_EQ(tree.glob(facts::glob_literal(root.string()) + "/usr/lib/*.so").paths, expected);
}

// A pattern's ".." (a ${VAR} of the env's activation holds what the env
// likes) stops at the tree's "/" when it is read, and its matches are named
// so: ROOT/usr/lib/a.so, never ROOT/../../usr/lib/a.so (a host path).
TEST_F(SystemRootTree, GlobNamesMatchesUnderTheTreeEvenThroughDotDot) {
  const SystemRoot tree(m_root);
  const auto found = tree.glob("/../../usr/lib/a.so*");
  ASSERT_EQ(found.paths.size(), 1U) << "the tree's file is found";
  const auto named = fs::path(found.paths[0]).lexically_normal();
  EXPECT_EQ(named, m_root / "usr/lib/a.so");
}

TEST(SystemRoot, ATreeThatIsNotThereReadsNothing) {
  testing::TempDir dir;
  const SystemRoot tree(dir.path() / "absent");
  EXPECT_NE(tree.error(), "");
  errno = 0;
  EXPECT_LT(tree.open_inside("/etc/os-release", O_RDONLY, true), 0);
  EXPECT_EQ(errno, EBADF);
  struct stat info {};
  EXPECT_FALSE(tree.stat("/", info));
  const auto globbed = tree.glob("/*");
  EXPECT_TRUE(globbed.paths.empty());
  EXPECT_EQ(globbed.error, tree.error());
}

}  // namespace
}  // namespace envcontract::process
