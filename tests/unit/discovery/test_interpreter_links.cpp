// discovery/interpreter_links.cpp: the interpreter an env's bin/python
// leads to, followed link by link as the kernel follows it, in real trees
// of symlinks.
#include "discovery/interpreter_links.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace envcontract::discovery {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

facts::PythonEnv env_with_python(const fs::path& python) {
  facts::PythonEnv env;
  env.prefix = python.parent_path().parent_path();
  env.python = python;
  return env;
}

// A chain of `links` links, link_0 -> link_1 -> ... -> python3.12 (a
// regular file), all in `dir`; returns link_0.
fs::path link_chain(const fs::path& dir, int links) {
  fs::create_directories(dir);
  std::ofstream(dir / "python3.12") << "#!interpreter\n";
  for (int i = 0; i < links; ++i) {
    const std::string next = i + 1 == links ? "python3.12" : "link_" + std::to_string(i + 1);
    fs::create_symlink(next, dir / ("link_" + std::to_string(i)));
  }
  return dir / "link_0";
}

// Whether the kernel opens `path` of the tree at `root` as the tree's own
// processes would (RESOLVE_IN_ROOT: ".." and absolute links stay inside):
// the oracle for what a container's interpreter really is.
bool kernel_opens_inside(const fs::path& root, const std::string& path) {
  const int root_fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) {
    return false;
  }
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT;
  const long fd = ::syscall(SYS_openat2, root_fd, path.c_str(), &how, sizeof how);
  const int error = errno;
  ::close(root_fd);
  if (fd < 0) {
    if (error == ENOSYS || error == EPERM) {
      // A kernel or a seccomp filter without openat2: nothing to compare with.
      throw std::runtime_error("openat2 is not available here");
    }
    return false;
  }
  ::close(static_cast<int>(fd));
  return true;
}

// How CPython, conda and Debian name their interpreters: pythonX.Y, with a
// "t" for a free-threaded build. Anything else tells no version.
TEST(InterpreterLinks, OnlyPythonXYNamesTellAVersion) {
  EXPECT_EQ(python_version_in_name("python3.10"), "3.10");
  EXPECT_EQ(python_version_in_name("python3.13t"), "3.13");
  EXPECT_EQ(python_version_in_name("python2.7"), "2.7");
  for (const char* name : {"python", "python3", "python3.", "python.10", "python3.1a",
                           "python3.10.1", "pythonw3.10", "ipython3.10", "python3.10-config", ""}) {
    EXPECT_EQ(python_version_in_name(name), "") << name;
  }
}

// bin/python -> python3 -> python3.11, as venv and conda write them: every
// path in the chain, each link as written, and the version of the regular
// file it ends at.
TEST(InterpreterLinks, ARelativeChainEndsAtTheInterpreterItNames) {
  TempDir dir;
  const fs::path bin = fs::canonical(dir.path()) / "env" / "bin";
  dir.write("env/bin/python3.11", "#!interpreter\n");
  fs::create_symlink("python3.11", bin / "python3");
  fs::create_symlink("python3", bin / "python");
  const auto links = follow_interpreter_links(env_with_python(bin / "python"));
  EXPECT_EQ(links.chain,
            (std::vector<fs::path>{bin / "python", bin / "python3", bin / "python3.11"}));
  EXPECT_EQ(links.written, (std::vector<std::string>{"python3", "python3.11"}));
  EXPECT_TRUE(links.regular);
  EXPECT_FALSE(links.missing);
  EXPECT_FALSE(links.loop);
  EXPECT_EQ(links.unreadable, 0);
  EXPECT_EQ(links.last_inside, (bin / "python3.11").string());
  EXPECT_EQ(links.python_version(), "3.11");
  EXPECT_EQ(links.text(bin.parent_path()), "bin/python -> python3 -> python3.11");
  // A prefix the first path is not under names it in full.
  EXPECT_EQ(links.text(bin.parent_path() / "elsewhere"),
            (bin / "python").string() + " -> python3 -> python3.11");
}

// A bin/python that is the interpreter itself is a chain of one.
TEST(InterpreterLinks, ARegularBinPythonIsAChainOfOne) {
  TempDir dir;
  const fs::path python = dir.write("env/bin/python", "#!interpreter\n");
  const auto links = follow_interpreter_links(env_with_python(python));
  EXPECT_EQ(links.chain, std::vector<fs::path>{python});
  EXPECT_TRUE(links.written.empty());
  EXPECT_TRUE(links.regular);
  // "python" says no version: only pythonX.Y does.
  EXPECT_EQ(links.python_version(), "");
  EXPECT_EQ(links.text(dir.path() / "env"), "bin/python");
}

// An uninstalled base interpreter: every link up to the path that is
// gone, that path included, and no version even though its name has one.
// A path through a regular file (ENOTDIR) is as missing.
TEST(InterpreterLinks, ADanglingChainNamesEveryLinkUpToTheMissingPath) {
  TempDir dir;
  const fs::path base = fs::canonical(dir.path());
  const fs::path bin = base / "env" / "bin";
  const fs::path gone = base / "opt" / "gone" / "bin" / "python3.10";
  fs::create_directories(bin);
  fs::create_symlink(gone, bin / "python3.10");
  fs::create_symlink("python3.10", bin / "python");
  const auto links = follow_interpreter_links(env_with_python(bin / "python"));
  EXPECT_TRUE(links.missing);
  EXPECT_FALSE(links.regular);
  EXPECT_EQ(links.chain, (std::vector<fs::path>{bin / "python", bin / "python3.10", gone}));
  EXPECT_EQ(links.written, (std::vector<std::string>{"python3.10", gone.string()}));
  EXPECT_EQ(links.last_inside, gone.string());
  EXPECT_EQ(links.python_version(), "");
  EXPECT_EQ(links.text(base / "env"), "bin/python -> python3.10 -> " + gone.string());

  const fs::path file = base / "a-file";
  dir.write("a-file", "");
  fs::create_symlink(file / "python3.10", bin / "through-a-file");
  const auto through = follow_interpreter_links(env_with_python(bin / "through-a-file"));
  EXPECT_TRUE(through.missing);
  EXPECT_EQ(through.chain.back(), file / "python3.10");
}

// Links that lead back to themselves are a loop, told once the kernel's
// own bound (40) is passed, not followed forever; the kernel agrees
// (ELOOP).
TEST(InterpreterLinks, LinksThatLoopAreToldAsALoop) {
  TempDir dir;
  const fs::path bin = dir.path() / "env" / "bin";
  fs::create_directories(bin);
  fs::create_symlink("python3", bin / "python");
  fs::create_symlink("python", bin / "python3");
  const auto links = follow_interpreter_links(env_with_python(bin / "python"));
  EXPECT_TRUE(links.loop);
  EXPECT_FALSE(links.missing);
  EXPECT_FALSE(links.regular);
  EXPECT_EQ(links.chain.size(), 41U);
  EXPECT_EQ(links.written.size(), 40U);
  EXPECT_EQ(links.python_version(), "");
  const int fd = ::open((bin / "python").c_str(), O_RDONLY | O_CLOEXEC);
  const int error = errno;
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(error, ELOOP);
}

// The bound is the kernel's exactly: a chain of 40 links still reaches the
// interpreter (the kernel opens it), one of 41 does not (ELOOP).
TEST(InterpreterLinks, FortyLinksAreFollowedAndFortyOneAreALoopAsForTheKernel) {
  TempDir dir;
  const fs::path base = fs::canonical(dir.path());
  const fs::path forty = link_chain(base / "forty", 40);
  const auto followed = follow_interpreter_links(env_with_python(forty));
  EXPECT_FALSE(followed.loop);
  EXPECT_TRUE(followed.regular);
  EXPECT_EQ(followed.chain.size(), 41U);
  EXPECT_EQ(followed.chain.back(), base / "forty" / "python3.12");
  EXPECT_EQ(followed.python_version(), "3.12");
  const int fd = ::open(forty.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0) << "the kernel follows 40 links";
  if (fd >= 0) {
    ::close(fd);
  }

  const fs::path forty_one = link_chain(base / "forty-one", 41);
  const auto cut = follow_interpreter_links(env_with_python(forty_one));
  EXPECT_TRUE(cut.loop);
  EXPECT_FALSE(cut.regular);
  EXPECT_EQ(cut.python_version(), "");
  const int cut_fd = ::open(forty_one.c_str(), O_RDONLY | O_CLOEXEC);
  const int error = errno;
  EXPECT_EQ(cut_fd, -1);
  EXPECT_EQ(error, ELOOP);
}

// A relative link is resolved from its link's real directory: when bin/
// is itself a link, ".." climbs from where bin/ really is, as the kernel
// climbs, not from the path's text (a decoy waits there).
TEST(InterpreterLinks, DotDotClimbsFromTheLinksRealDirectory) {
  TempDir dir;
  const fs::path base = fs::canonical(dir.path());
  const fs::path real_bin = base / "real" / "deep" / "bin";
  fs::create_directories(real_bin);
  dir.write("real/deep/python3.12", "#!interpreter\n");
  dir.write("env/python3.9", "#!decoy\n");
  fs::create_symlink(real_bin, base / "env" / "bin");
  fs::create_symlink("../python3.9", real_bin / "python");
  // real/deep/bin/../python3.9 is real/deep/python3.9, which is missing.
  auto links = follow_interpreter_links(env_with_python(base / "env" / "bin" / "python"));
  EXPECT_TRUE(links.missing);
  EXPECT_EQ(links.chain.back(), base / "real" / "deep" / "python3.9");

  fs::remove(real_bin / "python");
  fs::create_symlink("../python3.12", real_bin / "python");
  links = follow_interpreter_links(env_with_python(base / "env" / "bin" / "python"));
  EXPECT_TRUE(links.regular);
  EXPECT_EQ(links.chain.back(), base / "real" / "deep" / "python3.12");
  EXPECT_EQ(links.chain.back(), fs::canonical(base / "env" / "bin" / "python"));
  EXPECT_EQ(links.python_version(), "3.12");
}

// A chain that ends at a directory named like an interpreter is no
// interpreter: neither regular nor of any version.
TEST(InterpreterLinks, AChainEndingAtADirectoryIsNoInterpreter) {
  TempDir dir;
  const fs::path bin = fs::canonical(dir.path()) / "env" / "bin";
  fs::create_directories(bin / "python3.11");
  fs::create_symlink("python3.11", bin / "python");
  const auto links = follow_interpreter_links(env_with_python(bin / "python"));
  EXPECT_FALSE(links.regular);
  EXPECT_FALSE(links.missing);
  EXPECT_EQ(links.chain.back(), bin / "python3.11");
  EXPECT_EQ(links.python_version(), "");
}

// Inside a container the env's code runs in the container's root: an
// absolute link starts again at its "/". The host's file of that name
// (/bin/sh, which every host has) is never what the chain reaches.
TEST(InterpreterLinks, AnAbsoluteLinkOfAContainerEnvStartsAtTheContainersRoot) {
  TempDir dir;
  const fs::path root = fs::canonical(dir.path()) / "rootfs";
  const fs::path bin = root / "opt" / "env" / "bin";
  fs::create_directories(bin);
  dir.write("rootfs/usr/bin/python3.11", "#!interpreter\n");
  // Written as a link may be written: the chain names it normalised.
  fs::create_symlink("/usr//bin/./python3.11", bin / "python");
  fs::create_symlink("/bin/sh", bin / "python-host");
  facts::PythonEnv env = env_with_python(bin / "python");
  env.system_root = root;
  env.exec.argv = {"/bin/true"};

  const auto links = follow_interpreter_links(env);
  EXPECT_EQ(links.chain, (std::vector<fs::path>{bin / "python", root / "usr/bin/python3.11"}));
  EXPECT_EQ(links.written, std::vector<std::string>{"/usr//bin/./python3.11"});
  EXPECT_EQ(links.last_inside, "/usr/bin/python3.11");
  EXPECT_TRUE(links.regular);
  EXPECT_EQ(links.python_version(), "3.11");
  EXPECT_EQ(links.text(root / "opt" / "env"), "bin/python -> /usr//bin/./python3.11");

  env.python = bin / "python-host";
  const auto host = follow_interpreter_links(env);
  EXPECT_TRUE(host.missing);
  EXPECT_EQ(host.chain.back(), root / "bin" / "sh");
  EXPECT_EQ(host.last_inside, "/bin/sh");
}

// An env of a --root tree, or of the host, runs on the host: an absolute
// link is followed as the host's kernel follows it, to the host's file.
TEST(InterpreterLinks, AnAbsoluteLinkOfARootTreeEnvIsFollowedOnTheHost) {
  TempDir dir;
  const fs::path base = fs::canonical(dir.path());
  const fs::path root = base / "rootfs";
  const fs::path bin = root / "opt" / "env" / "bin";
  fs::create_directories(bin);
  const fs::path host_python = dir.write("host/bin/python3.12", "#!interpreter\n");
  fs::create_symlink(base / "host/bin/python3.12", bin / "python");
  facts::PythonEnv env = env_with_python(bin / "python");
  env.system_root = root;  // no exec: it runs on the host
  const auto links = follow_interpreter_links(env);
  EXPECT_TRUE(links.regular);
  EXPECT_EQ(links.chain.back(), base / "host/bin/python3.12");
  EXPECT_EQ(links.chain.back(), fs::canonical(env.python));
  EXPECT_EQ(links.python_version(), "3.12");
}

// A relative link of a container env with more ".." than it has
// directories above it stops at the container's "/", as the kernel does
// inside the container (RESOLVE_IN_ROOT agrees): it never climbs out of the
// rootfs into the host's directories (the interpreter was said missing).
TEST(InterpreterLinks, DotDotInAContainerStopsAtItsRoot) {
  TempDir dir;
  const fs::path root = fs::canonical(dir.path()) / "rootfs";
  fs::create_directories(root / "bin");
  dir.write("rootfs/usr/bin/python3.11", "#!interpreter\n");
  fs::create_symlink("../../usr/bin/python3.11", root / "bin" / "python");
  try {
    ASSERT_TRUE(kernel_opens_inside(root, "/bin/python"));
  } catch (const std::runtime_error& unavailable) {
    GTEST_SKIP() << "skipped: " << unavailable.what();
  }
  facts::PythonEnv env = env_with_python(root / "bin" / "python");
  env.system_root = root;
  env.exec.argv = {"/bin/true"};
  const auto links = follow_interpreter_links(env);
  EXPECT_FALSE(links.missing);
  EXPECT_TRUE(links.regular);
  EXPECT_EQ(links.chain.back(), root / "usr/bin/python3.11");
  EXPECT_EQ(links.last_inside, "/usr/bin/python3.11");
}

// The chain is read as the env's user: a link into a directory only root
// may enter is unreadable to them (EACCES) and named no further; a user
// the agent cannot be reads nothing at all.
TEST(InterpreterLinks, ALinkTheEnvsUserMayNotFollowIsUnreadable) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "skipped: needs root, to read as another user";
  }
  const passwd* nobody = ::getpwnam("nobody");
  if (nobody == nullptr) {
    GTEST_SKIP() << "skipped: there is no user nobody here";
  }
  TempDir dir;
  const fs::path bin = dir.path() / "env" / "bin";
  fs::create_directories(bin);
  const fs::path hidden = dir.write("root-only/python3.11", "#!interpreter\n");
  fs::permissions(dir.path() / "root-only", fs::perms::owner_all);
  fs::create_symlink(hidden, bin / "python");
  facts::PythonEnv env = env_with_python(bin / "python");
  env.run_as.uid = nobody->pw_uid;
  env.run_as.gid = nobody->pw_gid;
  env.run_as.groups = {nobody->pw_gid};
  env.run_as.user = "nobody";
  env.run_as.switch_credentials = true;

  const auto links = follow_interpreter_links(env);
  EXPECT_EQ(links.unreadable, EACCES);
  EXPECT_FALSE(links.missing);
  EXPECT_FALSE(links.regular);
  EXPECT_EQ(links.chain, (std::vector<fs::path>{bin / "python", hidden}));
  EXPECT_EQ(links.python_version(), "");
  // Root (the agent itself) reads it: the refusal was the user's.
  EXPECT_TRUE(follow_interpreter_links(env_with_python(bin / "python")).regular);

  env.run_as.problem = "the configured user does not exist";
  const auto refused = follow_interpreter_links(env);
  EXPECT_EQ(refused.unreadable, EPERM);
  EXPECT_EQ(refused.chain, std::vector<fs::path>{bin / "python"});
  EXPECT_TRUE(refused.written.empty());
}

}  // namespace
}  // namespace envcontract::discovery
