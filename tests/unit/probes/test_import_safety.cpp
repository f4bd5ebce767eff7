// probes/import_safety.cpp: before any of an env's code runs, everything its
// interpreter imports from is held to the rule its own files are held to,
// and a search path that could not be read whole runs nothing. Real files
// with real modes in a temporary tree.
#include "probes/import_safety.hpp"

#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "discovery/discovery.hpp"
#include "tests/support/system_venv.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::probes {
namespace {

namespace fs = std::filesystem;
using facts::CodeRefusal;
using testing::TempDir;

// Whoever runs the test: the env's own user.
facts::RunAs current_user() {
  facts::RunAs run_as;
  run_as.uid = ::geteuid();
  run_as.gid = ::getegid();
  const passwd* entry = ::getpwuid(run_as.uid);
  run_as.user = entry ? entry->pw_name : std::to_string(run_as.uid);
  return run_as;
}

bool lists(const PythonEnv& env, const fs::path& path) {
  return std::any_of(env.unsafe.begin(), env.unsafe.end(),
                     [&](const facts::UnsafePath& unsafe) { return unsafe.path == path; });
}

std::string listed(const PythonEnv& env) {
  std::string text;
  for (const auto& unsafe : env.unsafe) {
    text += unsafe.path.string() + " (" + unsafe.why + "); ";
  }
  return text.empty() ? "nothing" : text;
}

fs::path made(const fs::path& dir, fs::perms mode) {
  fs::create_directories(dir);
  fs::permissions(dir, mode);
  return fs::canonical(dir);
}

// m_env: an env with a search path made by hand (no interpreter needed).
// The venv: a real one over the system interpreter, checked from files as
// its user would see them after activation.
class ImportSafety : public ::testing::Test {
 protected:
  void SetUp() override {
    m_env.name = "e";
    m_env.prefix = m_dir.path() / "env";
    m_env.kind = facts::EnvKind::venv;
    m_env.run_as = current_user();
  }

  void make_venv() {
    m_prefix = testing::make_system_venv(m_dir.path() / "venv");
    m_site = testing::system_venv_site(m_prefix);
    m_home = made(m_dir.path() / "home", fs::perms(0755));
  }

  PythonEnv env() const {
    auto env = discovery::describe_prefix(m_prefix, process::RunAsPolicy{"root"});
    EXPECT_TRUE(env) << m_prefix;
    auto described = env.value_or(PythonEnv{});
    EXPECT_TRUE(described.unsafe.empty()) << "the venv itself is safe";
    return described;
  }

  // `described` checked under an activated environment of `extra` variables.
  PythonEnv checked(PythonEnv described, const facts::Environment& extra = {}) const {
    ActivatedEnvironment activation;
    activation.activated = {{"PATH", "/usr/bin:/bin"}, {"HOME", m_home.string()}};
    for (const auto& [name, value] : extra) {
      activation.activated[name] = value;
    }
    activation.bare = activation.activated;
    refuse_unsafe_imports(described, activation);
    EXPECT_TRUE(described.imports_checked);
    return described;
  }
  PythonEnv checked(const facts::Environment& extra = {}) const { return checked(env(), extra); }

  // `name` in the venv's site-packages, as TempDir::write takes it.
  std::string in_site(const std::string& name) const {
    return (fs::relative(m_site, m_dir.path()) / name).string();
  }

  TempDir m_dir;
  PythonEnv m_env;
  fs::path m_prefix;
  fs::path m_site;
  fs::path m_home;
};

#define MAKE_VENV_OR_SKIP()                \
  if (!fs::exists("/usr/bin/python3")) {   \
    GTEST_SKIP() << "no /usr/bin/python3"; \
  }                                        \
  make_venv()

TEST_F(ImportSafety, WhatOnlyItsOwnerCanWriteLetsItsCodeRun) {
  SearchPath path;
  path.entries = {{made(m_dir.path() / "site", fs::perms(0755)), "site-packages", true}};
  refuse_unsafe_imports(m_env, path);
  EXPECT_TRUE(m_env.imports_checked);
  EXPECT_EQ(m_env.imports_unchecked, "");
  EXPECT_TRUE(m_env.unsafe.empty()) << listed(m_env);
  EXPECT_FALSE(facts::code_refusal(m_env));
}

// Entries, places that are not entries yet, an editable install's source
// and its finder module: each is code the interpreter may load.
TEST_F(ImportSafety, EveryPlaceCodeLoadsFromIsHeldToTheRule) {
  const auto entry = made(m_dir.path() / "shared-entry", fs::perms(0777));
  const auto unlisted = made(m_dir.path() / "shared-unlisted", fs::perms(0777));
  const auto source = made(m_dir.path() / "shared-src/proj", fs::perms(0777));
  const auto site = made(m_dir.path() / "site", fs::perms(0755));
  const auto finder = m_dir.write("site/__editable___proj_finder.py", "MAPPING = {}\n");
  fs::permissions(finder, fs::perms(0666));
  SearchPath path;
  path.entries = {{site, "site-packages", true}, {entry, "PYTHONPATH", false}};
  path.unlisted = {unlisted};
  path.editable = {{"proj", source, finder}};
  refuse_unsafe_imports(m_env, path);
  EXPECT_TRUE(m_env.imports_checked);
  for (const auto& unsafe : {entry, unlisted, source, finder}) {
    EXPECT_TRUE(lists(m_env, unsafe)) << unsafe << " among " << listed(m_env);
  }
  EXPECT_FALSE(lists(m_env, site));
  const auto refusal = facts::code_refusal(m_env);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->kind, CodeRefusal::Kind::unsafe_permissions);
}

TEST_F(ImportSafety, AnIncompletePathRunsNothing) {
  SearchPath path;
  path.entries = {{made(m_dir.path() / "site", fs::perms(0755)), "site-packages", true}};
  path.incomplete = "more than 1024 path entries: the rest are not read";
  refuse_unsafe_imports(m_env, path);
  EXPECT_TRUE(m_env.imports_checked);
  EXPECT_TRUE(m_env.unsafe.empty()) << listed(m_env);
  EXPECT_NE(m_env.imports_unchecked.find(path.incomplete), std::string::npos)
      << m_env.imports_unchecked;
  const auto refusal = facts::code_refusal(m_env);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->kind, CodeRefusal::Kind::imports_unchecked);
}

// Fails closed: a later complete check does not clear an earlier reason.
TEST_F(ImportSafety, AnEarlierReasonNotToRunIsKept) {
  m_env.imports_unchecked = "the env could not be read";
  refuse_unsafe_imports(m_env, SearchPath{});
  EXPECT_EQ(m_env.imports_unchecked, "the env could not be read");
  ASSERT_TRUE(facts::code_refusal(m_env));
}

// Discovery may have listed a path already: it is not listed twice, and
// checking twice lists nothing more.
TEST_F(ImportSafety, APathIsListedOnce) {
  const auto shared = made(m_dir.path() / "shared", fs::perms(0777));
  SearchPath path;
  path.entries = {{shared, "PYTHONPATH", false}};
  path.unlisted = {shared};
  m_env.unsafe.push_back({shared, "root", "root", 0777, "writable by everyone"});
  refuse_unsafe_imports(m_env, path);
  refuse_unsafe_imports(m_env, path);
  EXPECT_EQ(std::count_if(m_env.unsafe.begin(), m_env.unsafe.end(),
                          [&](const auto& unsafe) { return unsafe.path == shared; }),
            1)
      << listed(m_env);
}

TEST_F(ImportSafety, AVenvOfItsOwnerAndRootRunsItsCode) {
  MAKE_VENV_OR_SKIP();
  const auto safe = checked();
  EXPECT_EQ(safe.imports_unchecked, "");
  EXPECT_TRUE(safe.unsafe.empty()) << listed(safe);
  EXPECT_FALSE(facts::code_refusal(safe));
}

// Activation's PYTHONPATH is where imports come from first: a directory
// anyone can write there, sticky or not, is someone else's code.
TEST_F(ImportSafety, APythonPathOthersCanWriteIsUnsafe) {
  MAKE_VENV_OR_SKIP();
  const auto own = made(m_dir.path() / "own-lib", fs::perms(0755));
  const auto shared = made(m_dir.path() / "shared-lib", fs::perms(0777));
  const auto sticky = made(m_dir.path() / "sticky-lib", fs::perms(01777));
  EXPECT_TRUE(checked({{"PYTHONPATH", own.string()}}).unsafe.empty());
  const auto found =
      checked({{"PYTHONPATH", own.string() + ":" + shared.string() + ":" + sticky.string()}});
  EXPECT_TRUE(lists(found, shared)) << listed(found);
  EXPECT_TRUE(lists(found, sticky)) << "an entry, not a directory on the way: " << listed(found);
  EXPECT_FALSE(lists(found, own));
  const auto refusal = facts::code_refusal(found);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->kind, CodeRefusal::Kind::unsafe_permissions);
}

// site.py runs the import lines of every .pth file at start-up: a .pth
// file others can write is their code run as the env's user.
TEST_F(ImportSafety, APthFileOthersCanWriteIsUnsafe) {
  MAKE_VENV_OR_SKIP();
  const auto pth = m_dir.write(in_site("zz-hook.pth"), "import os; os.system('id')\n");
  fs::permissions(pth, fs::perms(0644));
  // Its owner's own import line is its owner's code: noted, not refused.
  const auto owned = checked();
  EXPECT_TRUE(owned.unsafe.empty()) << listed(owned);
  EXPECT_EQ(owned.imports_unchecked, "");

  // Made writable after discovery looked (which holds the env's own .pth
  // files to the rule too): the import check finds it on its own.
  const auto described = env();
  fs::permissions(pth, fs::perms(0666));
  const auto shared = checked(described);
  EXPECT_TRUE(lists(shared, fs::canonical(pth))) << listed(shared);
  ASSERT_TRUE(facts::code_refusal(shared));
  EXPECT_EQ(facts::code_refusal(shared)->kind, CodeRefusal::Kind::unsafe_permissions);
}

// What a .pth path line adds, and a missing directory it names (made by
// whoever may write the nearest directory that exists), are judged too.
TEST_F(ImportSafety, DirectoriesAPthFileAddsAreHeldToTheRule) {
  MAKE_VENV_OR_SKIP();
  const auto shared = made(m_dir.path() / "shared", fs::perms(0777));
  const auto open_parent = made(m_dir.path() / "open-parent", fs::perms(0777));
  m_dir.write(in_site("paths.pth"),
              shared.string() + "\n" + (open_parent / "not-yet").string() + "\n");
  const auto found = checked();
  EXPECT_TRUE(lists(found, shared)) << listed(found);
  EXPECT_TRUE(lists(found, open_parent)) << listed(found);
  EXPECT_EQ(facts::code_refusal(found)->kind, CodeRefusal::Kind::unsafe_permissions);
}

// setuptools' editable install: its finder module (imported by a .pth
// line) and the source directory it maps the package to.
TEST_F(ImportSafety, AnEditableInstallOthersCanEditIsUnsafe) {
  MAKE_VENV_OR_SKIP();
  const auto source = made(m_dir.path() / "checkout/proj", fs::perms(0777));
  m_dir.write(in_site("__editable__.proj-0.1.pth"),
              "import __editable___proj_0_1_finder; __editable___proj_0_1_finder.install()\n");
  const auto finder =
      m_dir.write(in_site("__editable___proj_0_1_finder.py"),
                  "MAPPING: dict[str, str] = {'proj': '" + source.string() + "'}\n");
  auto found = checked();
  EXPECT_TRUE(lists(found, source)) << listed(found);
  EXPECT_FALSE(lists(found, fs::canonical(finder)));

  fs::permissions(source, fs::perms(0755));
  fs::permissions(finder, fs::perms(0666));
  found = checked();
  EXPECT_TRUE(lists(found, fs::canonical(finder))) << listed(found);
  EXPECT_FALSE(lists(found, source));
}

// More .pth files than are read: what was not read could load code, so
// nothing runs, and the reason says what was cut.
TEST_F(ImportSafety, ASearchPathTooBigToReadRunsNothing) {
  MAKE_VENV_OR_SKIP();
  for (int i = 0; i < 257; ++i) {
    std::ofstream(m_site / ("p" + std::to_string(1000 + i) + ".pth")) << "# nothing\n";
  }
  const auto cut = checked();
  EXPECT_TRUE(cut.unsafe.empty()) << listed(cut);
  EXPECT_NE(cut.imports_unchecked.find("257 .pth files"), std::string::npos)
      << cut.imports_unchecked;
  const auto refusal = facts::code_refusal(cut);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->kind, CodeRefusal::Kind::imports_unchecked);
}

// Files are read as the env's reader; when its credentials cannot be taken
// the check is not made, and its code does not run.
TEST_F(ImportSafety, ACheckThatCannotReadAsItsUserRunsNothing) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "only root switches credentials to read";
  }
  MAKE_VENV_OR_SKIP();
  auto unreadable = env();
  facts::RunAs reader;
  reader.uid = 4242;
  reader.gid = 4242;
  reader.user = "4242";
  reader.switch_credentials = true;
  reader.problem = "uid 4242 has no credentials to take";
  unreadable.read_as = reader;
  refuse_unsafe_imports(unreadable, ActivatedEnvironment{});
  EXPECT_TRUE(unreadable.imports_checked);
  EXPECT_NE(unreadable.imports_unchecked, "");
  EXPECT_TRUE(unreadable.unsafe.empty());
  const auto refusal = facts::code_refusal(unreadable);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->kind, CodeRefusal::Kind::imports_unchecked);
}

}  // namespace
}  // namespace envcontract::probes
