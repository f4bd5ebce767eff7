// Container targets in real engines (issue 48): a long-running podman or
// docker container, made from a root filesystem the test builds (Debian's
// python3 and bash, envs owned by root and by a user), scanned through the
// agent with the engine's own exec and with nsenter. What the envs' code
// prints is only true inside that container; afterwards nothing of the
// probes is left inside or outside it. tests/support/container_engine.hpp
// makes the image (import), runs and removes the container.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <tuple>

#include "common/json_text.hpp"
#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/agent_process.hpp"
#include "tests/support/container_engine.hpp"
#include "tests/support/container_rootfs.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/system_venv.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_users.hpp"

namespace envcontract {
namespace {

using Json = nlohmann::ordered_json;
using testing::Engine;
using testing::run_command;
namespace fs = std::filesystem;

const std::string k_binary = ENVCONTRACTD_PATH;

// Variables ("NAME=value") set in this process while it lives, as they were
// before afterwards: the agent a test starts inherits them.
class EnvironmentFor {
 public:
  explicit EnvironmentFor(const std::vector<std::string>& variables) {
    for (const auto& variable : variables) {
      const auto equals = variable.find('=');
      const std::string name = variable.substr(0, equals);
      const char* before = std::getenv(name.c_str());
      m_before.emplace_back(name,
                            before != nullptr ? std::optional<std::string>(before) : std::nullopt);
      ::setenv(name.c_str(), variable.substr(equals + 1).c_str(), 1);
    }
  }
  ~EnvironmentFor() {
    for (const auto& [name, value] : m_before) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  EnvironmentFor(const EnvironmentFor&) = delete;
  EnvironmentFor& operator=(const EnvironmentFor&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> m_before;
};

// How the agent enters the container.
enum class Entry { engine_exec, nsenter };

struct Scan {
  Json report;
  int exit_code = -1;
  double seconds = 0;
  std::string err;
};

std::string joined(const std::vector<testing::HostProcess>& processes) {
  std::string text;
  for (const auto& process : processes) {
    text += "\n  " + process.text();
  }
  return text;
}

// A CPU torch as far as the probes ask (2.10.0), in a venv over the
// container's python3 whose activation puts its bin first on PATH, named
// as the container sees it (`inside`), as a venv made in the image is. It
// also exports the names the scripts that start processes inside use for
// themselves: what an env sets never changes what they run, where, or how
// its processes are marked.
void make_env(const fs::path& prefix, const std::string& inside) {
  const auto site = testing::system_venv_site(testing::make_system_venv(prefix));
  std::ofstream(prefix / "bin/activate")
      << "VIRTUAL_ENV=" << inside
      << "\nexport VIRTUAL_ENV\n"
         "PATH=\"$VIRTUAL_ENV/bin:$PATH\"\nexport PATH\n"
         "export dir=/etc marker=spoofed session=spoofed argv=/bin/false count=0 limits=\n"
         "export entry=kept vars=kept\n";
  fs::create_directories(site / "torch");
  std::ofstream(site / "torch/__init__.py") << "from . import version\n"
                                               "__version__ = version.__version__\n";
  std::ofstream(site / "torch/version.py") << "__version__ = '2.10.0'\ncuda = None\nhip = None\n";
}

std::string entry_name(Entry entry) {
  return entry == Entry::engine_exec ? "exec" : "nsenter";
}
void PrintTo(Entry entry, std::ostream* out) {
  *out << entry_name(entry);
}

// A container of `engine()`'s, with envs of root's and of a user's in it.
class EngineFixture : public ::testing::Test {
 protected:
  virtual Engine which() const = 0;

  void SetUp() override {
    m_session = std::make_unique<testing::EngineSession>(which(), m_dir.path() / "engine");
    if (!m_session->unavailable().empty()) {
      GTEST_SKIP() << m_session->name() << " cannot be used here: " << m_session->unavailable();
    }
    const auto user = testing::ensure_user("ectest-alice");
    if (!user) {
      GTEST_SKIP() << "no test user (useradd needs root)";
    }
    m_user = *user;
    testing::open_to_all(m_dir.path());
    make_env(rootfs() / "opt/venvs/app", "/opt/venvs/app");
    make_env(rootfs() / "opt/venvs/tools", "/opt/venvs/tools");
    if (const auto why = testing::make_container_rootfs(rootfs()); !why.empty()) {
      GTEST_SKIP() << why;
    }
    // Only this container has this line.
    m_marker = "inside container " + std::to_string(std::random_device{}());
    std::ofstream(rootfs() / "etc/container-marker") << m_marker << "\n";
    run_command({"/bin/chmod", "-R", "a+rX", rootfs().string()});
    testing::chown_tree(rootfs() / "opt/venvs/tools", m_user.uid, m_user.gid);
    // An init that reaps what is left to it, as tini and catatonit do: what
    // stays in its pid namespace is running, not a zombie.
    m_container = std::make_unique<testing::EngineContainer>(
        *m_session, rootfs(),
        std::vector<std::string>{"/usr/bin/python3", "-c",
                                 "import signal, time\n"
                                 "signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
                                 "while True: time.sleep(3600)\n"},
        m_dir.path() / "scratch");
    ASSERT_EQ(m_container->problem(), "");
    fs::create_directories(m_dir.path() / "host");
  }

  void TearDown() override {
    m_container.reset();
    m_session.reset();
  }

  fs::path rootfs() const { return m_dir.path() / "rootfs"; }
  std::string engine() const { return m_session->name(); }
  fs::path merged(const std::string& inside) const {
    return m_container->merged_dir() / fs::path(inside).relative_path();
  }

  fs::path containers_file(Entry entry) const {
    const std::string how =
        entry == Entry::engine_exec ? "exec: " + engine() : "exec: nsenter, runtime: " + engine();
    return m_dir.write("containers.yaml", "containers:\n  - {name: box, " + how + ", container: " +
                                              m_container->name() + ", env_roots: [/opt/venvs]}\n");
  }

  // Checks whose expected output only the container's own processes print:
  // its marker, its pid namespace, its interpreter's file (device and inode,
  // as the host sees them in the engine's mount of its root).
  std::string inside_checks() const {
    const std::string python = "/usr/bin/python" + testing::system_python_version();
    struct stat file {};
    EXPECT_EQ(::stat(merged(python).c_str(), &file), 0) << merged(python);
    std::string namespace_pattern = m_container->pid_namespace();  // pid:[N]
    namespace_pattern.replace(namespace_pattern.find('['), 1, "\\\\[");
    namespace_pattern.replace(namespace_pattern.find(']'), 1, "\\\\]");
    return "  - id: marker\n"
           "    kind: command\n"
           "    run: 'read -r line < /etc/container-marker; echo \"$line\"'\n"
           "    expect_output: \"^" +
           m_marker +
           "\\n\"\n"
           // Where the env's processes start: its prefix, whatever it exports;
           // and what it exports reaches them as it set it.
           "  - {id: workdir, kind: command, run: pwd, expect_output: '^/opt/venvs/'}\n"
           "  - {id: own-variables, kind: command,\n"
           "     run: 'echo \"$dir $entry $vars $argv\"', expect_output: '^/etc kept kept "
           "/bin/false\\n'}\n"
           "  - id: pid-namespace\n"
           "    kind: smoke\n"
           "    code: |\n"
           "      import os\n"
           "      print(os.readlink('/proc/self/ns/pid'))\n"
           "    expect_output: \"^" +
           namespace_pattern +
           "\\n\"\n"
           "  - id: interpreter\n"
           "    kind: smoke\n"
           "    code: |\n"
           "      import os, sys\n"
           "      found = os.stat(sys.executable)\n"
           "      print(os.path.realpath(sys.executable), found.st_dev, found.st_ino)\n"
           "    expect_output: \"^" +
           python + " " + std::to_string(file.st_dev) + " " + std::to_string(file.st_ino) +
           "\\n\"\n"
           // Its search path, set by its activation inside, names the
           // env's prefix as the container does (never the agent's
           // /proc/PID/root/... for it).
           "  - {id: path-first, kind: search_path, variable: PATH,\n"
           "     starts_with: ['{prefix}/bin'], must_not_contain: ['/proc/']}\n"
           // The probe's limits hold inside, whoever started it there: the
           // agent's default data limit (8 GiB), where the container
           // sets none.
           "  - id: limits\n"
           "    kind: smoke\n"
           "    code: |\n"
           "      import resource\n"
           "      print(resource.getrlimit(resource.RLIMIT_DATA))\n"
           "    expect_output: \"^\\\\(8589934592, 8589934592\\\\)\\n\"\n";
  }

  // `scan --format json` of the (empty) host and the container, timed.
  Scan scan(Entry entry, const std::string& checks) const {
    const auto contract = m_dir.write("contract.yaml",
                                      "schema_version: 1\n"
                                      "targets:\n"
                                      "  - {name: ci, image: " +
                                          m_container->image() + "}\nchecks:\n" + checks);
    const auto argv = m_session->with_environment(
        {k_binary, "scan", "--contract", contract.string(), "--format", "json", "--root",
         (m_dir.path() / "host").string(), "--containers", containers_file(entry).string()});
    const auto start = std::chrono::steady_clock::now();
    const auto result = run_command(argv);
    Scan scan;
    scan.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    scan.exit_code = result.exit_code;
    scan.err = result.err;
    scan.report = Json::parse(result.out, nullptr, false);
    EXPECT_FALSE(scan.report.is_discarded()) << result.out << result.err;
    return scan;
  }

  const Json* env_named(const Json& report, const std::string& name) const {
    for (const auto& env : report["envs"]) {
      if (env["name"] == name) {
        return &env;
      }
    }
    ADD_FAILURE() << "no env " << name << " in " << common::json_text(report);
    return nullptr;
  }

  // Both envs judged inside the container, as `verdict`; the root-owned one
  // as a uid of its own, the user's as the user.
  void expect_judged_inside(const Scan& scan, const std::string& verdict) const {
    const std::string text = common::json_text(scan.report);
    EXPECT_EQ(scan.report["verdict"], verdict) << text << scan.err;
    ASSERT_EQ(scan.report["envs"].size(), 2U) << text;
    for (const char* name : {"box:app", "box:tools"}) {
      SCOPED_TRACE(name);
      const Json* env = env_named(scan.report, name);
      ASSERT_NE(env, nullptr);
      EXPECT_EQ((*env)["container"], "box") << text;
      EXPECT_EQ((*env)["verdict"], verdict) << common::json_text(*env);
      for (const char* id : {"marker", "workdir", "own-variables", "pid-namespace", "interpreter",
                             "limits", "path-first"}) {
        const Json* check = testing::find_check(*env, id);
        ASSERT_NE(check, nullptr) << text;
        EXPECT_EQ((*check)["status"], "pass") << id << ": " << common::json_text(*check);
      }
    }
    const Json* tools = env_named(scan.report, "box:tools");
    ASSERT_NE(tools, nullptr);
    // Read through the root its processes see (volumes included), never by
    // a path through the engine's storage, which is root's alone.
    const std::string process_root = "/proc/" + std::to_string(m_container->pid()) + "/root";
    EXPECT_EQ((*tools)["prefix"], process_root + "/opt/venvs/tools") << text;
    EXPECT_EQ((*tools)["run_as"]["uid"], m_user.uid) << common::json_text(*tools);
    const Json* app = env_named(scan.report, "box:app");
    ASSERT_NE(app, nullptr);
    EXPECT_NE((*app)["run_as"]["uid"], 0) << common::json_text(*app);
    ASSERT_EQ(scan.report["containers"].size(), 1U) << text;
    const auto& container = scan.report["containers"][0];
    EXPECT_TRUE(container["problem"].is_null()) << text;
    EXPECT_EQ(container["image"]["value"], m_container->image()) << text;
    EXPECT_EQ(container["root"], process_root) << text;
  }

  // Nothing of the probes left running in the container or naming it
  // outside (an exec client, its monitor, podman's cleanup: given 10 s to
  // end, which they do at once), and no probe directory in its /tmp.
  void expect_nothing_left() const {
    std::vector<testing::HostProcess> inside;
    std::vector<testing::HostProcess> outside;
    testing::wait_until(
        [&] {
          inside = m_container->processes_inside();
          outside = m_container->processes_naming_it();
          return inside.empty() && outside.empty();
        },
        std::chrono::seconds(10));
    EXPECT_TRUE(inside.empty()) << "left running inside the container:" << joined(inside);
    EXPECT_TRUE(outside.empty()) << "left running for the container:" << joined(outside);
    std::vector<std::string> left;
    const fs::path tmp = "/proc/" + std::to_string(m_container->pid()) + "/root/tmp";
    for (const auto& entry : fs::directory_iterator(tmp)) {
      left.push_back(entry.path().filename().string());
    }
    EXPECT_TRUE(left.empty()) << "left in the container's /tmp: " << left.front();
  }

  // The scan's wall time, in the test's output and as a property of its XML result.
  void report_time(Entry entry, const Scan& scan) const {
    const std::string how = entry == Entry::engine_exec ? engine() + " exec" : "nsenter";
    const double reported = scan.report.value("duration_ms", 0.0);
    std::cout << "[ timing   ] " << engine() << ", " << how << ": scan took " << scan.seconds
              << " s (the report's duration_ms: " << reported << ")\n";
    RecordProperty(engine() + " " + entry_name(entry) + " seconds", std::to_string(scan.seconds));
  }

  // A path of the running container, as the test (root, on the host)
  // reaches it: through its process's root.
  fs::path in_container(const fs::path& inside) const {
    return fs::path("/proc/" + std::to_string(m_container->pid()) + "/root") /
           inside.relative_path();
  }
  // The app env's site-packages, as the container names it.
  static fs::path app_site() {
    return fs::path("/opt/venvs/app/lib") / ("python" + testing::system_python_version()) /
           "site-packages";
  }
  // Moves the container's directory `inside` to `elsewhere` (an absolute
  // path the host does not have) and links it back into place, as images
  // link a vendor's files from /opt.
  void link_from_elsewhere(const fs::path& inside, const fs::path& elsewhere) const {
    ASSERT_FALSE(fs::exists(elsewhere)) << "the host must not have " << elsewhere;
    fs::create_directories(in_container(elsewhere).parent_path());
    // Copied, not renamed: the image's directories are in a lower layer of
    // the container's overlay, which refuses to rename them (EXDEV).
    fs::copy(in_container(inside), in_container(elsewhere), fs::copy_options::recursive);
    fs::remove_all(in_container(inside));
    fs::create_symlink(elsewhere, in_container(inside));
  }

  testing::TempDir m_dir;
  std::unique_ptr<testing::EngineSession> m_session;
  std::unique_ptr<testing::EngineContainer> m_container;
  testing::User m_user;
  std::string m_marker;
};

const std::string k_torch_met = "  - {id: torch, kind: torch, base: \"2.10.0\", cuda: none}\n";
const std::string k_torch_broken = "  - {id: torch, kind: torch, base: \"2.9.0\", cuda: none}\n";

// Each engine entered each way: with its own exec (`exec: podman`) and with
// nsenter (`exec: nsenter`, `runtime: podman`).
class RealEngine : public EngineFixture,
                   public ::testing::WithParamInterface<std::tuple<Engine, Entry>> {
 protected:
  Engine which() const override { return std::get<0>(GetParam()); }
  Entry entry() const { return std::get<1>(GetParam()); }
};

TEST_P(RealEngine, EnvsOfRootAndOfAUserAreJudgedInside) {
  const auto met = scan(entry(), inside_checks() + k_torch_met);
  report_time(entry(), met);
  EXPECT_EQ(met.exit_code, 0) << met.err;
  expect_judged_inside(met, "compliant");
  const std::string exec = common::json_text(met.report["containers"][0]["exec"]);
  EXPECT_NE(exec.find(entry() == Entry::engine_exec ? engine() : "nsenter"), std::string::npos)
      << exec;

  const auto broken = scan(entry(), inside_checks() + k_torch_broken);
  EXPECT_EQ(broken.exit_code, 1) << broken.err;
  expect_judged_inside(broken, "drift");
  for (const auto& env : broken.report["envs"]) {
    const Json* torch = testing::find_check(env, "torch");
    ASSERT_NE(torch, nullptr);
    EXPECT_EQ((*torch)["status"], "fail") << common::json_text(*torch);
  }
}

// Every process of an env's probe (activation, the probe's interpreters,
// each command) runs through one exec of the engine's client per env (its
// session, discovery/exec_session.hpp), not one per process: counted in the
// engine's own record of execs into the container. Through nsenter, none.
TEST_P(RealEngine, OneEngineExecPerEnvNotPerProcess) {
  const auto since = std::to_string(std::time(nullptr));
  // A command that writes far more than a pipe holds: read as it comes, or
  // it would block until its time-out. Through a session, one that ends
  // its process group as CI scripts do (`trap 'kill 0' EXIT`) ends only
  // itself: each process has a group of its own, not the server's.
  const std::string group_killer = entry() == Entry::engine_exec
                                       ? "  - {id: group-killer, kind: command, expect_exit: 143,\n"
                                         "     run: \"trap 'kill 0' EXIT; true\"}\n"
                                       : "";
  const auto met = scan(entry(), inside_checks() + k_torch_met + group_killer +
                                     "  - {id: chatty, kind: command, timeout: 20s,\n"
                                     "     run: 'head -c 1000000 /dev/zero; echo done >&2'}\n");
  expect_judged_inside(met, "compliant");
  // podman records an "exec" event per exec; docker "exec_create", "exec_start" and "exec_die".
  const std::string event = which() == Engine::podman ? "exec" : "exec_start";
  const std::size_t expected = entry() == Entry::engine_exec ? 2 : 0;
  std::size_t execs = 0;
  std::string listed;
  // The engine may write its events a moment after the exec: asked again
  // until they are all there (more than expected is seen at once).
  testing::wait_until(
      [&] {
        const auto until = std::to_string(std::time(nullptr) + 1);
        const auto events =
            m_session->client({"events", "--since", since, "--until", until, "--filter",
                               "container=" + m_container->name(), "--filter", "event=" + event,
                               "--format", "{{.ID}}"});  // one line each (docker's status has argv)
        EXPECT_EQ(events.exit_code, 0) << events.err;
        listed = events.out;
        execs = static_cast<std::size_t>(std::count(listed.begin(), listed.end(), '\n'));
        return execs >= expected;
      },
      std::chrono::seconds(10));
  for (const auto& env : met.report["envs"]) {
    const Json* chatty = testing::find_check(env, "chatty");
    ASSERT_NE(chatty, nullptr);
    EXPECT_EQ((*chatty)["status"], "pass") << common::json_text(*chatty);
  }
  // Two envs (root's, run as a uid of its own, and the user's); each runs
  // activation, identity, four smokes and two commands: eight processes.
  EXPECT_EQ(execs, expected) << listed;
}

// The changes an env's activation makes are its scripts' alone: a venv's
// own script changes PATH and VIRTUAL_ENV, nothing else. The agent's
// markers in the processes it starts inside are not among them: counted
// as changes, they made every env probed through an engine's exec look as
// if its activation changed how libraries load, and so probed twice, bare
// and activated (a second import of torch per env: twice nsenter's time on
// a real torch, bench/container_bench).
TEST_P(RealEngine, TheAgentsMarkersAreNotChangesOfTheActivation) {
  for (const char* prefix : {"/opt/venvs/app", "/opt/venvs/tools"}) {
    std::ofstream(in_container(fs::path(prefix) / "bin/activate"))
        << "VIRTUAL_ENV=" << prefix
        << "\nexport VIRTUAL_ENV\nPATH=\"$VIRTUAL_ENV/bin:$PATH\"\nexport PATH\n";
  }
  const auto met = scan(entry(), k_torch_met);
  EXPECT_EQ(met.exit_code, 0) << met.err;
  ASSERT_EQ(met.report["envs"].size(), 2U) << common::json_text(met.report);
  for (const auto& env : met.report["envs"]) {
    SCOPED_TRACE(env.value("name", ""));
    for (const auto& change : env["activation"]["changes"]) {
      const std::string name = change.value("name", "");
      EXPECT_TRUE(name == "PATH" || name == "VIRTUAL_ENV") << common::json_text(change);
    }
    EXPECT_EQ(env["activation"]["changes"].size(), 2U) << common::json_text(env["activation"]);
  }
}

// An env's code that kills its session's server (a process of its own
// user, which it may signal) fails at most the check that did it: the
// env's next process runs in a new session, and nothing is left.
TEST_P(RealEngine, AnEnvThatKillsItsSessionOnlyFailsItsOwnCheck) {
  if (entry() != Entry::engine_exec) {
    GTEST_SKIP() << "only a runtime's exec has sessions";
  }
  const auto result =
      scan(entry(),
           k_torch_met +
               // Its parent is the subshell that waits for it; that one's parent is the server.
               "  - {id: kill-server, kind: command,\n"
               "     run: 'read -r s < /proc/$PPID/stat; set -- ${s##*) }; kill -9 $2; sleep 1'}\n"
               "  - {id: after, kind: command, run: 'echo still here',\n"
               "     expect_output: '^still here'}\n");
  const std::string text = common::json_text(result.report);
  ASSERT_EQ(result.report["envs"].size(), 2U) << text << result.err;
  for (const auto& env : result.report["envs"]) {
    SCOPED_TRACE(env["name"].get<std::string>());
    for (const char* id : {"torch", "after"}) {
      const Json* check = testing::find_check(env, id);
      ASSERT_NE(check, nullptr) << text;
      EXPECT_EQ((*check)["status"], "pass") << common::json_text(*check);
    }
  }
  expect_nothing_left();
}

// A link in the container with an absolute target (as images link a
// vendor's files into place) leads to the container's file: read through
// the container's process root, never to the host's file of that name. The
// files are read without running the env's code: a distribution's METADATA
// (its directory's name says another version, used only when METADATA
// cannot be read).
TEST_P(RealEngine, AnAbsoluteLinkInTheContainerIsFollowedInsideIt) {
  const fs::path target = "/opt/envcontract-test-vendor/METADATA";
  ASSERT_FALSE(fs::exists(target)) << "the host must not have " << target;
  // Written through the running container's root (the image was imported
  // from the rootfs at set-up, which the container no longer follows).
  const fs::path inside_root = "/proc/" + std::to_string(m_container->pid()) + "/root";
  fs::create_directories(inside_root / target.relative_path().parent_path());
  std::ofstream(inside_root / target.relative_path())
      << "Metadata-Version: 2.1\nName: vendorpkg\nVersion: 1.2.3\n";
  const fs::path dist_info = inside_root / "opt/venvs/app/lib" /
                             ("python" + testing::system_python_version()) /
                             "site-packages/vendorpkg-0.0.1.dist-info";
  fs::create_directories(dist_info);
  fs::create_symlink(target, dist_info / "METADATA");

  const auto result =
      scan(entry(), "  - {id: vendor, kind: distributions, pins: {vendorpkg: '==1.2.3'}}\n");
  const std::string text = common::json_text(result.report);
  const Json* app = env_named(result.report, "box:app");
  ASSERT_NE(app, nullptr) << text;
  const Json* vendor = testing::find_check(*app, "vendor");
  ASSERT_NE(vendor, nullptr) << text;
  EXPECT_EQ((*vendor)["status"], "pass") << common::json_text(*vendor);
}

// The same for a directory: an env whose site-packages is a link to
// "/opt/..." in the container has its packages read there, not in the
// host's directory of that name.
TEST_P(RealEngine, ASitePackagesLinkedElsewhereInTheContainerIsReadThere) {
  const fs::path moved = "/opt/envcontract-test-vendor/app-site-packages";
  link_from_elsewhere(app_site(), moved);
  const fs::path dist_info = in_container(moved / "vendorpkg-1.2.3.dist-info");
  fs::create_directories(dist_info);
  std::ofstream(dist_info / "METADATA")
      << "Metadata-Version: 2.1\nName: vendorpkg\nVersion: 1.2.3\n";

  const auto result = scan(entry(), k_torch_met +
                                        "  - {id: vendor, kind: distributions, pins: "
                                        "{vendorpkg: '==1.2.3'}}\n");
  const std::string text = common::json_text(result.report);
  const Json* app = env_named(result.report, "box:app");
  ASSERT_NE(app, nullptr) << text;
  for (const char* id : {"torch", "vendor"}) {
    const Json* check = testing::find_check(*app, id);
    ASSERT_NE(check, nullptr) << text;
    EXPECT_EQ((*check)["status"], "pass") << common::json_text(*check);
  }
}

// A package linked into place from elsewhere in the container (a vendor's
// torch under /opt) is there for the env, as for its interpreter: never
// "not installed" because the host has no /opt/... of that name.
TEST_P(RealEngine, APackageLinkedIntoPlaceInTheContainerIsFound) {
  link_from_elsewhere(app_site() / "torch", "/opt/envcontract-test-vendor/torch");

  const auto result = scan(entry(), k_torch_met);
  const std::string text = common::json_text(result.report);
  const Json* app = env_named(result.report, "box:app");
  ASSERT_NE(app, nullptr) << text;
  const Json* check = testing::find_check(*app, "torch");
  ASSERT_NE(check, nullptr) << text;
  EXPECT_EQ((*check)["status"], "pass") << common::json_text(*check);
}

// A directory below a package linked from elsewhere in the container (a
// vendor triton's backends under /opt) is listed there: never "no backends"
// because the host has no /opt/... of that name.
TEST_P(RealEngine, ADirectoryLinkedFromElsewhereInThePackageIsListedInTheContainer) {
  const fs::path triton = app_site() / "triton";
  fs::create_directories(in_container(triton / "backends/xpu"));
  fs::create_directories(in_container(triton / "backends/__pycache__"));
  std::ofstream(in_container(triton / "__init__.py")) << "__version__ = '3.6.0'\n";
  const fs::path dist_info = app_site() / "triton-3.6.0.dist-info";
  fs::create_directories(in_container(dist_info));
  std::ofstream(in_container(dist_info / "METADATA"))
      << "Metadata-Version: 2.1\nName: triton\nVersion: 3.6.0\n";
  std::ofstream(in_container(dist_info / "RECORD")) << "triton/__init__.py,,\n";
  link_from_elsewhere(triton / "backends", "/opt/envcontract-test-vendor/triton-backends");

  const auto result = scan(entry(), "  - {id: triton, kind: triton, backends: [xpu]}\n");
  const std::string text = common::json_text(result.report);
  const Json* app = env_named(result.report, "box:app");
  ASSERT_NE(app, nullptr) << text;
  const Json* check = testing::find_check(*app, "triton");
  ASSERT_NE(check, nullptr) << text;
  EXPECT_EQ((*check)["status"], "pass") << common::json_text(*check);
  // Named as the env sees it; where the agent read it is kept beside.
  EXPECT_EQ((*check)["actual"]["location"], triton.string()) << common::json_text(*check);
  EXPECT_EQ((*check)["actual"]["host_location"], in_container(triton).string());
}

TEST_P(RealEngine, AfterAScanNothingOfTheProbesIsLeftInsideOrOutside) {
  const auto met = scan(entry(), inside_checks() + k_torch_met);
  EXPECT_EQ(met.report["verdict"], "compliant") << common::json_text(met.report);
  expect_nothing_left();
}

// A probe that sleeps forever in the container: it times out, the hang is
// diagnosed in the interpreter that sleeps (its threads and Python stack,
// not the engine's client), and it is gone from the container afterwards.
TEST_P(RealEngine, AProbeThatTimesOutIsDiagnosedInsideAndLeavesNothing) {
  const auto result = scan(entry(),
                           "  - id: forever\n"
                           "    kind: smoke\n"
                           "    timeout: 3s\n"
                           "    code: |\n"
                           "      import time\n"
                           "      def wait_forever_in_container():\n"
                           "          while True:\n"
                           "              time.sleep(1)\n"
                           "      wait_forever_in_container()\n");
  const std::string text = common::json_text(result.report);
  ASSERT_EQ(result.report["envs"].size(), 2U) << text << result.err;
  for (const auto& env : result.report["envs"]) {
    SCOPED_TRACE(env["name"].get<std::string>());
    const Json* check = testing::find_check(env, "forever");
    ASSERT_NE(check, nullptr) << text;
    const std::string check_text = common::json_text(*check);
    EXPECT_EQ((*check)["status"], "fail") << check_text;
    EXPECT_EQ((*check)["diagnosis"]["cause"], "hang") << check_text;
    // (The code itself is in `expected`: the stack is looked for in the evidence.)
    const auto& stacks = (*check)["diagnosis"]["evidence"]["python_stacks"];
    EXPECT_NE(common::json_text(stacks).find("wait_forever_in_container"), std::string::npos)
        << "no Python stack of the sleeping interpreter: " << check_text;
    // Its threads are the interpreter's (the probe's `python`), none the client's.
    const auto& threads = (*check)["diagnosis"]["evidence"]["threads"];
    EXPECT_FALSE(threads.empty()) << check_text;
    for (const auto& thread : threads) {
      EXPECT_NE(thread["name"].get<std::string>().find("python"), std::string::npos)
          << "a thread of another process was sampled: " << check_text;
    }
  }
  expect_nothing_left();
}

TEST_P(RealEngine, AStoppedContainerMakesTheHostAnErrorWithTheReason) {
  const auto stopped = m_container->stop();
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  const std::string status = m_container->inspect("{{.State.Status}}");
  const auto result = scan(entry(), k_torch_met);
  const std::string text = common::json_text(result.report);
  EXPECT_EQ(result.exit_code, 2) << text << result.err;
  EXPECT_EQ(result.report["verdict"], "error") << text;
  const std::string expected =
      "container " + m_container->name() + " is not running (" + status + ")";
  bool named = false;
  for (const auto& reason : result.report["reasons"]) {
    const auto line = reason.get<std::string>();
    named =
        named || (line.starts_with("container box: ") && line.find(expected) != std::string::npos);
  }
  EXPECT_TRUE(named) << "the host's reasons name '" << expected << "': " << text;
  ASSERT_EQ(result.report["containers"].size(), 1U) << text;
  EXPECT_EQ(result.report["containers"][0]["problem"], expected) << text;
}

// The agent serving, as operators run it: the container's envs judged in
// the report it serves, in /metrics, and by fleetctl's check (exit 0); then
// the container stops, and the next scan makes the host an error there too
// (exit 2), never compliant on the envs it had.
TEST_P(RealEngine, ServeAndFleetctlShowItsEnvsAndItsStop) {
  const auto contract =
      m_dir.write("contract.yaml",
                  "schema_version: 1\n"
                  "targets:\n"
                  "  - {name: ci, image: " +
                      m_container->image() + "}\nchecks:\n" + inside_checks() + k_torch_met);
  m_dir.write("agent.yaml", testing::read_text(containers_file(entry())));
  // The docker client in the agent reaches the test's own dockerd.
  const EnvironmentFor agent_environment(m_session->environment());
  testing::AgentProcess agent(
      m_dir.path(), {"--config", (m_dir.path() / "agent.yaml").string(), "--contract",
                     contract.string(), "--root", (m_dir.path() / "host").string(), "--database",
                     (m_dir.path() / "agent.db").string(), "--interval", "2s"});
  const Json report = testing::wait_for_report(agent);
  expect_judged_inside({report, 0, 0, ""}, "compliant");
  const std::string metrics = testing::http_get(agent.url(), "/metrics").body;
  for (const std::string series :
       {R"(envcontract_container_up{container="box"} 1)",
        R"(envcontract_env_compliant{container="box",env="box:app"} 1)",
        R"(envcontract_env_compliant{container="box",env="box:tools"} 1)"}) {
    EXPECT_NE(metrics.find(series), std::string::npos) << series << "\n" << metrics;
  }
  const std::string address = "127.0.0.1:" + std::to_string(agent.port());
  const auto met = run_command({FLEETCTL_PATH, "check", address, "--format", "table"});
  EXPECT_EQ(met.exit_code, 0) << met.out << met.err;
  EXPECT_NE(met.out.find("\nbox:tools "), std::string::npos) << met.out;

  ASSERT_EQ(m_container->stop().exit_code, 0);
  const bool noticed = testing::wait_until(
      [&] {
        const auto check = run_command({FLEETCTL_PATH, "check", address, "--format", "json"});
        return check.exit_code == 2;
      },
      std::chrono::seconds(60));
  const auto stopped = run_command({FLEETCTL_PATH, "check", address, "--format", "table"});
  EXPECT_TRUE(noticed) << stopped.out << stopped.err << agent.log();
  EXPECT_NE(stopped.out.find("is not running"), std::string::npos) << stopped.out;
}

INSTANTIATE_TEST_SUITE_P(, RealEngine,
                         ::testing::Combine(::testing::Values(Engine::podman, Engine::docker),
                                            ::testing::Values(Entry::engine_exec, Entry::nsenter)),
                         [](const ::testing::TestParamInfo<std::tuple<Engine, Entry>>& param) {
                           return testing::engine_name(std::get<0>(param.param)) + "_" +
                                  entry_name(std::get<1>(param.param));
                         });

}  // namespace
}  // namespace envcontract
