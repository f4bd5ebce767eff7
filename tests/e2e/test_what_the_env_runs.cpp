// Facts are what the env's interpreter really does, and a failure is the
// env's own: the Python an env runs is its interpreter's (not what its
// records say), a check needs what its own kind and code need (never torch
// for a contract that does not name it), and an import that ends its own
// process is named as the env's doing. Real envs around the demo host's
// interpreter, scanned by the real binary.
#include <filesystem>
#include <fstream>

#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/compile.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/run_command.hpp"

namespace envcontract {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers
namespace fs = std::filesystem;

// The demo host's Python 3.10 (its real file, named python3.10).
fs::path demo_python() {
  return fs::canonical(demo_host() / "venvs/xpu210v/bin/python");
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A CPU torch 2.10.0's files (and its dist-info) in `site`.
void install_torch_files(const fs::path& site) {
  write_file(site / "torch/__init__.py", "");
  write_file(site / "torch/version.py", "__version__ = '2.10.0+cpu'\ncuda = None\n");
  write_file(site / "torch-2.10.0+cpu.dist-info/METADATA",
             "Metadata-Version: 2.1\nName: torch\nVersion: 2.10.0+cpu\n");
}

// A venv of the demo's Python 3.10, its own site dir empty.
fs::path make_venv(const fs::path& prefix) {
  fs::create_directories(prefix / "bin");
  fs::create_directories(prefix / "lib/python3.10/site-packages");
  write_file(prefix / "pyvenv.cfg",
             "home = " + demo_python().parent_path().string() + "\nversion = 3.10.13\n");
  fs::create_symlink(demo_python(), prefix / "bin/python");
  return prefix;
}

TEST(WhatTheEnvRuns, AHalfFinishedUpgradeIsJudgedOnThePythonTheEnvRuns) {
  TempDir dir;
  // conda-meta says 3.11.7 and the packages went to lib/python3.11, but
  // bin/python still leads to a Python 3.10.
  const auto prefix = dir.path() / "half-upgraded";
  fs::create_directories(prefix / "bin");
  write_file(prefix / "conda-meta/python-3.11.7-h955ad1f_0.json", "{}\n");
  fs::create_symlink("python3.10", prefix / "bin/python");
  fs::create_symlink(demo_python(), prefix / "bin/python3.10");
  fs::create_directories(prefix / "lib/python3.10/site-packages");
  install_torch_files(prefix / "lib/python3.11/site-packages");
  // conda recorded numpy for that Python too: its record is no numpy the
  // interpreter can import.
  write_file(prefix / "conda-meta/numpy-1.26.4-py311h64a7726_0.json",
             R"({"name": "numpy", "version": "1.26.4"})");
  write_file(prefix / "lib/python3.11/site-packages/numpy/__init__.py", "");
  const auto contract = dir.write("upgrade.yaml", R"(schema_version: 1
name: upgrade
checks:
  - id: torch-cpu
    kind: torch
    base: "2.10.0"
    cuda: none
  - id: python
    kind: python
    version: ">=3.11"
  - id: numpy
    kind: distributions
    pins:
      numpy: ">=1.26"
)");
  const auto env = scan_prefix(contract, prefix, 1);
  EXPECT_EQ(env["verdict"], "drift");
  const std::string conflict =
      "conda-meta/python-3.11.7-h955ad1f_0.json says Python 3.11.7, "
      "but bin/python -> python3.10 -> " +
      demo_python().string() + " is Python 3.10";
  const auto canonical = fs::canonical(prefix).string();
  const auto* torch = find_check(env, "torch-cpu");
  ASSERT_NE(torch, nullptr);
  EXPECT_EQ((*torch)["status"], "fail");
  EXPECT_EQ((*torch)["diagnosis"]["cause"], "wrong_python");
  EXPECT_EQ((*torch)["diagnosis"]["summary"],
            "torch is not installed for the env's Python 3.10: " + canonical +
                "/lib/python3.11/site-packages holds torch 2.10.0+cpu for Python 3.11, which "
                "its interpreter never reads (" +
                conflict + ")");
  EXPECT_EQ((*torch)["diagnosis"]["evidence"]["other_python"], "3.11");
  const std::string remedy = (*torch)["diagnosis"]["remedy"];
  EXPECT_NE(remedy.find(canonical + "/bin/python -m pip install torch"), std::string::npos)
      << remedy;
  const auto* python = find_check(env, "python");
  ASSERT_NE(python, nullptr);
  EXPECT_EQ((*python)["diagnosis"]["summary"],
            "Python 3.10.13, the contract wants >=3.11 (" + conflict + ")");
  const auto* numpy = find_check(env, "numpy");
  ASSERT_NE(numpy, nullptr);
  EXPECT_EQ((*numpy)["status"], "fail");
  EXPECT_EQ((*numpy)["diagnosis"]["cause"], "wrong_python");
}

// A contract of files and records alone still starts the interpreter once:
// an env whose interpreter cannot start is never compliant on its files.
TEST(WhatTheEnvRuns, AnInterpreterThatCannotStartIsNeverCompliantOnFilesAlone) {
  TempDir dir;
  const auto prefix = make_venv(dir.path() / "cannot-start");
  // A copy of the interpreter away from the libpython it finds through
  // $ORIGIN/../lib.
  fs::remove(prefix / "bin/python");
  fs::copy_file(demo_python(), prefix / "bin/python");
  const auto contract = dir.write("python.yaml", R"(schema_version: 1
name: python-only
checks:
  - id: python
    kind: python
    version: ">=3.8"
)");
  const auto env = scan_prefix(contract, prefix, 1);
  EXPECT_EQ(env["verdict"], "drift");
  const auto* broken = find_check(env, "env:interpreter");
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ((*broken)["diagnosis"]["cause"], "broken_env");
  const std::string summary = (*broken)["diagnosis"]["summary"];
  EXPECT_NE(summary.find("cannot start: "), std::string::npos) << summary;
}

// A bin/python that is not the Python its name and records say: the files
// were read for another Python's site dirs, so nothing read from them is
// held to be true once the interpreter said its own version.
TEST(WhatTheEnvRuns, AnInterpreterThatIsNotThePythonItsNameSaysIsNotJudgedOnFiles) {
  TempDir dir;
  const auto prefix = dir.path() / "renamed";
  fs::create_directories(prefix / "bin");
  // A copy of the 3.10 binary named python3.11 (as venv --copies makes
  // them), with the libpython it finds through $ORIGIN/../lib.
  fs::copy_file(demo_python(), prefix / "bin/python3.11");
  fs::create_symlink("python3.11", prefix / "bin/python");
  const auto libpython = fs::canonical(demo_python().parent_path() / "../lib/libpython3.10.so.1.0");
  fs::create_directories(prefix / "lib");
  fs::create_symlink(libpython, prefix / "lib/libpython3.10.so.1.0");
  fs::create_directories(prefix / "lib/python3.11/site-packages");
  write_file(prefix / "pyvenv.cfg",
             "home = " + demo_python().parent_path().string() + "\nversion = 3.11.7\n");
  const auto contract = dir.write("imports.yaml",
                                  "schema_version: 1\nname: imports\nchecks:\n  - id: stdlib\n"
                                  "    kind: imports\n    modules: [json]\n");
  const auto env = scan_prefix(contract, prefix, 2);
  EXPECT_EQ(env["verdict"], "error");
  const auto* disagreement = find_check(env, "env:search-path");
  ASSERT_NE(disagreement, nullptr);
  EXPECT_EQ((*disagreement)["status"], "error");
  EXPECT_EQ((*disagreement)["diagnosis"]["cause"], "facts_disagree");
  const std::string summary = (*disagreement)["diagnosis"]["summary"];
  EXPECT_TRUE(summary.starts_with("the interpreter is Python 3.10.")) << summary;
  EXPECT_NE(summary.find("; the env's files were read for Python 3.11"), std::string::npos)
      << summary;
}

// A contract whose only check is a snippet needs nothing but the snippet's
// own imports: an env without torch complies.
TEST(WhatTheEnvRuns, AContractThatNeverNamesTorchDoesNotNeedIt) {
  TempDir dir;
  const auto prefix = make_venv(dir.path() / "no-torch");
  const auto contract = dir.write("smoke.yaml", R"(schema_version: 1
name: arithmetic
checks:
  - id: answer
    kind: smoke
    code: print(6 * 7)
    expect_output: "42"
)");
  const auto env = scan_prefix(contract, prefix, 0);
  EXPECT_EQ(env["verdict"], "compliant");
  EXPECT_FALSE(has_check(env, "import:torch"));
  const auto* answer = find_check(env, "answer");
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ((*answer)["status"], "pass");
}

// A snippet that imports torch still needs it: where torch does not import,
// it is not run, and points at the failure.
TEST(WhatTheEnvRuns, ASnippetThatImportsTorchStillWaitsForIt) {
  TempDir dir;
  const auto prefix = make_venv(dir.path() / "no-torch");
  const auto contract = dir.write("smoke.yaml", R"(schema_version: 1
name: first-op
checks:
  - id: first-op
    kind: smoke
    code: |
      import os, torch
      print(torch.ones(1))
)");
  const auto env = scan_prefix(contract, prefix, 1);
  EXPECT_EQ(env["verdict"], "drift");
  const auto* own = find_check(env, "import:torch");
  ASSERT_NE(own, nullptr);
  EXPECT_EQ((*own)["status"], "fail");
  const auto* first_op = find_check(env, "first-op");
  ASSERT_NE(first_op, nullptr);
  EXPECT_EQ((*first_op)["status"], "skip");
  EXPECT_EQ((*first_op)["diagnosis"]["evidence"]["blocked_by"], "import:torch");
}

// A vendor library whose constructor calls _exit(0) while its module is
// imported: the env ended its own process. The report names the import
// that was running, and the remedy is the env's, not "scan again".
TEST(WhatTheEnvRuns, AnImportThatEndsTheProcessIsTheEnvsOwnFault) {
  TempDir dir;
  const auto prefix = make_venv(dir.path() / "quits");
  const auto site = prefix / "lib/python3.10/site-packages";
  build_shared_library(site / "vendorplug/libquits.so",
                       "#include <unistd.h>\n"
                       "__attribute__((constructor)) static void quit(void) { _exit(0); }\n");
  write_file(site / "vendorplug/__init__.py",
             "import ctypes, os\n"
             "ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'libquits.so'))\n"
             "def count():\n    return 1\n");
  const auto contract = dir.write("devices.yaml", R"(schema_version: 1
name: devices
checks:
  - id: vendor-devices
    kind: devices
    imports: [vendorplug]
    expression: vendorplug.count()
    count: ">= 1"
)");
  const auto env = scan_prefix(contract, prefix, 1);
  EXPECT_EQ(env["verdict"], "drift");
  EXPECT_FALSE(has_check(env, "import:torch"));
  const auto* devices = find_check(env, "vendor-devices");
  ASSERT_NE(devices, nullptr);
  EXPECT_EQ((*devices)["status"], "fail");
  EXPECT_EQ((*devices)["diagnosis"]["cause"], "ended_process");
  EXPECT_EQ((*devices)["diagnosis"]["summary"],
            "import vendorplug ended the process (exit 0) before it returned");
  EXPECT_EQ((*devices)["diagnosis"]["evidence"]["step"], "import vendorplug");
  EXPECT_EQ((*devices)["diagnosis"]["evidence"]["process"], "exit 0");
  const std::string remedy = (*devices)["diagnosis"]["remedy"];
  EXPECT_NE(remedy.find("python -X importtime -c 'import vendorplug'"), std::string::npos)
      << remedy;
  // The plan sends a person to the env's code, not the agent to scan again.
  const auto plan = run_command({ENVCONTRACTD_PATH, "plan", "--contract", contract.string(),
                                 "--prefix", prefix.string(), "-o", "json"});
  EXPECT_EQ(plan.out.find("a scan that completes"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("ends the process"), std::string::npos) << plan.out;
}

// A torch that imports but tells no version: the report says what is
// missing, not "torch , the contract wants 2.10.0".
TEST(WhatTheEnvRuns, ATorchWithoutAVersionIsNamedAsSuch) {
  TempDir dir;
  const auto prefix = make_venv(dir.path() / "no-version");
  write_file(prefix / "lib/python3.10/site-packages/torch/__init__.py", "");
  const auto contract = dir.write("torch.yaml", R"(schema_version: 1
name: torch
checks:
  - id: torch-cpu
    kind: torch
    base: "2.10.0"
)");
  const auto env = scan_prefix(contract, prefix, 1);
  const auto* torch = find_check(env, "torch-cpu");
  ASSERT_NE(torch, nullptr);
  EXPECT_EQ((*torch)["status"], "fail");
  EXPECT_EQ((*torch)["diagnosis"]["summary"],
            "torch, as import torch shows it, has no __version__, the contract wants 2.10.0");
  const std::string remedy = (*torch)["diagnosis"]["remedy"];
  EXPECT_TRUE(remedy.starts_with("reinstall torch 2.10.0")) << remedy;
}

}  // namespace
}  // namespace envcontract
