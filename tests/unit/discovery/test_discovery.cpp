// Env discovery on the demo host and on purpose-built broken trees.
#include "discovery/discovery.hpp"

#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "tests/support/demo_host.hpp"
#include "tests/support/hostile_yaml.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::discovery {
namespace {

namespace fs = std::filesystem;
using testing::demo_host;

DiscoveryOptions under(const fs::path& root) {
  DiscoveryOptions options;
  options.roots = {root};
  return options;
}

const PythonEnv* find_env(const Discovery& discovery, const std::string& name) {
  for (const auto& env : discovery.envs) {
    if (env.name == name) {
      return &env;
    }
  }
  return nullptr;
}

std::string all_problems(const Discovery& discovery) {
  std::string text;
  for (const auto& problem : discovery.problems) {
    text += problem.path.string() + ": " + problem.problem + "\n";
  }
  return text;
}

// A minimal conda env: conda-meta with a python record and an interpreter link.
void make_conda_env(const fs::path& prefix, const std::string& python_version) {
  fs::create_directories(prefix / "conda-meta");
  fs::create_directories(prefix / "bin");
  std::ofstream(prefix / "conda-meta" / ("python-" + python_version + "-h1234_0.json")) << "{}";
  fs::create_symlink("/bin/true", prefix / "bin" / "python");
}

TEST(Discovery, FindsEveryEnvOfTheDemoHost) {
  const auto discovery = discover_envs(under(demo_host()));
  std::set<std::string> names;
  for (const auto& env : discovery.envs) {
    names.insert(env.name);
  }
  EXPECT_EQ(names, (std::set<std::string>{"base", "torch-fl-activate", "torch-fl-cpu",
                                          "torch-fl-hf-test", "torch-fl-xpu-py310",
                                          "torch-fl-xpu-py311", "torch-xpu-py310", "xpu210v"}));
  const auto* cpu = find_env(discovery, "torch-fl-cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->kind, EnvKind::conda);
  EXPECT_EQ(cpu->prefix, fs::canonical(demo_host() / "miniconda3/envs/torch-fl-cpu"));
  EXPECT_EQ(cpu->python, cpu->prefix / "bin" / "python");
  EXPECT_TRUE(cpu->python_version.starts_with("3.10")) << cpu->python_version;
  EXPECT_FALSE(cpu->owner.empty());
  EXPECT_TRUE(cpu->problems.empty());
  // Reached both through the conda root and through environments.txt, listed once.
  EXPECT_EQ(cpu->found_by.size(), 2U);

  const auto* py311 = find_env(discovery, "torch-fl-xpu-py311");
  ASSERT_NE(py311, nullptr);
  EXPECT_TRUE(py311->python_version.starts_with("3.11")) << py311->python_version;

  const auto* venv = find_env(discovery, "xpu210v");
  ASSERT_NE(venv, nullptr);
  EXPECT_EQ(venv->kind, EnvKind::venv);
  EXPECT_TRUE(venv->python_version.starts_with("3.10")) << venv->python_version;

  const auto* base = find_env(discovery, "base");
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(base->prefix, fs::canonical(demo_host() / "miniconda3"));
}

TEST(Discovery, ReportsTheStaleEnvironmentsTxtEntry) {
  const auto discovery = discover_envs(under(demo_host()));
  ASSERT_EQ(discovery.problems.size(), 1U) << all_problems(discovery);
  EXPECT_EQ(discovery.problems[0].path, demo_host() / "miniconda3/envs/torch-old-removed");
  EXPECT_NE(discovery.problems[0].problem.find("stale entry"), std::string::npos);
}

TEST(Discovery, BrokenPrefixesAreReportedNotFatal) {
  testing::TempDir dir;
  const fs::path conda = dir.path() / "miniconda3";
  make_conda_env(conda, "3.11.7");
  fs::create_directories(conda / "envs");
  make_conda_env(conda / "envs" / "good", "3.10.13");
  // Half-deleted: conda-meta survived, the interpreter did not.
  fs::create_directories(conda / "envs" / "half-deleted" / "conda-meta");
  // The interpreter link points at a Python that was uninstalled.
  make_conda_env(conda / "envs" / "dangling", "3.10.13");
  fs::remove(conda / "envs" / "dangling" / "bin" / "python");
  fs::create_symlink("/nonexistent/python3.10", conda / "envs" / "dangling" / "bin" / "python");
  // Not an env at all, and a directory that cannot be read (a symlink loop).
  fs::create_directories(conda / "envs" / "empty");
  fs::create_symlink("loop", conda / "envs" / "loop");

  const auto discovery = discover_envs(under(dir.path()));
  ASSERT_NE(find_env(discovery, "good"), nullptr) << all_problems(discovery);
  EXPECT_TRUE(find_env(discovery, "good")->problems.empty());

  const auto* half = find_env(discovery, "half-deleted");
  ASSERT_NE(half, nullptr);
  ASSERT_EQ(half->problems.size(), 1U);
  EXPECT_EQ(half->problems[0].kind, facts::EnvProblem::Kind::no_interpreter);
  EXPECT_NE(half->problems[0].text.find("no Python interpreter"), std::string::npos);

  const auto* dangling = find_env(discovery, "dangling");
  ASSERT_NE(dangling, nullptr);
  ASSERT_EQ(dangling->problems.size(), 1U);
  EXPECT_EQ(dangling->problems[0].kind, facts::EnvProblem::Kind::no_interpreter);
  EXPECT_NE(dangling->problems[0].text.find("is a dangling symlink: bin/python -> "
                                            "/nonexistent/python3.10, and /nonexistent/python3.10 "
                                            "does not exist"),
            std::string::npos)
      << dangling->problems[0].text;

  std::set<fs::path> problem_paths;
  for (const auto& problem : discovery.problems) {
    problem_paths.insert(problem.path.filename());
  }
  EXPECT_TRUE(problem_paths.contains("empty")) << all_problems(discovery);
  EXPECT_TRUE(problem_paths.contains("loop")) << all_problems(discovery);
}

// Runs discovery as an unprivileged user (root reads everything), returning
// the problems it reported, one per line.
std::string problems_seen_unprivileged(const fs::path& root) {
  if (::geteuid() != 0) {
    return all_problems(discover_envs(under(root)));
  }
  int fds[2];
  if (::pipe(fds) != 0) {
    return "pipe failed";
  }
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) {
      ::_exit(3);
    }
    const std::string text = all_problems(discover_envs(under(root)));
    const ssize_t written = ::write(fds[1], text.data(), text.size());
    ::_exit(written == static_cast<ssize_t>(text.size()) ? 0 : 4);
  }
  ::close(fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) {
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? text : "child failed";
}

TEST(Discovery, UnreadableDirectoriesAreReported) {
  testing::TempDir dir;
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  make_conda_env(dir.path() / "conda", "3.11.7");
  fs::create_directories(dir.path() / "conda" / "envs");
  make_conda_env(dir.path() / "conda" / "envs" / "fine", "3.10.13");
  fs::create_directories(dir.path() / "private" / "secret-env");
  fs::permissions(dir.path() / "private", fs::perms::none);
  const std::string problems = problems_seen_unprivileged(dir.path());
  fs::permissions(dir.path() / "private", fs::perms::owner_all);
  EXPECT_NE(problems.find((dir.path() / "private").string() +
                          ": cannot read directory: Permission denied"),
            std::string::npos)
      << problems;
}

TEST(Discovery, SymlinkedPrefixesAreListedOnce) {
  testing::TempDir dir;
  make_conda_env(dir.path() / "real-env", "3.10.13");
  fs::create_symlink(dir.path() / "real-env", dir.path() / "alias-env");
  fs::create_directories(dir.path() / "home" / "alice" / ".conda");
  std::ofstream(dir.path() / "home/alice/.conda/environments.txt")
      << (dir.path() / "alias-env").string() << "\n"
      << (dir.path() / "real-env").string() << "\n";
  const auto discovery = discover_envs(under(dir.path()));
  ASSERT_EQ(discovery.envs.size(), 1U);
  EXPECT_EQ(discovery.envs[0].prefix, fs::canonical(dir.path() / "real-env"));
}

// conda writes one env prefix per line: a line that is not a path is
// counted, never shown (every user of the host may read the report).
TEST(Discovery, LinesOfEnvironmentsTxtThatAreNotPathsAreCountedNotShown) {
  testing::TempDir dir;
  make_conda_env(dir.path() / "real-env", "3.10.13");
  dir.write("home/alice/.conda/environments.txt",
            "password=hunter2\n" + (dir.path() / "real-env").string() + "\ntoken abc123\n");
  const auto discovery = discover_envs(under(dir.path()));
  const std::string problems = all_problems(discovery);
  ASSERT_EQ(discovery.envs.size(), 1U) << problems;
  EXPECT_EQ(problems.find("hunter2"), std::string::npos) << problems;
  EXPECT_EQ(problems.find("abc123"), std::string::npos) << problems;
  EXPECT_NE(problems.find("2 lines are not an absolute path"), std::string::npos) << problems;
}

// A user's conda files are read as that user: a file only its owner may
// read is read, a link from ~/.conda/environments.txt to a file only root
// may read fails as it would for them, and not a line of that file reaches
// the report; nor does a listing of a directory only root may list, named
// by their .condarc. A shared home others may write to is read as nobody,
// and one nobody cannot enter is said.
TEST(Discovery, AHomesCondaFilesAreReadAsItsOwner) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "skipped: needs root, to give homes to other users";
  }
  // uids of their own (no passwd entry: run with the nobody group), so that
  // reading as nobody, or as root, would not pass for reading as the owner.
  const uid_t alice = 54321;
  const uid_t bob = 54322;
  const passwd* nobody = ::getpwnam("nobody");
  if (nobody == nullptr) {
    GTEST_SKIP() << "skipped: there is no user nobody here";
  }
  const gid_t group = nobody->pw_gid;
  const auto open_to_all = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec;
  // Outside the scanned root, so that only the users' files lead there.
  testing::TempDir outside;
  fs::permissions(outside.path(), open_to_all);
  const fs::path secret = outside.write("root-only/shadow", "/secret-line-only-root-may-read\n");
  make_conda_env(outside.path() / "root-only" / "hidden-env-name", "3.10.13");
  make_conda_env(outside.path() / "alices-env", "3.10.13");
  fs::permissions(outside.path() / "root-only", fs::perms::owner_all);
  testing::TempDir dir;
  fs::permissions(dir.path(), open_to_all);

  // alice's list may be read by her alone: the env it names is found.
  const fs::path alice_home = dir.path() / "home" / "alice";
  const fs::path alices_list =
      dir.write("home/alice/.conda/environments.txt", (outside.path() / "alices-env").string());
  fs::permissions(alices_list, fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(alice_home / ".conda", fs::perms::owner_all);
  fs::permissions(alice_home, fs::perms::owner_all);
  for (const auto& path : {alice_home, alice_home / ".conda", alices_list}) {
    ASSERT_EQ(::lchown(path.c_str(), alice, group), 0) << path;
  }
  // bob's list is a link to a file only root may read, and his .condarc
  // names a directory only root may list.
  const fs::path bob_home = dir.path() / "home" / "bob";
  fs::create_directories(bob_home / ".conda");
  fs::create_symlink(secret, bob_home / ".conda" / "environments.txt");
  std::ofstream(bob_home / ".condarc")
      << "envs_dirs:\n  - " << (outside.path() / "root-only").string() << "\n";
  for (const auto& path : {bob_home, bob_home / ".conda", bob_home / ".conda" / "environments.txt",
                           bob_home / ".condarc"}) {
    ASSERT_EQ(::lchown(path.c_str(), bob, group), 0) << path;
  }
  // A shared home of root's that its group may write to, closed to others.
  const fs::path lab = dir.path() / "home" / "lab";
  fs::create_directories(lab);
  fs::permissions(lab, fs::perms::owner_all | fs::perms::group_all | fs::perms::set_gid);

  const auto discovery = discover_envs(under(dir.path()));
  const std::string problems = all_problems(discovery);
  EXPECT_NE(find_env(discovery, "alices-env"), nullptr) << problems;
  EXPECT_EQ(problems.find("secret-line"), std::string::npos) << problems;
  EXPECT_EQ(find_env(discovery, "hidden-env-name"), nullptr) << problems;
  EXPECT_EQ(problems.find("hidden-env-name"), std::string::npos) << problems;
  // What bob cannot list is named as such: he named it.
  EXPECT_NE(problems.find((outside.path() / "root-only").string() +
                          ": cannot read directory: Permission denied"),
            std::string::npos)
      << problems;
  EXPECT_NE(problems.find(lab.string() + ": not searched for envs: nobody, whom it is read as, "
                                         "cannot enter it (Permission denied)"),
            std::string::npos)
      << problems;
}

// A user's conda installation whose envs/ links to a directory only root
// may list: listed as its owner, that directory's entries are not named in
// the report (as root, each was reported "not a Python environment").
TEST(Discovery, AnInstallationsEnvsAreListedAsItsOwner) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "skipped: needs root, to give an installation to another user";
  }
  const uid_t carol = 54323;
  const passwd* nobody = ::getpwnam("nobody");
  if (nobody == nullptr) {
    GTEST_SKIP() << "skipped: there is no user nobody here";
  }
  const auto open_to_all = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec;
  testing::TempDir outside;
  fs::permissions(outside.path(), open_to_all);
  fs::create_directories(outside.path() / "root-only" / "leaked-dir-name");
  fs::permissions(outside.path() / "root-only", fs::perms::owner_all);
  testing::TempDir dir;
  fs::permissions(dir.path(), open_to_all);
  const fs::path installation = dir.path() / "opt" / "carols-conda";
  make_conda_env(installation, "3.10.13");
  make_conda_env(dir.path() / "opt" / "theirs" / "envs" / "shared-env", "3.10.13");
  fs::create_symlink(outside.path() / "root-only", installation / "envs");
  for (const auto& path : {installation, installation / "conda-meta", installation / "envs"}) {
    ASSERT_EQ(::lchown(path.c_str(), carol, nobody->pw_gid), 0) << path;
  }
  // A root-owned installation next to it is listed as before.
  make_conda_env(dir.path() / "opt" / "theirs", "3.10.13");

  const auto discovery = discover_envs(under(dir.path()));
  const std::string problems = all_problems(discovery);
  // The installation itself is still found (as its base env).
  EXPECT_TRUE(std::any_of(discovery.envs.begin(), discovery.envs.end(), [&](const PythonEnv& env) {
    return env.prefix == installation;
  })) << problems;
  EXPECT_NE(find_env(discovery, "shared-env"), nullptr) << problems;
  EXPECT_EQ(problems.find("leaked-dir-name"), std::string::npos) << problems;
  EXPECT_NE(problems.find((outside.path() / "root-only").string() +
                          ": cannot read directory: Permission denied"),
            std::string::npos)
      << problems;
}

TEST(Discovery, SearchesHomeDirectoriesInTheUsualPlaces) {
  testing::TempDir dir;
  const fs::path home = dir.path() / "home" / "alice";
  for (const char* place : {".virtualenvs/web", ".cache/pypoetry/virtualenvs/app-x1y2-py3.10",
                            ".local/share/uv/tools/ruff"}) {
    fs::create_directories(home / place / "bin");
    std::ofstream(home / place / "pyvenv.cfg") << "home = /usr/bin\nversion = 3.10.13\n";
    fs::create_symlink("/bin/true", home / place / "bin" / "python");
  }
  // A pyenv version is a plain interpreter prefix.
  fs::create_directories(home / ".pyenv/versions/3.12.1/bin");
  fs::create_directories(home / ".pyenv/versions/3.12.1/lib/python3.12");
  fs::create_symlink("/bin/true", home / ".pyenv/versions/3.12.1/bin/python");

  const auto discovery = discover_envs(under(dir.path()));
  ASSERT_EQ(discovery.envs.size(), 4U) << all_problems(discovery);
  const auto* pyenv = find_env(discovery, "3.12.1");
  ASSERT_NE(pyenv, nullptr);
  EXPECT_EQ(pyenv->kind, EnvKind::interpreter);
  EXPECT_EQ(pyenv->python_version, "3.12");
  const auto* poetry = find_env(discovery, "app-x1y2-py3.10");
  ASSERT_NE(poetry, nullptr);
  EXPECT_EQ(poetry->kind, EnvKind::venv);
  EXPECT_EQ(poetry->python_version, "3.10.13");
  EXPECT_NE(find_env(discovery, "web"), nullptr);
  EXPECT_NE(find_env(discovery, "ruff"), nullptr);
}

TEST(Discovery, CondarcEnvsDirsAndContainerPaths) {
  testing::TempDir dir;
  // A container rootfs: its configuration names paths inside the container.
  make_conda_env(dir.path() / "data/conda-envs/shared", "3.10.13");
  make_conda_env(dir.path() / "opt/conda", "3.11.7");
  fs::create_directories(dir.path() / "opt/conda/envs");
  dir.write("etc/conda/.condarc", "envs_dirs:\n  - /data/conda-envs\n  - /nowhere\n");
  dir.write("root/.conda/environments.txt", "/opt/conda\n");
  dir.write("home/bob/.condarc", "envs_dirs: [~/my-envs]\n");
  make_conda_env(dir.path() / "home/bob/my-envs/bobs", "3.12.1");
  dir.write("home/carol/.condarc", "envs_dirs: [unclosed\n");

  auto options = under(dir.path());
  options.max_depth = 1;  // only the configuration can lead to these envs
  const auto discovery = discover_envs(options);
  const auto* shared = find_env(discovery, "shared");
  ASSERT_NE(shared, nullptr) << all_problems(discovery);
  EXPECT_EQ(shared->found_by[0], "envs_dirs of " + (dir.path() / "etc/conda/.condarc").string());
  const auto* bobs = find_env(discovery, "bobs");
  ASSERT_NE(bobs, nullptr);
  const auto* base = find_env(discovery, "base");
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(base->prefix, fs::canonical(dir.path() / "opt/conda"));
  ASSERT_EQ(discovery.problems.size(), 1U) << all_problems(discovery);
  EXPECT_EQ(discovery.problems[0].path.filename(), ".condarc");
  EXPECT_EQ(discovery.problems[0].path.parent_path().filename(), "carol") << "the broken one";
  EXPECT_NE(discovery.problems[0].problem.find("cannot read conda configuration"),
            std::string::npos);
}

// Any user writes their .condarc, read by the agent as it is: aliases that
// make a cycle or a billion laughs are refused before the tree is built,
// with where, as a contract's are.
TEST(Discovery, ACondarcAliasCycleIsRefused) {
  const auto parsed = parse_condarc_envs_dirs("envs_dirs: &dirs [~/envs, *dirs]\n");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error(),
            "line 1, column 27: the alias *dirs is inside the node it names (an alias cycle), "
            "which no reading of the document ends; write the value out instead of the alias");
}

TEST(Discovery, ACondarcBillionLaughsIsRefused) {
  const std::string text = testing::billion_laughs(testing::LaughsLayout::mapping);
  const auto parsed = parse_condarc_envs_dirs(text + "envs_dirs: *lol9\n");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().substr(0, 60),
            "line 5, column 63: the alias *lol3 expands the YAML beyond 1");
}

TEST(Discovery, ConfiguredPrefixesAndOddNames) {
  testing::TempDir dir;
  const fs::path odd = dir.path() / "team envs" / "it's $(rm -rf) ü";
  make_conda_env(odd, "3.10.13");
  DiscoveryOptions options;
  options.prefixes = {odd, dir.path() / "not-an-env"};
  const auto discovery = discover_envs(options);
  ASSERT_EQ(discovery.envs.size(), 1U) << all_problems(discovery);
  EXPECT_EQ(discovery.envs[0].name, "it's $(rm -rf) ü");
  EXPECT_EQ(discovery.envs[0].found_by, std::vector<std::string>{"configured prefix"});
  ASSERT_EQ(discovery.problems.size(), 1U);
  EXPECT_EQ(discovery.problems[0].path, dir.path() / "not-an-env");
}

TEST(Discovery, DuplicateNamesFallBackToPrefixes) {
  testing::TempDir dir;
  make_conda_env(dir.path() / "a" / "envs" / "work", "3.10.13");
  make_conda_env(dir.path() / "b" / "work", "3.10.13");
  const auto discovery = discover_envs(under(dir.path()));
  ASSERT_EQ(discovery.envs.size(), 2U);
  for (const auto& env : discovery.envs) {
    EXPECT_EQ(env.name, env.prefix.string());
  }
}

}  // namespace
}  // namespace envcontract::discovery
