// Env code never runs as root (docs/security.md). Real unprivileged users,
// real envs they own, real processes: each env's activation script and
// imported module record who they run as, and the test reads the records.
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "common/json_text.hpp"
#include "contracts/judgement.hpp"
#include "discovery/discovery.hpp"
#include "probes/activation.hpp"
#include "probes/dynamic_probe.hpp"
#include "probes/host_facts.hpp"
#include "probes/import_safety.hpp"
#include "process/run_as.hpp"
#include "tests/support/contract_text.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/probe_plans.hpp"
#include "tests/support/processes.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_users.hpp"

namespace envcontract::probes {
namespace {

using testing::torch_contract_plan;

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using testing::chown_tree;
using testing::ensure_user;
using testing::User;

std::map<std::string, std::string> read_record(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return testing::status_fields(text.str());
}

// An env whose code was refused, judged against a contract that imports
// ec_whoami: it drifts on a check of its own (`cause`), the import is
// blocked behind it. Returns that check's summary.
std::string refusal_summary(const facts::EnvFacts& env_facts, const std::string& cause) {
  const auto loaded = testing::load_checks("- {id: imp, kind: imports, modules: [ec_whoami]}\n");
  if (!loaded.contract) {
    ADD_FAILURE() << testing::joined(loaded);
    return "";
  }
  const auto judged = contracts::judge_env(*loaded.contract, env_facts);
  EXPECT_EQ(judged.verdict, contracts::EnvVerdict::drift);
  if (judged.checks.size() != 2U || !judged.checks[0].diagnosis || !judged.checks[1].diagnosis) {
    ADD_FAILURE() << "expected env:code-safety and the blocked import, got " << judged.checks.size()
                  << " checks";
    return "";
  }
  EXPECT_EQ(judged.checks[0].id, "env:code-safety");
  EXPECT_EQ(judged.checks[0].diagnosis->cause, cause);
  EXPECT_EQ(judged.checks[1].status, contracts::CheckStatus::skip);
  EXPECT_EQ(judged.checks[1].diagnosis->cause, "blocked");
  return judged.checks[0].diagnosis->summary;
}

constexpr const char* k_no_capabilities = "0000000000000000";

// A reader inside another (a check that reads as someone while its caller
// already does) gives back the outer reader's identity when it ends, not
// root's: whatever the outer one reads next is still checked as its user.
TEST(ReadingAsNested, AnInnerReaderGivesBackTheOuterOnesIdentity) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "skipped: needs root, to read as other users";
  }
  const facts::RunAs outer_user = process::resolve_run_as(54321, process::RunAsPolicy{});
  const facts::RunAs inner_user = process::resolve_run_as(54322, process::RunAsPolicy{});
  if (!outer_user.problem.empty() || !inner_user.problem.empty()) {
    GTEST_SKIP() << "skipped: " << outer_user.problem << inner_user.problem;
  }
  const auto fsuid = [] { return static_cast<uid_t>(::syscall(SYS_setfsuid, -1)); };
  const auto fsgid = [] { return static_cast<gid_t>(::syscall(SYS_setfsgid, -1)); };
  {
    const process::ReadingAs outer(outer_user);
    ASSERT_TRUE(outer.ok());
    ASSERT_EQ(fsuid(), 54321U);
    {
      const process::ReadingAs inner(inner_user);
      ASSERT_TRUE(inner.ok());
      EXPECT_EQ(fsuid(), 54322U);
    }
    EXPECT_EQ(fsuid(), 54321U);
    EXPECT_EQ(fsgid(), outer_user.gid);
  }
  EXPECT_EQ(fsuid(), 0U);
  EXPECT_EQ(fsgid(), 0U);
}

class LeastPrivilege : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root: the agent's change of user is what is tested";
    }
    const auto alice = ensure_user("ectest-alice");
    const auto bob = ensure_user("ectest-bob");
    ASSERT_TRUE(alice && bob) << "useradd failed";
    m_alice = *alice;
    m_bob = *bob;
    m_alice_uid = m_alice.uid;
    m_alice_gid = m_alice.gid;
    m_marker = "envcontract-test-" + std::to_string(std::random_device{}());
    m_out = m_dir.path() / "out";
    fs::create_directories(m_out);
    fs::permissions(m_out, fs::perms::all);  // every probe user may leave its record here
  }

  void TearDown() override {
    for (int attempt = 0; attempt < 50 && !survivors().empty(); ++attempt) {
      std::this_thread::sleep_for(20ms);
    }
    EXPECT_TRUE(survivors().empty()) << "a process of this test outlived its probe";
  }

  std::vector<pid_t> survivors() const {
    return testing::processes_with_environment("ECTEST_MARKER=" + m_marker);
  }

  // A venv (made as `python -m venv` lays it out) whose activation script
  // and module `ec_whoami` record their credentials in out/.
  fs::path make_venv(const std::string& name, const fs::path& parent = {}) {
    const fs::path python = fs::canonical(testing::demo_host() / "venvs/xpu210v/bin/python");
    const std::string version = python.filename().string().substr(6);  // 3.10
    const fs::path prefix = (parent.empty() ? m_dir.path() : parent) / name;
    fs::create_directories(prefix / "bin");
    const fs::path site = prefix / "lib" / ("python" + version) / "site-packages";
    fs::create_directories(site);
    std::ofstream(prefix / "pyvenv.cfg")
        << "home = " << python.parent_path().string() << "\nversion = " << version << "\n";
    fs::create_symlink(python, prefix / "bin" / "python");
    const std::string record =
        R"(grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status)";
    std::ofstream(prefix / "bin" / "activate")
        << "export VIRTUAL_ENV=\"" << prefix.string() << "\" PATH=\"" << prefix.string()
        << "/bin:$PATH\" ECTEST_MARKER=" << m_marker << "\n"
        << record << " > " << (m_out / (name + ".activate")).string() << "\n";
    std::ofstream(site / "ec_whoami.py")
        << "import os\n"
        << "with open(" << '"' << (m_out / (name + ".module")).string() << '"' << ", 'w') as out:\n"
        << "    for line in open('/proc/self/status'):\n"
        << "        if line.split(':')[0] in ('Uid', 'Gid', 'Groups', 'CapInh', 'CapPrm', "
           "'CapEff', 'CapBnd', 'CapAmb', 'NoNewPrivs'):\n"
        << "            out.write(line)\n";
    return prefix;
  }

  // Activates and imports ec_whoami as the agent does.
  DynamicFacts probe(const PythonEnv& env, ActivatedEnvironment* activation_out = nullptr,
                     std::vector<std::string> modules = {"ec_whoami"},
                     process::ResourceLimits resources = {}) {
    auto activation = activate(env);
    ProbePlan plan = torch_contract_plan();
    plan.imports = std::move(modules);
    plan.imports_timeout = 20s;
    plan.compare_bare = false;
    plan.resources = resources;
    activation.activated["ECTEST_MARKER"] = m_marker;
    auto facts = probe_env(env, activation, plan);
    if (activation_out) {
      *activation_out = activation;
    }
    return facts;
  }

  // The facts of the env at `prefix`, gathered as a scan gathers them.
  HostFacts scan(const fs::path& prefix) {
    HostFactsOptions options;
    options.discovery.prefixes = {prefix};
    return gather_host_facts(options, std::make_shared<FactCaches>());
  }

  void expect_unprivileged(const fs::path& record_path, uid_t uid, gid_t gid) {
    ASSERT_TRUE(fs::exists(record_path)) << record_path << " was not written";
    auto record = read_record(record_path);
    const std::string id = std::to_string(uid);
    EXPECT_EQ(record["Uid"], id + "\t" + id + "\t" + id + "\t" + id) << record_path;
    const std::string gid_text = std::to_string(gid);
    EXPECT_EQ(record["Gid"], gid_text + "\t" + gid_text + "\t" + gid_text + "\t" + gid_text);
    for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
      EXPECT_EQ(record[set], k_no_capabilities) << set << " in " << record_path;
    }
    EXPECT_EQ(record["NoNewPrivs"], "1") << record_path;
  }

  testing::TempDir m_dir;
  User m_alice;
  User m_bob;
  uid_t m_alice_uid = 0;
  gid_t m_alice_gid = 0;
  std::string m_marker;
  fs::path m_out;
};

TEST_F(LeastPrivilege, AnEnvsCodeRunsAsItsOwnerWithNoCapabilities) {
  const fs::path prefix = make_venv("alice-env");
  chown_tree(prefix, m_alice_uid, m_alice_gid);
  const auto env = discovery::describe_prefix(prefix).value();
  EXPECT_EQ(env.run_as.user, "ectest-alice");
  EXPECT_EQ(env.run_as.reason, "owner of the env");
  EXPECT_TRUE(env.unsafe.empty()) << common::json_text(to_json(env));
  ActivatedEnvironment activation;
  const auto facts = probe(env, &activation);
  EXPECT_EQ(activation.problem, "");
  EXPECT_EQ(activation.bare.at("HOME"), m_alice.home);
  EXPECT_EQ(activation.bare.at("USER"), "ectest-alice");
  ASSERT_FALSE(facts.stages.empty());
  expect_unprivileged(m_out / "alice-env.activate", m_alice_uid, m_alice_gid);
  expect_unprivileged(m_out / "alice-env.module", m_alice_uid, m_alice_gid);
  // Supplementary groups are the user's own, not root's.
  auto record = read_record(m_out / "alice-env.module");
  EXPECT_EQ(record["Groups"].find('0'), std::string::npos) << record["Groups"];
}

// The working directory is entered as the user, not as root: an env's
// directory swapped for a link into a tree only root may enter gives its
// code nothing to read by relative path there.
TEST_F(LeastPrivilege, TheWorkingDirectoryIsEnteredAsTheUser) {
  const fs::path locked = m_dir.path() / "locked";
  fs::create_directories(locked / "open");
  fs::permissions(locked, fs::perms::owner_all);  // root only
  fs::permissions(locked / "open", fs::perms(0755));
  std::ofstream(locked / "open" / "secret") << "root's\n";
  process::ProcessSpec spec;
  spec.argv = {"/bin/cat", "secret"};
  spec.environment = {{"PATH", "/usr/bin:/bin"}};
  spec.working_dir = locked / "open";
  spec.credentials = process::Credentials{m_alice_uid, m_alice_gid, {m_alice_gid}};
  const auto result = process::run_process(spec, {});
  // Not the command failing: it never ran (a check of it is an error, not a drift).
  EXPECT_EQ(result.outcome, process::ProcessResult::Outcome::failed_to_start)
      << result.out << result.err;
  EXPECT_EQ(result.error, "entering its working directory");
  EXPECT_EQ(result.exit_code, 126);
  EXPECT_EQ(result.out, "");
  EXPECT_NE(result.err.find("cannot start the process: entering its working directory"),
            std::string::npos)
      << result.err;
  // Root itself still starts there.
  spec.credentials.reset();
  EXPECT_EQ(process::run_process(spec, {}).out, "root's\n");
}

// By default each root-owned env's code runs as a uid of its own: no
// passwd entry, its gid the same number, no supplementary group.
TEST_F(LeastPrivilege, ARootOwnedEnvRunsAsAUidOfItsOwn) {
  const fs::path prefix = make_venv("root-env");
  const auto env = discovery::describe_prefix(prefix).value();
  const process::ProbeUidRange range;
  ASSERT_EQ(env.run_as.problem, "");
  EXPECT_GE(env.run_as.uid, range.first);
  EXPECT_LT(env.run_as.uid, range.first + range.count);
  EXPECT_EQ(::getpwuid(env.run_as.uid), nullptr);
  EXPECT_EQ(env.run_as.user, std::to_string(env.run_as.uid));
  EXPECT_EQ(env.run_as.gid, static_cast<gid_t>(env.run_as.uid));
  EXPECT_TRUE(env.run_as.groups.empty());
  probe(env);
  expect_unprivileged(m_out / "root-env.activate", env.run_as.uid, env.run_as.gid);
  expect_unprivileged(m_out / "root-env.module", env.run_as.uid, env.run_as.gid);
  EXPECT_EQ(read_record(m_out / "root-env.module")["Groups"], "");

  // The same env keeps its uid; another root-owned env gets another.
  EXPECT_EQ(discovery::describe_prefix(prefix).value().run_as.uid, env.run_as.uid);
  const auto other = discovery::describe_prefix(make_venv("other-root-env")).value();
  EXPECT_NE(other.run_as.uid, env.run_as.uid);
  EXPECT_EQ(other.run_as.problem, "");
}

// An image's rootfs scanned as a tree (--root, roots:) is read and run on
// the host. Its author chose the owners its files name: an env there owned
// by alice's uid must not run as alice (her HOME, her files, her processes),
// and run_root_envs_as: root does not make an image's env root's.
TEST_F(LeastPrivilege, AnImagesEnvNeverRunsAsTheHostUserItsFilesName) {
  const fs::path tree = m_dir.path() / "image";
  fs::create_directories(tree / "etc");
  fs::create_directories(tree / "opt");
  std::ofstream(tree / "etc/os-release") << "ID=debian\nVERSION_ID=12\n";
  const fs::path prefix = make_venv("app", tree / "opt");
  testing::chown_tree(prefix, m_alice.uid, m_alice.gid);

  for (const char* policy : {"dynamic", "root"}) {
    SCOPED_TRACE(policy);
    const auto env = discovery::describe_prefix(prefix, process::RunAsPolicy{policy}, tree).value();
    EXPECT_EQ(env.owner, "ectest-alice");  // a fact, still reported
    ASSERT_EQ(env.run_as.problem, "");
    const process::ProbeUidRange range;
    EXPECT_GE(env.run_as.uid, range.first);
    EXPECT_LT(env.run_as.uid, range.first + range.count);
    EXPECT_EQ(env.run_as.home, "/nonexistent");
    EXPECT_NE(env.run_as.reason.find("image's author"), std::string::npos) << env.run_as.reason;
    fs::remove(m_out / "app.activate");
    EXPECT_TRUE(env.unsafe.empty()) << env.unsafe.front().why;
    probe(env);
    expect_unprivileged(m_out / "app.activate", env.run_as.uid, env.run_as.gid);
    expect_unprivileged(m_out / "app.module", env.run_as.uid, env.run_as.gid);
  }
  // A configured user is the operator's choice, and is kept.
  const auto as_bob =
      discovery::describe_prefix(prefix, process::RunAsPolicy{"ectest-bob"}, tree).value();
  EXPECT_EQ(as_bob.run_as.uid, m_bob.uid);
  // Shared with other envs, a file only alice may change is her way to
  // run code as that user: refused, as on the host.
  EXPECT_FALSE(as_bob.unsafe.empty());
  // The same env found on the host itself is alice's: she runs her own code.
  const auto on_host = discovery::describe_prefix(prefix).value();
  EXPECT_EQ(on_host.run_as.uid, m_alice.uid);
}

// bin/python and the interpreter it leads to are code the env runs as
// surely as its own: one that another user may replace makes the env unsafe.
// (Until 2026-12-05 discovery held the interpreter to the rule before it knew
// which it was, and so never did.)
TEST_F(LeastPrivilege, AnInterpreterAnotherUserOwnsMakesTheEnvUnsafe) {
  const fs::path prefix = make_venv("alice-env");
  const fs::path bobs = m_dir.path() / "bobs-python";
  fs::create_directories(bobs);
  const fs::path python = fs::canonical(prefix / "bin/python");
  fs::copy_file(python, bobs / python.filename());
  fs::permissions(bobs / python.filename(),
                  fs::perms::all & ~fs::perms::group_write & ~fs::perms::others_write);
  testing::chown_tree(bobs, m_bob.uid, m_bob.gid);
  fs::remove(prefix / "bin/python");
  fs::create_symlink(bobs / python.filename(), prefix / "bin/python");
  testing::chown_tree(prefix, m_alice.uid, m_alice.gid);

  const auto env = discovery::describe_prefix(prefix).value();
  EXPECT_EQ(env.run_as.uid, m_alice.uid);
  const bool named = std::any_of(env.unsafe.begin(), env.unsafe.end(), [&](const auto& unsafe) {
    return unsafe.path == bobs / python.filename() && unsafe.owner == "ectest-bob";
  });
  EXPECT_TRUE(named) << env.unsafe.size() << " unsafe paths, none is bob's interpreter";
}

TEST_F(LeastPrivilege, ARootOwnedEnvRunsAsTheConfiguredUser) {
  const fs::path prefix = make_venv("root-env");
  process::RunAsPolicy as_nobody{"nobody"};
  const auto env = discovery::describe_prefix(prefix, as_nobody).value();
  EXPECT_EQ(env.run_as.user, "nobody");
  probe(env);
  const passwd* nobody = ::getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  expect_unprivileged(m_out / "root-env.activate", nobody->pw_uid, nobody->pw_gid);
  expect_unprivileged(m_out / "root-env.module", nobody->pw_uid, nobody->pw_gid);

  // Another user by configuration; root only when said, and then it says so.
  process::RunAsPolicy as_bob{"ectest-bob"};
  const auto as_bob_env = discovery::describe_prefix(prefix, as_bob).value();
  EXPECT_EQ(as_bob_env.run_as.uid, m_bob.uid);
  process::RunAsPolicy as_root{"root"};
  const auto root_env = discovery::describe_prefix(prefix, as_root).value();
  EXPECT_EQ(root_env.run_as.uid, 0U);
  EXPECT_NE(root_env.run_as.reason.find("root by configuration"), std::string::npos);
  process::RunAsPolicy missing{"ectest-no-such-user"};
  const auto nowhere = discovery::describe_prefix(prefix, missing).value();
  const auto no_user = discovery::code_refusal(nowhere);
  ASSERT_TRUE(no_user.has_value());
  EXPECT_EQ(no_user->kind, facts::CodeRefusal::Kind::run_as_unavailable);
  EXPECT_NE(no_user->text.find("no user 'ectest-no-such-user'"), std::string::npos);
  fs::remove(m_out / "root-env.module");
  const auto refused = probe(nowhere);
  ASSERT_TRUE(refused.refused.has_value());
  EXPECT_EQ(refused.refused->kind, facts::CodeRefusal::Kind::run_as_unavailable);
  EXPECT_FALSE(fs::exists(m_out / "root-env.module"));
}

// Two root-owned envs probed at once. The first one's code looks for the
// other's probe (its scratch directory: the program, its request, the
// results the agent reads back) and tries to forge its results. Run as the
// same user (nobody), it could; each with a uid of its own, it is refused,
// and the other env's import stands as it ran.
TEST_F(LeastPrivilege, OneRootOwnedEnvsCodeCannotReachAnotherEnvsProbe) {
  const fs::path forger = make_venv("forger");
  const fs::path victim = make_venv("victim");
  const auto site = [](const fs::path& prefix) {
    for (const auto& entry : fs::directory_iterator(prefix / "lib")) {
      return entry.path() / "site-packages";
    }
    return fs::path();
  };
  const std::string tamper_record = (m_out / "tamper").string();
  // The forger waits for another probe's directory beside its own (the
  // probe program is sys.argv[1]), then tries to append to its results.
  std::ofstream(site(forger) / "ec_forge.py")
      << "import glob, os, sys, time\n"
      << "own = os.path.dirname(os.path.abspath(sys.argv[1]))\n"
      << "pattern = os.path.join(os.path.dirname(own), 'envcontract-probe-*')\n"
      << "others, deadline = [], time.time() + 15\n"
      << "while not others and time.time() < deadline:\n"
      << "    others = [d for d in glob.glob(pattern) if d != own]\n"
      << "    time.sleep(0.05)\n"
      << "lines = ['seen %d' % len(others)]\n"
      << "for d in others:\n"
      << "    try:\n"
      << "        with open(os.path.join(d, 'result.jsonl'), 'a') as f:\n"
      << "            f.write('{\"forged\": true}\\n')\n"
      << "        lines.append('written')\n"
      << "    except OSError as e:\n"
      << "        lines.append('refused: ' + e.strerror)\n"
      << "with open('" << tamper_record << ".part', 'w') as f:\n"
      << "    f.write('\\n'.join(lines) + '\\n')\n"
      << "os.rename('" << tamper_record << ".part', '" << tamper_record << "')\n";
  // The victim's first import (torch's, as every probe's) lasts until the
  // forger has tried, so its directory is there to be found; then it fails
  // as a missing torch would.
  std::ofstream(site(victim) / "torch.py")
      << "import os, time\n"
      << "deadline = time.time() + 15\n"
      << "while not os.path.exists('" << tamper_record << "') and time.time() < deadline:\n"
      << "    time.sleep(0.05)\n"
      << "raise ImportError('no torch in this env')\n";
  std::ofstream(site(victim) / "ec_patient.py") << "patient = True\n";
  // Probes' directories in a temporary directory of the test's own: those of
  // tests running beside it are not the forger's to find.
  const fs::path private_tmp = m_dir.path() / "tmp";
  fs::create_directories(private_tmp);
  fs::permissions(private_tmp, fs::perms(0755));
  // Set before any probe thread starts, given back however the test ends.
  struct TmpdirRestored {
    std::optional<std::string> saved;
    ~TmpdirRestored() {
      if (saved) {
        ::setenv("TMPDIR", saved->c_str(), 1);
      } else {
        ::unsetenv("TMPDIR");
      }
    }
  } restored{std::getenv("TMPDIR") ? std::optional<std::string>(std::getenv("TMPDIR"))
                                   : std::nullopt};
  ::setenv("TMPDIR", private_tmp.c_str(), 1);
  const auto forger_env = discovery::describe_prefix(forger).value();
  const auto victim_env = discovery::describe_prefix(victim).value();
  ASSERT_NE(forger_env.run_as.uid, victim_env.run_as.uid);

  DynamicFacts victim_facts;
  std::thread victim_probe([&] { victim_facts = probe(victim_env, nullptr, {"ec_patient"}); });
  const auto forger_facts = probe(forger_env, nullptr, {"ec_forge"});
  victim_probe.join();
  ASSERT_FALSE(forger_facts.stages.empty());

  const auto record = testing::run_command({"/bin/cat", tamper_record});
  ASSERT_EQ(record.exit_code, 0) << "the forger's code never ran";
  EXPECT_EQ(record.out, "seen 1\nrefused: Permission denied\n");
  // The victim's records are the probe's own: its import of ec_patient, as
  // it ran, and nothing appended.
  const auto imports =
      std::find_if(victim_facts.stages.begin(), victim_facts.stages.end(),
                   [](const StageResult& stage) { return stage.stage == "imports"; });
  ASSERT_NE(imports, victim_facts.stages.end());
  EXPECT_EQ(imports->status, StageStatus::ok) << imports->summary;
  ASSERT_EQ(imports->records.size(), 2U);
  EXPECT_EQ(imports->records[0].type, "search_path");
  EXPECT_EQ(imports->records[1].type, "import");
  EXPECT_EQ(imports->records[1].module, "ec_patient");
  EXPECT_TRUE(imports->records[1].ok) << imports->records[1].error;
}

struct UnsafeCase {
  const char* name;
  // The path made writable, relative to the test dir, and its mode.
  std::string relative;
  fs::perms mode;
};

class UnsafeEnv : public LeastPrivilege, public ::testing::WithParamInterface<UnsafeCase> {};

TEST_P(UnsafeEnv, RunsNoneOfItsCodeAndNamesThePath) {
  const fs::path prefix = make_venv("env");
  chown_tree(prefix, m_alice_uid, m_alice_gid);
  const fs::path unsafe =
      GetParam().relative.empty() ? m_dir.path() : m_dir.path() / GetParam().relative;
  fs::permissions(unsafe, GetParam().mode);
  const auto env = discovery::describe_prefix(prefix, {}, m_dir.path()).value();
  ASSERT_FALSE(env.unsafe.empty());
  EXPECT_EQ(env.unsafe.front().path, unsafe);
  EXPECT_EQ(env.unsafe.front().why, "writable by everyone");
  ActivatedEnvironment activation;
  const auto facts = probe(env, &activation);
  EXPECT_NE(activation.problem.find("none of this env's code runs: " + unsafe.string()),
            std::string::npos)
      << activation.problem;
  EXPECT_TRUE(facts.stages.empty());
  ASSERT_TRUE(facts.refused.has_value());
  EXPECT_EQ(facts.refused->kind, envcontract::facts::CodeRefusal::Kind::unsafe_permissions);
  // The markers prove it: neither the activation script nor the module ran.
  EXPECT_FALSE(fs::exists(m_out / "env.activate"));
  EXPECT_FALSE(fs::exists(m_out / "env.module"));

  // The report: a failing check of the env's own, naming path, owner and
  // mode; checks that needed the env's code point at it.
  facts::EnvFacts env_facts;
  env_facts.env = env;
  env_facts.dynamic = facts;
  const std::string summary = refusal_summary(env_facts, "unsafe_permissions");
  EXPECT_NE(summary.find(unsafe.string()), std::string::npos) << summary;
  EXPECT_NE(summary.find("mode 07"), std::string::npos) << summary;
}

INSTANTIATE_TEST_SUITE_P(WorldWritable, UnsafeEnv,
                         ::testing::Values(UnsafeCase{"site_packages",
                                                      "env/lib/python3.10/site-packages",
                                                      fs::perms::all},
                                           UnsafeCase{"activation_script", "env/bin/activate",
                                                      fs::perms::all & ~fs::perms::others_exec},
                                           UnsafeCase{"prefix_parent", "", fs::perms::all}),
                         [](const auto& case_info) { return std::string(case_info.param.name); });

// What the interpreter would import from outside the env is held to the same
// rule: a PYTHONPATH set by activation, a .pth line, an editable install's
// source, each pointing at a directory bob owns (or anyone may write), in
// alice's env. Found through the real scan path (activation, then the
// search path as alice reads it), and none of the env's code runs.
struct ImportPathCase {
  const char* name;
  bool world_writable;  // else owned by bob
  enum class Via {
    pythonpath,
    relative_pythonpath,  // ../elsewhere, as the probes' working directory (the prefix) makes it
    missing_pythonpath,   // elsewhere/not-yet: whoever may write elsewhere can create it
    zip_pythonpath,       // elsewhere/tools.zip
    pythonhome,
    pth_line,
    editable,
    editable_namespace  // a namespace package an editable finder serves from elsewhere
  } via;
};

class UnsafeImportPath : public LeastPrivilege,
                         public ::testing::WithParamInterface<ImportPathCase> {};

TEST_P(UnsafeImportPath, RunsNoneOfTheEnvsCode) {
  const fs::path prefix = make_venv("env");
  const fs::path site = prefix / "lib/python3.10/site-packages";
  const fs::path elsewhere = m_dir.path() / "elsewhere";
  fs::create_directories(elsewhere / "proj");
  std::ofstream(elsewhere / "proj/__init__.py") << "";
  std::ofstream(elsewhere / "tools.zip") << "PK";
  const auto activation_exports = [&](const std::string& line) {
    std::ofstream(prefix / "bin/activate", std::ios::app) << "export " << line << "\n";
  };
  switch (GetParam().via) {
    case ImportPathCase::Via::pythonpath:
      activation_exports("PYTHONPATH=\"" + elsewhere.string() + "\"");
      break;
    case ImportPathCase::Via::relative_pythonpath:
      activation_exports("PYTHONPATH=../elsewhere");
      break;
    case ImportPathCase::Via::missing_pythonpath:
      activation_exports("PYTHONPATH=\"" + (elsewhere / "not-yet").string() + "\"");
      break;
    case ImportPathCase::Via::zip_pythonpath:
      activation_exports("PYTHONPATH=\"" + (elsewhere / "tools.zip").string() + "\"");
      break;
    case ImportPathCase::Via::pythonhome:
      activation_exports("PYTHONHOME=\"" + elsewhere.string() + "\"");
      break;
    case ImportPathCase::Via::pth_line:
      std::ofstream(site / "extra.pth") << elsewhere.string() << "\n";
      break;
    case ImportPathCase::Via::editable:
      // As pip install -e lays a setuptools project out.
      std::ofstream(site / "__editable___proj_0_1_finder.py")
          << "MAPPING: dict[str, str] = {'proj': '" << (elsewhere / "proj").string() << "'}\n";
      std::ofstream(site / "__editable__.proj-0.1.pth")
          << "import __editable___proj_0_1_finder; __editable___proj_0_1_finder.install()\n";
      break;
    case ImportPathCase::Via::editable_namespace:
      std::ofstream(site / "__editable___proj_0_1_finder.py")
          << "MAPPING: dict[str, str] = {}\n"
          << "NAMESPACES: dict[str, list[str]] = {'ns': ['" << elsewhere.string() << "']}\n";
      std::ofstream(site / "__editable__.proj-0.1.pth")
          << "import __editable___proj_0_1_finder; __editable___proj_0_1_finder.install()\n";
      break;
  }
  chown_tree(prefix, m_alice_uid, m_alice_gid);
  fs::path unsafe = elsewhere;
  if (GetParam().world_writable) {
    fs::permissions(elsewhere, fs::perms::all);
  } else {
    chown_tree(elsewhere, m_bob.uid, m_bob.gid);
    if (GetParam().via == ImportPathCase::Via::editable) {
      unsafe = elsewhere / "proj";  // the mapped directory comes first
    }
  }

  auto host = scan(prefix);
  ASSERT_EQ(host.envs.size(), 1U);
  auto& scanned = host.envs.front();
  const auto found =
      std::find_if(scanned.env.unsafe.begin(), scanned.env.unsafe.end(),
                   [&](const facts::UnsafePath& path) { return path.path == unsafe; });
  ASSERT_NE(found, scanned.env.unsafe.end()) << common::json_text(to_json(scanned.env));
  EXPECT_EQ(found->why, GetParam().world_writable
                            ? "writable by everyone"
                            : "owned by ectest-bob, who is neither root nor ectest-alice");

  ProbePlan plan = torch_contract_plan();
  plan.imports = {"ec_whoami", "proj"};
  plan.compare_bare = false;
  scanned.activation.activated["ECTEST_MARKER"] = m_marker;
  const auto dynamic = probe_env(scanned.env, scanned.activation, plan);
  EXPECT_TRUE(dynamic.stages.empty());
  ASSERT_TRUE(dynamic.refused.has_value());
  EXPECT_EQ(dynamic.refused->kind, facts::CodeRefusal::Kind::unsafe_permissions);
  EXPECT_NE(dynamic.refused->text.find(unsafe.string()), std::string::npos)
      << dynamic.refused->text;
  EXPECT_FALSE(fs::exists(m_out / "env.module"));

  // The same refusal without static facts (the probe verb): the probes
  // check what the env imports themselves before running any of it.
  const auto bare = discovery::describe_prefix(prefix).value();
  EXPECT_TRUE(bare.unsafe.empty()) << "discovery alone sees only the env's own files";
  EXPECT_FALSE(bare.imports_checked);
  auto activation = activate(bare);
  activation.activated["ECTEST_MARKER"] = m_marker;
  const auto unscanned = probe_env(bare, activation, plan);
  EXPECT_TRUE(unscanned.stages.empty());
  ASSERT_TRUE(unscanned.refused.has_value());
  EXPECT_EQ(unscanned.refused->kind, facts::CodeRefusal::Kind::unsafe_permissions)
      << "found by the probes' own check: its own cause, not imports_unchecked";
  EXPECT_NE(unscanned.refused->text.find(unsafe.string()), std::string::npos)
      << unscanned.refused->text;
  EXPECT_FALSE(fs::exists(m_out / "env.module"));
}

INSTANTIATE_TEST_SUITE_P(
    BeyondThePrefix, UnsafeImportPath,
    ::testing::Values(
        ImportPathCase{"pythonpath_owned_by_bob", false, ImportPathCase::Via::pythonpath},
        ImportPathCase{"relative_pythonpath_writable_by_everyone", true,
                       ImportPathCase::Via::relative_pythonpath},
        ImportPathCase{"missing_pythonpath_under_a_dir_of_bob", false,
                       ImportPathCase::Via::missing_pythonpath},
        ImportPathCase{"missing_pythonpath_under_a_dir_anyone_writes", true,
                       ImportPathCase::Via::missing_pythonpath},
        ImportPathCase{"zip_on_pythonpath_owned_by_bob", false,
                       ImportPathCase::Via::zip_pythonpath},
        ImportPathCase{"pythonhome_owned_by_bob", false, ImportPathCase::Via::pythonhome},
        ImportPathCase{"editable_namespace_owned_by_bob", false,
                       ImportPathCase::Via::editable_namespace},
        ImportPathCase{"pth_line_writable_by_everyone", true, ImportPathCase::Via::pth_line},
        ImportPathCase{"pth_line_owned_by_bob", false, ImportPathCase::Via::pth_line},
        ImportPathCase{"editable_source_owned_by_bob", false, ImportPathCase::Via::editable},
        ImportPathCase{"editable_source_writable_by_everyone", true,
                       ImportPathCase::Via::editable}),
    [](const auto& case_info) { return std::string(case_info.param.name); });

// A link of alice's on PYTHONPATH leads into a directory anyone may write;
// a sticky shared directory that is both a parent and a PYTHONPATH entry is
// judged as the entry. Both are refused.
TEST_F(LeastPrivilege, ImportPathsAreJudgedWhereTheyLead) {
  const fs::path prefix = make_venv("env");
  const fs::path open_dir = m_dir.path() / "open";
  fs::create_directories(open_dir);
  fs::permissions(open_dir, fs::perms::all);
  const fs::path link = m_dir.path() / "alice-link";
  fs::create_directory_symlink(open_dir, link);
  const fs::path shared = m_dir.path() / "shared";
  fs::create_directories(shared / "mine");
  fs::permissions(shared, fs::perms::all | fs::perms::sticky_bit);
  // Sticky does not stop anyone creating drop/not-yet.
  const fs::path drop = m_dir.path() / "drop";
  fs::create_directories(drop);
  fs::permissions(drop, fs::perms::all | fs::perms::sticky_bit);
  std::ofstream(prefix / "bin/activate", std::ios::app)
      << "export PYTHONPATH=\"" << link.string() << ":" << (shared / "mine").string() << ":"
      << shared.string() << ":" << (drop / "not-yet").string() << "\"\n";
  chown_tree(prefix, m_alice_uid, m_alice_gid);
  ASSERT_EQ(::lchown(link.c_str(), m_alice_uid, m_alice_gid), 0);
  chown_tree(shared / "mine", m_alice_uid, m_alice_gid);
  const auto host = scan(prefix);
  ASSERT_EQ(host.envs.size(), 1U);
  const auto& unsafe = host.envs.front().env.unsafe;
  const auto named = [&](const fs::path& path) {
    return std::any_of(unsafe.begin(), unsafe.end(),
                       [&](const facts::UnsafePath& entry) { return entry.path == path; });
  };
  EXPECT_TRUE(named(open_dir)) << common::json_text(to_json(host.envs.front().env));
  EXPECT_TRUE(named(shared)) << common::json_text(to_json(host.envs.front().env));
  EXPECT_TRUE(named(drop)) << common::json_text(to_json(host.envs.front().env));
  EXPECT_FALSE(named(shared / "mine"));
}

// Activation scripts may start the env's Python before activation is
// done: what that Python imports (here the user site, with a .pth file of
// bob's) is held to the rule before any script runs.
TEST_F(LeastPrivilege, ActivationWaitsForTheImportCheck) {
  const fs::path home = m_alice.home;
  if (home.empty() || home == "/" || fs::exists(home)) {
    GTEST_SKIP() << "needs ectest-alice's home (" << home << ") to be free for the test";
  }
  struct RemoveHome {
    fs::path path;
    ~RemoveHome() { fs::remove_all(path); }
  } remove_home{home};
  const fs::path prefix = make_venv("env");
  chown_tree(prefix, m_alice_uid, m_alice_gid);
  const fs::path user_site = home / ".local/lib/python3.10/site-packages";
  fs::create_directories(user_site);
  chown_tree(home, m_alice_uid, m_alice_gid);
  std::ofstream(user_site / "shared.pth") << "\n";
  ASSERT_EQ(::lchown((user_site / "shared.pth").c_str(), m_bob.uid, m_bob.gid), 0);

  const auto env = discovery::describe_prefix(prefix).value();
  EXPECT_TRUE(env.unsafe.empty()) << "discovery sees only the env's own files";
  const auto activation = activate(env);
  EXPECT_NE(activation.problem.find((user_site / "shared.pth").string()), std::string::npos)
      << activation.problem;
  EXPECT_FALSE(fs::exists(m_out / "env.activate")) << "the activation script ran";
}

// A search path too big to read whole leaves places unchecked: the env's code
// is not run, and its report says why instead of judging half of it.
TEST_F(LeastPrivilege, ImportsThatCannotAllBeCheckedRunNothing) {
  const fs::path prefix = make_venv("env");
  const fs::path site = prefix / "lib/python3.10/site-packages";
  for (int i = 0; i < 300; ++i) {
    std::ofstream(site / ("extra-" + std::to_string(1000 + i) + ".pth")) << "\n";
  }
  chown_tree(prefix, m_alice_uid, m_alice_gid);
  auto host = scan(prefix);
  ASSERT_EQ(host.envs.size(), 1U);
  auto& scanned = host.envs.front();
  EXPECT_TRUE(scanned.env.unsafe.empty());
  EXPECT_NE(scanned.env.imports_unchecked.find("300 .pth files"), std::string::npos)
      << scanned.env.imports_unchecked;
  ProbePlan plan = torch_contract_plan();
  plan.imports = {"ec_whoami"};
  plan.compare_bare = false;
  scanned.activation.activated["ECTEST_MARKER"] = m_marker;
  const auto dynamic = probe_env(scanned.env, scanned.activation, plan);
  EXPECT_TRUE(dynamic.stages.empty());
  EXPECT_FALSE(fs::exists(m_out / "env.module"));

  facts::EnvFacts env_facts;
  env_facts.env = scanned.env;
  env_facts.dynamic = dynamic;
  EXPECT_NE(refusal_summary(env_facts, "imports_unchecked").find(".pth files"), std::string::npos);
  // Facts that do not carry the reason (their static part failed; the
  // probes checked on their own and refused): the probes' word is enough.
  env_facts.env.imports_unchecked.clear();
  EXPECT_NE(refusal_summary(env_facts, "imports_unchecked").find(".pth files"), std::string::npos);
}

// Its own files are the user's, the base is root's: nothing to refuse, and
// the user's own directories on PYTHONPATH are fine.
TEST_F(LeastPrivilege, ImportPathsOfTheEnvsUserAreSafe) {
  const fs::path prefix = make_venv("env");
  const fs::path mine = m_dir.path() / "alice-src";
  fs::create_directories(mine);
  std::ofstream(prefix / "bin/activate", std::ios::app)
      << "export PYTHONPATH=\"" << mine.string() << "\"\n";
  chown_tree(prefix, m_alice_uid, m_alice_gid);
  chown_tree(mine, m_alice_uid, m_alice_gid);
  const auto host = scan(prefix);
  ASSERT_EQ(host.envs.size(), 1U);
  const auto& entries = host.envs.front().static_facts.search_path.entries;
  ASSERT_FALSE(entries.empty());
  EXPECT_EQ(entries.front().path, mine) << "PYTHONPATH comes first";
  EXPECT_TRUE(host.envs.front().env.unsafe.empty())
      << common::json_text(to_json(host.envs.front().env));
}

TEST_F(LeastPrivilege, NothingAnOwnerCannotReadReachesTheFacts) {
  const fs::path prefix = make_venv("env");
  const fs::path site = prefix / "lib/python3.10/site-packages";
  // A root-only secret and a private file of bob's, linked from alice's env.
  const fs::path root_secret = m_dir.path() / "root-secret";
  std::ofstream(root_secret) << "Metadata-Version: 2.1\nName: rootsecret-7f3a\nVersion: 9.9\n";
  fs::permissions(root_secret, fs::perms::owner_read | fs::perms::owner_write);
  const fs::path bob_home = m_dir.path() / "bob";
  fs::create_directories(bob_home);
  std::ofstream(bob_home / "private.py") << "__version__ = 'bobsecret-91c2'\n";
  chown_tree(bob_home, m_bob.uid, m_bob.gid);
  fs::permissions(bob_home / "private.py", fs::perms::owner_read | fs::perms::owner_write);
  fs::create_directories(site / "leak-1.0.dist-info");
  std::ofstream(site / "leak-1.0.dist-info/RECORD") << "";
  fs::create_symlink(root_secret, site / "leak-1.0.dist-info/METADATA");
  fs::create_symlink("/etc/shadow", site / "leak-1.0.dist-info/INSTALLER");
  fs::create_directories(site / "torch");
  fs::create_symlink(bob_home / "private.py", site / "torch/version.py");
  chown_tree(prefix, m_alice_uid, m_alice_gid);

  HostFactsOptions options;
  options.discovery.prefixes = {prefix};
  const auto caches = std::make_shared<FactCaches>();
  const std::string facts = common::json_text(to_json(gather_host_facts(options, caches)));
  EXPECT_EQ(facts.find("rootsecret-7f3a"), std::string::npos);
  EXPECT_EQ(facts.find("bobsecret-91c2"), std::string::npos);
  std::ifstream shadow("/etc/shadow");
  std::string first_line;
  std::getline(shadow, first_line);
  ASSERT_FALSE(first_line.empty());
  EXPECT_EQ(facts.find(first_line.substr(0, first_line.find(':') + 2)), std::string::npos);
  // Nor what the agent prints: the facts verb, and a whole scan's report and
  // log (stderr), as an operator would run them.
  const fs::path contract = m_dir.path() / "contract.yaml";
  std::ofstream(contract) << "name: leak-check\nchecks:\n"
                          << "  - {id: torch, kind: torch, base: '2.10.0'}\n"
                          << "  - {id: dists, kind: distributions, absent: [leak]}\n";
  for (const auto& argv : std::vector<std::vector<std::string>>{
           {ENVCONTRACTD_PATH, "facts", "--prefix", prefix.string()},
           {ENVCONTRACTD_PATH, "scan", "--contract", contract.string(), "--prefix", prefix.string(),
            "--format", "json"}}) {
    const auto run = testing::run_command(argv);
    EXPECT_NE(run.out.find("ectest-alice"), std::string::npos) << argv[1] << ": " << run.err;
    for (const auto& secret : {std::string("rootsecret-7f3a"), std::string("bobsecret-91c2"),
                               first_line.substr(0, first_line.find(':') + 2)}) {
      EXPECT_EQ(run.out.find(secret), std::string::npos) << argv[1] << " printed " << secret;
      EXPECT_EQ(run.err.find(secret), std::string::npos) << argv[1] << " logged " << secret;
    }
  }
  // The same files readable by alice are read: the reading works at all.
  fs::permissions(root_secret, fs::perms::owner_read | fs::perms::others_read);
  const std::string readable =
      common::json_text(to_json(gather_host_facts(options, std::make_shared<FactCaches>())));
  EXPECT_NE(readable.find("rootsecret-7f3a"), std::string::npos);
}

// bin/python's links are followed as the env's reader: a link alice's env
// leads through bob's private directory names nothing beyond it (read as
// root, the chain would put bob's link target in the report).
TEST_F(LeastPrivilege, TheInterpretersLinksAreFollowedAsTheEnvsReader) {
  const fs::path prefix = make_venv("env");
  const fs::path bob_private = m_dir.path() / "bob-private";
  fs::create_directories(bob_private);
  fs::create_symlink("/opt/bobsecret-5d1e/python3.10", bob_private / "python");
  chown_tree(bob_private, m_bob.uid, m_bob.gid);
  fs::permissions(bob_private, fs::perms::owner_all, fs::perm_options::replace);
  fs::remove(prefix / "bin/python");
  fs::create_symlink(bob_private / "python", prefix / "bin/python");
  chown_tree(prefix, m_alice_uid, m_alice_gid);
  const auto env = discovery::describe_prefix(prefix);
  ASSERT_TRUE(env.has_value());
  const std::string facts = common::json_text(to_json(*env));
  EXPECT_EQ(facts.find("bobsecret-5d1e"), std::string::npos) << facts;
  // Readable by alice, the same chain is followed to its end and named.
  fs::permissions(bob_private,
                  fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec,
                  fs::perm_options::replace);
  const auto readable = discovery::describe_prefix(prefix);
  ASSERT_TRUE(readable.has_value());
  ASSERT_FALSE(readable->problems.empty());
  EXPECT_EQ(readable->problems.front().kind, facts::EnvProblem::Kind::no_interpreter);
  EXPECT_NE(readable->problems.front().text.find("/opt/bobsecret-5d1e/python3.10 does not exist"),
            std::string::npos)
      << readable->problems.front().text;
}

TEST_F(LeastPrivilege, EscapedForkedAndGreedyProbesAreBoundedAndEnded) {
  const fs::path prefix = make_venv("env");
  const fs::path site = prefix / "lib/python3.10/site-packages";
  std::ofstream(site / "ec_escape.py")
      << "import subprocess\n"
      << "subprocess.run(['setsid', '-f', 'sh', '-c', 'sleep 300'])\n";
  std::ofstream(site / "ec_forks.py")
      << "import os, time\n"
      << "children = 0\n"
      << "for _ in range(1000):\n"
      << "    try:\n"
      << "        pid = os.fork()\n"
      << "    except OSError:\n"
      << "        break\n"
      << "    if pid == 0:\n"
      << "        time.sleep(300)\n"
      << "        os._exit(0)\n"
      << "    children += 1\n"
      << "open(" << '"' << (m_out / "forks").string() << '"' << ", 'w').write(str(children))\n";
  std::ofstream(site / "ec_greedy.py") << "chunks = []\n"
                                       << "while True:\n"
                                       << "    chunks.append(bytearray(16 << 20))\n";
  chown_tree(prefix, m_alice_uid, m_alice_gid);
  const auto env = discovery::describe_prefix(prefix).value();
  process::ResourceLimits limits;
  limits.processes = 64;
  limits.memory_bytes = 256ULL << 20;

  const auto started = std::chrono::steady_clock::now();
  auto escaped = probe(env, nullptr, {"ec_escape"}, limits);
  ASSERT_FALSE(escaped.stages.empty());
  EXPECT_EQ(escaped.stages.back().status, StageStatus::ok) << escaped.stages.back().summary;
  EXPECT_TRUE(survivors().empty()) << "the setsid child outlived the probe";

  auto forks = probe(env, nullptr, {"ec_forks"}, limits);
  std::ifstream forks_record(m_out / "forks");
  int children = -1;
  forks_record >> children;
  EXPECT_GE(children, 1);
  EXPECT_LT(children, 1000) << "nothing bounded the fork loop";
  EXPECT_TRUE(survivors().empty()) << "forked children outlived the probe";

  auto greedy = probe(env, nullptr, {"ec_greedy"}, limits);
  ASSERT_FALSE(greedy.stages.empty());
  const auto& stage = greedy.stages.back();
  EXPECT_NE(stage.status, StageStatus::ok);
  EXPECT_NE(stage.status, StageStatus::hung) << "the allocation was not bounded";
  EXPECT_LT(std::chrono::steady_clock::now() - started, 60s);
}

TEST_F(LeastPrivilege, ActivationVariablesThatChangeBashAreRefused) {
  const fs::path prefix = m_dir.path() / "conda-env";
  const fs::path python = fs::canonical(testing::demo_host() / "venvs/xpu210v/bin/python");
  fs::create_directories(prefix / "bin");
  fs::create_directories(prefix / "conda-meta");
  fs::create_directories(prefix / "lib/python3.10/site-packages");
  fs::create_symlink(python, prefix / "bin/python");
  const fs::path planted = m_out / "bash_env_ran";
  std::ofstream(m_out / "bash_env.sh") << "touch " << planted.string() << "\n";
  std::ofstream(prefix / "conda-meta/state")
      << R"({"env_vars": {"BASH_ENV": ")" << (m_out / "bash_env.sh").string()
      << R"j(", "BASH_FUNC_ls%%": "() { touch /tmp/x; }", "bad name": "1", "PS4": "$(id)", )j"
      << R"("ECTEST_GOOD": "kept"}})";
  chown_tree(prefix, m_alice_uid, m_alice_gid);
  const auto env = discovery::describe_prefix(prefix).value();
  const auto activation = activate(env);
  EXPECT_EQ(activation.problem, "");
  EXPECT_EQ(activation.activated.at("ECTEST_GOOD"), "kept");
  EXPECT_FALSE(activation.activated.contains("BASH_ENV"));
  EXPECT_FALSE(fs::exists(planted)) << "BASH_ENV ran";
  ASSERT_EQ(activation.refused_variables.size(), 4U);
  std::string all;
  for (const auto& message : activation.refused_variables) {
    all += message + "\n";
  }
  EXPECT_NE(all.find("BASH_ENV changes how bash runs the activation scripts"), std::string::npos)
      << all;
  EXPECT_NE(all.find("'bad name' is not a shell variable name"), std::string::npos) << all;
}

}  // namespace
}  // namespace envcontract::probes
