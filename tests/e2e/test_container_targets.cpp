// Container targets for real, without a container engine: a root filesystem
// the test builds (Debian's python3 and bash, its own ld.so.cache, a vendor
// library only it has) entered with bubblewrap as the exec prefix. The
// agent reads the container's files under its root and runs activation and
// every probe inside it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <future>
#include <set>

#include "common/json_text.hpp"
#include "daemon/scanner.hpp"
#include "discovery/container_runtime.hpp"
#include "process/stall_guard.hpp"
#include "report/report_json.hpp"
#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/compile.hpp"
#include "tests/support/container_rootfs.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/hung_mount.hpp"
#include "tests/support/report_schema.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/system_venv.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_users.hpp"

namespace envcontract {
namespace {

using Json = nlohmann::ordered_json;
using testing::run_command;
namespace fs = std::filesystem;

const std::string k_binary = ENVCONTRACTD_PATH;

// A container whose app venv imports `vendorlib`, which loads
// libvendorplugin.so, which needs libinside.so: present only in the
// container's /opt/vendor/lib, which only its ld.so.cache names.
class ContainerTarget : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::bubblewrap_path().empty()) {
      GTEST_SKIP() << "bubblewrap is not installed (apt install bubblewrap): container targets "
                      "are tested by entering a rootfs with it";
    }
    testing::open_to_all(m_dir.path());
    testing::build_shared_library(rootfs() / "opt/vendor/lib/libinside.so",
                                  "int inside_value(void) { return 42; }\n");
    const auto app = testing::make_system_venv(rootfs() / "opt/venvs/app");
    const auto site = testing::system_venv_site(app);
    testing::build_shared_library(site / "vendorlib/libvendorplugin.so",
                                  "int inside_value(void);\n"
                                  "int vendor_value(void) { return inside_value(); }\n",
                                  {"-L" + (rootfs() / "opt/vendor/lib").string(), "-linside"});
    std::ofstream(site / "vendorlib/__init__.py")
        << "import ctypes, os\n"
           "_plugin = ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'libvendorplugin.so'))\n"
           "VALUE = _plugin.vendor_value()\n";
    // A CPU torch as far as the probes ask: smoke snippets run once it imports.
    fs::create_directories(site / "torch");
    std::ofstream(site / "torch/__init__.py") << "from . import version\n"
                                                 "__version__ = version.__version__\n";
    std::ofstream(site / "torch/version.py") << "__version__ = '2.10.0'\ncuda = None\nhip = None\n";
    // Last: its loader cache must know /opt/vendor/lib's library.
    const auto why = testing::make_container_rootfs(rootfs(), {"/opt/vendor/lib"});
    if (!why.empty()) {
      GTEST_SKIP() << why;
    }
    std::ofstream(rootfs() / "etc/container-marker") << "inside the test's container\n";
    run_command({"/bin/chmod", "-R", "a+rX", rootfs().string()});
    std::ofstream(containers_file())
        << "containers:\n"
           "  - name: trainer\n"
           "    exec: "
        << common::json_text(Json(testing::bubblewrap_prefix(rootfs())))
        << "\n"
           "    rootfs: "
        << rootfs().string()
        << "\n"
           "    env_roots: [/opt/venvs]\n"
           "    image: registry.example/vendor/runtime:2.2.0\n";
    fs::create_directories(m_dir.path() / "host");
  }

  fs::path rootfs() const { return m_dir.path() / "rootfs"; }
  fs::path contract(const std::string& checks) const {
    return m_dir.write("contract.yaml",
                       "schema_version: 1\n"
                       "targets:\n"
                       "  - {name: ci, image: registry.example/vendor/runtime:2.2.0}\n"
                       "checks:\n" +
                           checks);
  }
  fs::path containers_file() const { return m_dir.path() / "containers.yaml"; }
  // The container entered by nsenter, as the preset does a runtime's.
  void write_nsenter_config(pid_t pid) const {
    std::ofstream(containers_file()) << "containers:\n  - name: trainer\n    exec: nsenter\n"
                                     << "    pid: " << pid << "\n    rootfs: " << rootfs().string()
                                     << "\n    env_roots: [/opt/venvs]\n"
                                        "    image: registry.example/vendor/runtime:2.2.0\n";
  }

  // `scan --format json` of the (empty) host and the container.
  // `before`: a command line the agent runs under (setpriv).
  Json scan(const std::string& checks, bool as_container = true,
            const std::vector<std::string>& before = {}) const {
    const auto contract =
        m_dir.write("contract.yaml",
                    "schema_version: 1\n"
                    "targets:\n"
                    "  - {name: ci, image: registry.example/vendor/runtime:2.2.0}\n"
                    "checks:\n" +
                        checks);
    std::vector<std::string> argv = before;
    argv.insert(argv.end(),
                {k_binary, "scan", "--contract", contract.string(), "--format", "json"});
    if (as_container) {
      argv.insert(argv.end(), {"--root", (m_dir.path() / "host").string(), "--containers",
                               containers_file().string()});
    } else {
      argv.insert(argv.end(), {"--root", rootfs().string()});
    }
    const auto result = run_command(argv);
    auto report = Json::parse(result.out, nullptr, false);
    EXPECT_FALSE(report.is_discarded()) << result.out << result.err;
    return report;
  }

  testing::TempDir m_dir;
};

const Json* check_of(const Json& env, const std::string& id) {
  for (const auto& check : env["checks"]) {
    if (check["id"] == id) {
      return &check;
    }
  }
  return nullptr;
}

void expect_passed(const Json& env, std::initializer_list<const char*> ids) {
  for (const char* id : ids) {
    const Json* check = check_of(env, id);
    ASSERT_NE(check, nullptr) << id << ": " << common::json_text(env);
    EXPECT_EQ((*check)["status"], "pass") << id << ": " << common::json_text(*check);
  }
}

TEST_F(ContainerTarget, ProbesRunInsideAndItsOwnLibrariesResolveThere) {
  const auto report = scan(
      "  - {id: vendor-import, kind: imports, modules: [vendorlib]}\n"
      "  - {id: inside-lib, kind: libraries, present: [libinside.so]}\n"
      "  - {id: marker, kind: command, run: 'read -r line < /etc/container-marker; echo $line',\n"
      "     expect_output: inside}\n");
  const std::string text = common::json_text(report);
  if (const auto violations = testing::report_schema_violations(report)) {
    EXPECT_EQ(*violations, "");
  }
  ASSERT_EQ(report["envs"].size(), 1U) << text;
  const auto& env = report["envs"][0];
  EXPECT_EQ(env["container"], "trainer") << text;
  EXPECT_EQ(env["prefix"], (rootfs() / "opt/venvs/app").string()) << text;
  EXPECT_EQ(env["verdict"], "compliant") << text;
  EXPECT_EQ(report["verdict"], "compliant") << text;
  expect_passed(env, {"vendor-import", "inside-lib", "marker"});
  // The import and the library both came from inside: named as the agent
  // reads them, under the container's root, and the interpreter agrees with
  // the files on where vendorlib lives (no env:search-path error).
  EXPECT_NE(text.find((rootfs() / "opt/vendor/lib/libinside.so").string()), std::string::npos)
      << text;
  EXPECT_EQ(check_of(env, "env:search-path"), nullptr) << text;

  ASSERT_EQ(report["containers"].size(), 1U) << text;
  const auto& container = report["containers"][0];
  EXPECT_EQ(container["name"], "trainer");
  EXPECT_EQ(container["root"], rootfs().string());
  EXPECT_EQ(container["image"]["value"], "registry.example/vendor/runtime:2.2.0");
  EXPECT_EQ(container["image"]["source"], "configured");
  EXPECT_EQ(container["envs"], Json::array({"trainer:app"}));
  EXPECT_EQ(env["name"], "trainer:app") << "named with its container: every image has a base";
  EXPECT_TRUE(container["problem"].is_null()) << text;
  ASSERT_EQ(container["targets"].size(), 1U);
  EXPECT_EQ(container["targets"][0]["checks"][0]["status"], "pass") << text;
}

// The same rootfs read as a plain --root: its files say the library is there
// (its own loader cache names it), but the code runs on the host, where the
// loader cannot find it. This is the wrong machine's verdict that container
// targets exist to avoid.
TEST_F(ContainerTarget, OnTheHostTheSameEnvCannotLoadTheContainersLibrary) {
  const auto report = scan("  - {id: vendor-import, kind: imports, modules: [vendorlib]}\n",
                           /*as_container=*/false);
  const std::string text = common::json_text(report);
  ASSERT_EQ(report["envs"].size(), 1U) << text;
  const auto& env = report["envs"][0];
  EXPECT_TRUE(env["container"].is_null()) << text;
  const Json* check = check_of(env, "vendor-import");
  ASSERT_NE(check, nullptr) << text;
  EXPECT_EQ((*check)["status"], "fail") << text;
  EXPECT_NE(common::json_text(*check).find("libinside.so"), std::string::npos)
      << common::json_text(*check);
}

// Path rules name paths as the env sees them. torch lies at
// /opt/venvs/app/... inside the container (and inside the rootfs scanned
// with --root), which the agent reads under the rootfs: judged on the inside
// path, a forbidden prefix fails and a required one passes, with the host
// path kept in the evidence.
TEST_F(ContainerTarget, PathRulesAreJudgedOnThePathInsideTheTarget) {
  for (const bool as_container : {true, false}) {
    SCOPED_TRACE(as_container ? "container target" : "--root");
    const auto report = scan(
        "  - {id: not-in-venvs, kind: torch, forbidden_paths: [/opt/venvs/]}\n"
        "  - {id: in-venvs, kind: torch, required_paths: [/opt/venvs/]}\n"
        "  - {id: not-in-opt, kind: torch, forbidden_path_parts: [/opt/venvs/app/lib/]}\n"
        "  - {id: in-usr, kind: torch, required_paths: [/usr/lib/python3/]}\n",
        as_container);
    const std::string text = common::json_text(report);
    ASSERT_EQ(report["envs"].size(), 1U) << text;
    const auto& env = report["envs"][0];
    const std::string inside =
        "/opt/venvs/app/lib/python" + testing::system_python_version() + "/site-packages/torch";
    const Json* forbidden = check_of(env, "not-in-venvs");
    ASSERT_NE(forbidden, nullptr) << text;
    EXPECT_EQ((*forbidden)["status"], "fail") << common::json_text(*forbidden);
    EXPECT_EQ((*forbidden)["diagnosis"]["summary"],
              "torch resolves from " + inside + ", under the forbidden /opt/venvs/");
    EXPECT_EQ((*forbidden)["diagnosis"]["evidence"]["location"], inside);
    EXPECT_EQ((*forbidden)["diagnosis"]["evidence"]["host_location"],
              (rootfs() / inside.substr(1)).string());
    expect_passed(env, {"in-venvs"});
    const Json* part = check_of(env, "not-in-opt");
    ASSERT_NE(part, nullptr) << text;
    EXPECT_EQ((*part)["status"], "fail") << common::json_text(*part);
    const Json* required = check_of(env, "in-usr");
    ASSERT_NE(required, nullptr) << text;
    EXPECT_EQ((*required)["status"], "fail") << common::json_text(*required);
    EXPECT_EQ((*required)["diagnosis"]["cause"], "outside_required_paths");
    EXPECT_EQ((*required)["diagnosis"]["summary"],
              "torch resolves from " + inside + ", outside [\"/usr/lib/python3/\"]");
  }
}

// A container whose image is not the contract's drifts the host, named by
// the container, with the image it runs.
TEST_F(ContainerTarget, AContainersImageIsJudgedAgainstTheTargets) {
  std::string file = testing::read_text(containers_file());
  file.replace(file.find("runtime:2.2.0"), 13, "runtime:2.1.2");
  std::ofstream(containers_file()) << file;
  const auto report = scan("  - {id: vendor-import, kind: imports, modules: [vendorlib]}\n");
  const std::string text = common::json_text(report);
  EXPECT_EQ(report["verdict"], "drift") << text;
  EXPECT_EQ(report["envs"][0]["verdict"], "compliant") << text;
  ASSERT_EQ(report["containers"].size(), 1U) << text;
  const auto& check = report["containers"][0]["targets"][0]["checks"][0];
  EXPECT_EQ(check["status"], "fail") << text;
  EXPECT_NE(check["diagnosis"]["summary"].get<std::string>().find("container trainer runs"),
            std::string::npos)
      << text;
  bool named = false;
  for (const auto& reason : report["reasons"]) {
    named = named || reason.get<std::string>().find("container trainer") != std::string::npos;
  }
  EXPECT_TRUE(named) << text;
}

// A hang inside the container is diagnosed in the interpreter that hangs,
// not in the prefix (bwrap) that started it.
TEST_F(ContainerTarget, AHangInsideIsDiagnosedInTheInterpreter) {
  const auto report = scan("  - {id: spin, kind: smoke, code: 'while True: pass', timeout: 2s}\n");
  const std::string text = common::json_text(report);
  ASSERT_EQ(report["envs"].size(), 1U) << text;
  const Json* check = check_of(report["envs"][0], "spin");
  ASSERT_NE(check, nullptr) << text;
  EXPECT_EQ((*check)["diagnosis"]["cause"], "hang") << common::json_text(*check);
  const std::string summary = (*check)["diagnosis"]["summary"].get<std::string>();
  // A busy thread of the interpreter itself (bwrap's would be asleep in wait).
  EXPECT_NE(summary.find("running at ~"), std::string::npos) << summary;
  EXPECT_NE(summary.find("(python3"), std::string::npos) << summary;
  EXPECT_NE(common::json_text(*check).find("while True"), std::string::npos)
      << "the Python stack of the spinning interpreter: " << common::json_text(*check);
}

// A container's /tmp that stops answering after its envs were read (the
// fuse-overlayfs of a rootless container, stopped by the user who runs it):
// the probe of its env blocks in the agent's own reads of its scratch
// directory. It is left behind at the env's deadline and named, and the scan
// ends; the next one does not start a second probe behind it.
TEST_F(ContainerTarget, AProbeWhoseTmpStopsAnsweringIsLeftBehindAndTheScanEnds) {
  if (const auto why = testing::HungMount::unavailable(); !why.empty()) {
    GTEST_SKIP() << "skipped: " << why;
  }
  auto loaded = daemon::load_contract(
      contract("  - {id: vendor-import, kind: imports, modules: [vendorlib]}\n"));
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  discovery::ContainerConfig container;
  container.name = "trainer";
  container.exec = discovery::ContainerConfig::Exec::argv;
  container.argv = testing::bubblewrap_prefix(rootfs());
  container.rootfs = rootfs();
  container.env_roots = {"/opt/venvs"};
  container.image = "registry.example/vendor/runtime:2.2.0";
  daemon::ScanSettings settings;
  settings.facts.discovery.roots = {m_dir.path() / "host"};
  settings.facts.containers = {container};
  settings.facts.reading_deadline = std::chrono::seconds(5);  // activation through bwrap
  settings.env_deadline = std::chrono::seconds(2);
  // Mounted once the envs are read and activated, before any is probed.
  std::unique_ptr<testing::HungMount> mount;
  daemon::ScanObserver observer;
  observer.started = [&](std::size_t) {
    mount = std::make_unique<testing::HungMount>(rootfs() / "tmp", 0);
  };
  daemon::Scanner scanner;
  auto start = std::chrono::steady_clock::now();
  // On a thread: were the probe not bounded, the scan would block for good.
  auto scanning = std::async(std::launch::async,
                             [&] { return scanner.scan(*loaded.value(), settings, observer); });
  if (scanning.wait_for(std::chrono::seconds(90)) != std::future_status::ready) {
    mount->release();  // unblocks it, so that the test can end
    FAIL() << "the scan did not end while a container's /tmp did not answer";
  }
  const auto report = scanning.get();
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_NE(mount, nullptr);
  // The env's 2 s, then 5 s to read results and 30 s to sample and kill what it ran.
  EXPECT_LT(waited, std::chrono::seconds(55));
  const std::string text = common::json_text(report::to_json(report));
  ASSERT_EQ(report.envs.size(), 1U) << text;
  EXPECT_EQ(report.envs[0].verdict, contracts::EnvVerdict::error) << text;
  EXPECT_NE(
      text.find("the probe of " + (rootfs() / "opt/venvs/app").string() + " did not finish within"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("its reader is blocked"), std::string::npos) << text;
  // Where it blocked: the container's /tmp, as the agent names it.
  EXPECT_NE(text.find("in the kernel (openat2, asleep in "), std::string::npos) << text;
  EXPECT_NE(text.find("reading " + (rootfs() / "tmp").string()), std::string::npos) << text;
  EXPECT_EQ(process::blocked_readers(), 1U);

  // The next scan names the same stall at once instead of starting again.
  observer.started = nullptr;
  start = std::chrono::steady_clock::now();
  const auto again = scanner.scan(*loaded.value(), settings);
  EXPECT_EQ(process::blocked_readers(), 1U);
  const std::string again_text = common::json_text(report::to_json(again));
  EXPECT_NE(again_text.find("is still blocked"), std::string::npos) << again_text;
  mount->release();
  EXPECT_TRUE(process::wait_for_blocked_readers(std::chrono::seconds(20)));
}

// The official python images' layout: a venv's bin/python links to
// /usr/local/bin/python3, which only the container has. It is the
// container's interpreter, not a dangling link.
TEST_F(ContainerTarget, AnInterpreterLinkResolvesInTheContainer) {
  if (fs::exists("/usr/local/bin/python3")) {
    GTEST_SKIP() << "this host has /usr/local/bin/python3: the link would resolve here too";
  }
  fs::create_directories(rootfs() / "usr/local/bin");
  fs::create_symlink("/usr/bin/python3", rootfs() / "usr/local/bin/python3");
  const auto app = rootfs() / "opt/venvs/app";
  fs::remove(app / "bin/python");
  fs::create_symlink("/usr/local/bin/python3", app / "bin/python");
  const auto report = scan("  - {id: stdlib, kind: imports, modules: [json]}\n");
  const std::string text = common::json_text(report);
  ASSERT_EQ(report["envs"].size(), 1U) << text;
  EXPECT_EQ(report["envs"][0]["verdict"], "compliant") << text;
  EXPECT_EQ(check_of(report["envs"][0], "env:interpreter"), nullptr) << text;
}

// A package's directory linked from elsewhere in the image (a vendor
// triton's backends under /opt): read in the rootfs, whether it is a
// container's or a --root tree, never in the host's /opt of that name
// (which the host here does not have).
TEST_F(ContainerTarget, ALinkInTheImageIsFollowedInsideItsRootfs) {
  const fs::path vendor = "/opt/envcontract-test-vendor/triton-backends";
  if (fs::exists(vendor)) {
    GTEST_SKIP() << "this host has " << vendor << ": the link would resolve here too";
  }
  const auto site = testing::system_venv_site(rootfs() / "opt/venvs/app");
  fs::create_directories(site / "triton");
  std::ofstream(site / "triton/__init__.py") << "__version__ = '3.6.0'\n";
  fs::create_directories(site / "triton-3.6.0.dist-info");
  std::ofstream(site / "triton-3.6.0.dist-info/METADATA")
      << "Metadata-Version: 2.1\nName: triton\nVersion: 3.6.0\n";
  std::ofstream(site / "triton-3.6.0.dist-info/RECORD") << "triton/__init__.py,,\n";
  fs::create_directories(rootfs() / vendor.relative_path() / "xpu");
  fs::create_directory_symlink(vendor, site / "triton/backends");
  run_command({"/bin/chmod", "-R", "a+rX", rootfs().string()});
  for (const bool as_container : {true, false}) {
    SCOPED_TRACE(as_container ? "container target" : "--root");
    const auto report = scan("  - {id: triton, kind: triton, backends: [xpu]}\n", as_container);
    const std::string text = common::json_text(report);
    ASSERT_EQ(report["envs"].size(), 1U) << text;
    expect_passed(report["envs"][0], {"triton"});
  }
}

// The package itself linked from elsewhere in the image (a vendor's torch
// under /opt): found and its version read inside the rootfs, never through
// the host's /opt.
TEST_F(ContainerTarget, APackageLinkedIntoPlaceInTheImageIsFoundThere) {
  const fs::path vendor = "/opt/envcontract-test-vendor/torch";
  if (fs::exists(vendor)) {
    GTEST_SKIP() << "this host has " << vendor << ": the link would resolve here too";
  }
  const auto site = testing::system_venv_site(rootfs() / "opt/venvs/app");
  fs::create_directories((rootfs() / vendor.relative_path()).parent_path());
  fs::copy(site / "torch", rootfs() / vendor.relative_path(), fs::copy_options::recursive);
  fs::remove_all(site / "torch");
  fs::create_directory_symlink(vendor, site / "torch");
  run_command({"/bin/chmod", "-R", "a+rX", rootfs().string()});
  for (const bool as_container : {true, false}) {
    SCOPED_TRACE(as_container ? "container target" : "--root");
    const auto report =
        scan("  - {id: torch, kind: torch, base: \"2.10.0\", cuda: none}\n", as_container);
    const std::string text = common::json_text(report);
    ASSERT_EQ(report["envs"].size(), 1U) << text;
    const Json* torch = check_of(report["envs"][0], "torch");
    ASSERT_NE(torch, nullptr) << text;
    // Where its interpreter finds it (torch.__file__ keeps the link's path).
    EXPECT_EQ(
        (*torch)["actual"]["location"],
        "/opt/venvs/app/lib/python" + testing::system_python_version() + "/site-packages/torch")
        << common::json_text(*torch);
    expect_passed(report["envs"][0], {"torch"});
  }
}

// conda's list of envs in a container names the container's own paths, even
// where the host has an env at the same path.
TEST_F(ContainerTarget, AContainersListOfEnvsNamesItsOwnPaths) {
  const auto same_path = m_dir.path() / "host/venvs/shared";
  testing::make_system_venv(same_path);
  testing::make_system_venv(rootfs() / same_path.relative_path());
  m_dir.write("rootfs/root/.conda/environments.txt", same_path.string() + "\n");
  run_command({"/bin/chmod", "-R", "a+rX", m_dir.path().string()});
  const auto report = scan("  - {id: stdlib, kind: imports, modules: [json]}\n");
  const std::string text = common::json_text(report);
  std::set<std::string> prefixes;
  for (const auto& env : report["envs"]) {
    prefixes.insert(env["prefix"].get<std::string>() + " " + env["name"].get<std::string>());
  }
  EXPECT_TRUE(
      prefixes.contains((rootfs() / same_path.relative_path()).string() + " trainer:shared"))
      << text;
  EXPECT_TRUE(prefixes.contains(same_path.string() + " shared")) << "the host's own: " << text;
}

// An env inside the container's root but outside its env_roots, found by a
// walk of the host (a root above the rootfs): the container's, and run there.
TEST_F(ContainerTarget, AnEnvOfTheContainerFoundFromTheHostRunsInIt) {
  testing::make_system_venv(rootfs() / "srv/app2");
  run_command({"/bin/chmod", "-R", "a+rX", rootfs().string()});
  const auto result = run_command(
      {k_binary, "scan", "--contract",
       contract("  - {id: stdlib, kind: imports, modules: [json]}\n").string(), "--format", "json",
       "--root", m_dir.path().string(), "--containers", containers_file().string()});
  const auto report = Json::parse(result.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << result.out << result.err;
  const std::string text = common::json_text(report);
  const Json* found = nullptr;
  for (const auto& env : report["envs"]) {
    if (env["prefix"] == (rootfs() / "srv/app2").string()) {
      found = &env;
    }
  }
  ASSERT_NE(found, nullptr) << text;
  EXPECT_EQ((*found)["container"], "trainer") << text;
  EXPECT_EQ((*found)["name"], "trainer:app2") << text;
  EXPECT_EQ((*found)["verdict"], "compliant") << text;
}

// A container that cannot be entered (gone, as one that stopped mid-scan
// is): its env is reported with why, never compliant, and the host's own
// env beside it is judged as usual.
TEST_F(ContainerTarget, AContainerThatCannotBeEnteredIsReportedAndTheRestJudged) {
  std::string file = testing::read_text(containers_file());
  const std::string bind = "\"--ro-bind\",\"" + rootfs().string() + "\"";
  file.replace(file.find(bind), bind.size(),
               "\"--ro-bind\",\"" + (m_dir.path() / "gone").string() + "\"");
  // And one its runtime cannot show (no daemon here, or no such container).
  file += "  - {name: ghost, exec: docker, container: envcontract-no-such-container}\n";
  std::ofstream(containers_file()) << file;
  testing::make_system_venv(m_dir.path() / "host/venvs/local");
  run_command({"/bin/chmod", "-R", "a+rX", (m_dir.path() / "host").string()});
  const auto report = scan(
      "  - {id: stdlib, kind: imports, modules: [json]}\n"
      "envs: {require: all}\n");
  const std::string text = common::json_text(report);
  ASSERT_EQ(report["envs"].size(), 2U) << text;
  for (const auto& env : report["envs"]) {
    if (env["container"] == "trainer") {
      EXPECT_NE(env["verdict"], "compliant") << text;
      EXPECT_NE(common::json_text(env).find("Can't find source path"), std::string::npos)
          << "bwrap's own words say why: " << common::json_text(env);
    } else {
      EXPECT_EQ(env["name"], "local");
      EXPECT_EQ(env["verdict"], "compliant") << common::json_text(env);
    }
  }
  EXPECT_NE(report["verdict"], "compliant") << text;
  ASSERT_EQ(report["containers"].size(), 2U) << text;
  const auto& ghost = report["containers"][1];
  EXPECT_EQ(ghost["name"], "ghost");
  ASSERT_TRUE(ghost["problem"].is_string()) << text;
  bool named = false;
  for (const auto& reason : report["reasons"]) {
    named = named || reason.get<std::string>().starts_with("container ghost: ");
  }
  EXPECT_TRUE(named) << "a container that could not be scanned keeps the host from complying: "
                     << text;
}

// A container whose configured rootfs is gone holds no env that was seen:
// the host is not compliant on zero envs, and the scan says why (exit 2).
TEST_F(ContainerTarget, AContainerWhoseRootfsIsGoneMakesTheHostAnError) {
  const fs::path gone = m_dir.path() / "no-such-rootfs";
  std::ofstream(containers_file()) << "containers:\n  - name: phantom\n    exec: "
                                   << common::json_text(Json(testing::bubblewrap_prefix(gone)))
                                   << "\n    rootfs: " << gone.string()
                                   << "\n    image: registry.example/vendor/runtime:2.2.0\n";
  fs::create_directories(m_dir.path() / "host");
  const auto contract_file = contract("  - {id: stdlib, kind: imports, modules: [json]}\n");
  const auto result = run_command({k_binary, "scan", "--contract", contract_file.string(),
                                   "--format", "json", "--root", (m_dir.path() / "host").string(),
                                   "--containers", containers_file().string()});
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  const auto report = Json::parse(result.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << result.out << result.err;
  EXPECT_EQ(report["verdict"], "error") << result.out;
  const std::string expected = "container phantom: its root filesystem " + gone.string() +
                               " cannot be read: No such file or directory (check 'rootfs' in "
                               "its configuration)";
  bool named = false;
  for (const auto& reason : report["reasons"]) {
    named = named || reason == expected;
  }
  EXPECT_TRUE(named) << result.out;
  ASSERT_EQ(report["containers"].size(), 1U) << result.out;
  EXPECT_EQ(report["containers"][0]["problem"],
            expected.substr(std::string("container phantom: ").size()));
}

// A running container entered with nsenter, as the preset does for a
// container's process. Its /tmp is a tmpfs over the rootfs's own: the
// probes' private directories are made where its processes see /tmp
// (/proc/PID/root/tmp), and none is left there.
// A container's env belongs to a uid the image chose, which on the host may
// be a real user's. A link in the container to that user's private file must
// not bring the file into the report: the container's files are read on the
// host as a uid of nobody's, not as the host user who has the env's uid.
TEST_F(ContainerTarget, ALinkToAHostUsersPrivateFileIsNotReadAsThatUser) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root: the agent's change of user is what is tested";
  }
  const auto alice = testing::ensure_user("ectest-alice");
  ASSERT_TRUE(alice) << "useradd failed";
  const fs::path private_dir = m_dir.path() / "alice-private";
  fs::create_directories(private_dir);
  // What a reader of torch's version file would show, were it read.
  std::ofstream(private_dir / "notes.py") << "__version__ = '9.9.9+alice.secret.7f3a'\n";
  testing::chown_tree(private_dir, alice->uid, alice->gid);
  fs::permissions(private_dir, fs::perms::owner_all, fs::perm_options::replace);
  fs::permissions(private_dir / "notes.py", fs::perms::owner_read | fs::perms::owner_write,
                  fs::perm_options::replace);
  const fs::path app = rootfs() / "opt/venvs/app";
  const fs::path version = testing::system_venv_site(app) / "torch/version.py";
  fs::remove(version);
  fs::create_symlink(private_dir / "notes.py", version);
  testing::chown_tree(app, alice->uid, alice->gid);

  const auto report = scan("  - {id: torch, kind: torch, base: \"2.10.0\"}\n");
  const std::string text = common::json_text(report);
  EXPECT_EQ(text.find("alice.secret.7f3a"), std::string::npos)
      << "alice's private file reached the report: " << text;
  ASSERT_EQ(report["envs"].size(), 1U) << text;
  // Its code still runs as its owner inside the container.
  EXPECT_EQ(report["envs"][0]["run_as"]["uid"], alice->uid) << text;
}

TEST_F(ContainerTarget, NsenterRunsTheProbesInARunningContainer) {
  const std::string nsenter = discovery::find_system_command("nsenter");
  if (nsenter.empty()) {
    GTEST_SKIP() << "nsenter is not installed (util-linux)";
  }
  std::ofstream(rootfs() / "tmp/rootfs-marker") << "the rootfs's own /tmp\n";
  testing::RunningContainer container(rootfs(), m_dir.path() / "bwrap.log");
  ASSERT_GT(container.pid(), 0) << testing::read_text(m_dir.path() / "bwrap.log");
  write_nsenter_config(container.pid());
  const auto report = scan(
      "  - {id: vendor-import, kind: imports, modules: [vendorlib]}\n"
      "  - {id: inside-lib, kind: libraries, present: [libinside.so]}\n"
      "  - {id: own-tmp, kind: command, run: 'test -e /tmp/rootfs-marker || echo tmpfs',\n"
      "     expect_output: tmpfs}\n");
  const std::string text = common::json_text(report);
  ASSERT_EQ(report["envs"].size(), 1U) << text;
  const auto& env = report["envs"][0];
  EXPECT_EQ(env["container"], "trainer") << text;
  EXPECT_EQ(env["verdict"], "compliant") << text;
  expect_passed(env, {"vendor-import", "inside-lib", "own-tmp"});
  EXPECT_EQ(report["containers"][0]["exec"][0], nsenter) << text;
  std::vector<std::string> left;
  const fs::path inside_tmp = "/proc/" + std::to_string(container.pid()) + "/root/tmp";
  for (const auto& entry : fs::directory_iterator(inside_tmp)) {
    left.push_back(entry.path().filename().string());
  }
  EXPECT_TRUE(left.empty()) << "left in the container's /tmp: " << left.front();
}

// Under the shipped unit the agent has no CAP_SYS_ADMIN (nor the right to
// call setns): a container to nsenter is reported with why and what to do,
// before any probe tries, and the host does not comply.
TEST_F(ContainerTarget, WithoutTheRightToEnterNamespacesNsenterIsReportedWithWhy) {
  const std::string nsenter = discovery::find_system_command("nsenter");
  if (nsenter.empty() || !fs::exists("/usr/bin/setpriv")) {
    GTEST_SKIP() << "nsenter or setpriv is not installed (util-linux)";
  }
  testing::RunningContainer container(rootfs(), m_dir.path() / "bwrap.log");
  ASSERT_GT(container.pid(), 0) << testing::read_text(m_dir.path() / "bwrap.log");
  write_nsenter_config(container.pid());
  const auto report =
      scan("  - {id: stdlib, kind: imports, modules: [json]}\n", true,
           {"/usr/bin/setpriv", "--inh-caps=-sys_admin", "--bounding-set=-sys_admin", "--"});
  const std::string text = common::json_text(report);
  ASSERT_EQ(report["containers"].size(), 1U) << text;
  const auto& problem = report["containers"][0]["problem"];
  ASSERT_TRUE(problem.is_string()) << text;
  EXPECT_NE(problem.get<std::string>().find("may not enter its namespaces"), std::string::npos)
      << text;
  EXPECT_NE(problem.get<std::string>().find("docs/containers.md"), std::string::npos) << text;
  EXPECT_NE(report["verdict"], "compliant") << text;
}

// The agent with a container target in its config: the dashboard shows the
// container and which envs are its own, /metrics labels them, and fleetctl's
// table names them.
TEST_F(ContainerTarget, TheAgentShowsItOnTheDashboardInMetricsAndInFleetctl) {
  std::string config = testing::read_text(containers_file());
  m_dir.write("agent.yaml", config);
  testing::AgentProcess agent(
      m_dir.path(),
      {"--config", (m_dir.path() / "agent.yaml").string(), "--contract",
       contract("  - {id: vendor-import, kind: imports, modules: [vendorlib]}\n").string(),
       "--root", (m_dir.path() / "host").string(), "--database",
       (m_dir.path() / "agent.db").string()});
  const auto report = testing::wait_for_report(agent);
  ASSERT_EQ(report["containers"].size(), 1U) << common::json_text(report);
  EXPECT_EQ(report["envs"][0]["container"], "trainer");

  const std::string metrics = testing::http_get(agent.url(), "/metrics").body;
  for (
      const char* series :
      {R"(envcontract_container_up{container="trainer"} 1)",
       R"(envcontract_container_info{container="trainer",image="registry.example/vendor/runtime:2.2.0"} 1)",
       R"(envcontract_env_compliant{container="trainer",env="trainer:app"} 1)"}) {
    EXPECT_NE(metrics.find(series), std::string::npos) << series << "\n" << metrics;
  }

  const auto table = run_command(
      {FLEETCTL_PATH, "check", "127.0.0.1:" + std::to_string(agent.port()), "--format", "table"});
  EXPECT_EQ(table.exit_code, 0) << table.out << table.err;
  EXPECT_NE(table.out.find("container trainer: image registry.example/vendor/runtime:2.2.0; "
                           "envs: trainer:app"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("\ntrainer:app "), std::string::npos) << table.out;

  if (!fs::exists("/usr/bin/chromium")) {
    GTEST_SKIP() << "chromium is not installed (scripts/test installs it): dashboard not tested";
  }
  const std::string dom = testing::rendered_dom(agent.url() + "/", m_dir.path() / "profile");
  EXPECT_NE(dom.find(R"(<tr data-container="trainer"><td>trainer</td>)"), std::string::npos) << dom;
  EXPECT_NE(dom.find("<span class=\"container-of\">in trainer</span>"), std::string::npos) << dom;
  testing::keep_screenshot(agent.url() + "/", m_dir.path() / "shot", "dashboard-container");
}

}  // namespace
}  // namespace envcontract
