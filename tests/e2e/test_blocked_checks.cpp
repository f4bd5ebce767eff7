// Never compliant without evidence: an env whose torch does not import has
// its device and smoke checks skipped, and the skip must point at a failing
// check of the same env. With no `imports` check in the contract, the env
// gets its own, `import:torch`, carrying the crash or the import error. Real
// venvs around a real interpreter, scanned by the real binary.
#include <unistd.h>

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

// The contract of the incident: torch's identity (static, passes), a
// device count and a first device op.
const char* const k_contract = R"(schema_version: 1
name: blocked
envs:
  require: any
checks:
  - id: torch-cpu
    kind: torch
    base: "2.10.0"
    cuda: none
  - id: devices
    kind: devices
    expression: torch.get_num_threads()
    count: ">= 1"
  - id: first-op
    kind: smoke
    code: |
      import torch
      print(torch.ones(1))
)";

// A venv whose torch/__init__.py is `init`, with a CPU torch's version.py.
fs::path make_env(const fs::path& root, const std::string& name, const std::string& init) {
  const auto python = fs::canonical(demo_host() / "venvs/xpu210v/bin/python");
  const std::string version = python.filename().string().substr(6);  // 3.10
  const auto prefix = root / name;
  const auto site = prefix / "lib" / ("python" + version) / "site-packages";
  fs::create_directories(prefix / "bin");
  fs::create_directories(site / "torch");
  std::ofstream(prefix / "pyvenv.cfg")
      << "home = " << python.parent_path().string() << "\nversion = " << version << "\n";
  fs::create_symlink(python, prefix / "bin/python");
  std::ofstream(site / "torch/__init__.py") << init;
  std::ofstream(site / "torch/version.py") << "__version__ = '2.10.0+cpu'\ncuda = None\n";
  return prefix;
}

Json scan_one(const TempDir& dir, const fs::path& prefix) {
  return scan_prefix(dir.write("blocked.yaml", k_contract), prefix, 1);
}

void expect_blocked_by_torch(const Json& env) {
  for (const char* id : {"devices", "first-op"}) {
    const auto* check = find_check(env, id);
    ASSERT_NE(check, nullptr);
    EXPECT_EQ((*check)["status"], "skip") << id;
    EXPECT_EQ((*check)["diagnosis"]["cause"], "blocked") << id;
    EXPECT_EQ((*check)["diagnosis"]["evidence"]["blocked_by"], "import:torch") << id;
  }
  // The static identity check passes: files say a CPU torch 2.10.0.
  EXPECT_EQ((*find_check(env, "torch-cpu"))["status"], "pass");
}

TEST(BlockedChecks, ATorchThatCrashesOnImportMakesTheEnvDriftWithTheCrash) {
  TempDir dir;
  const auto prefix = make_env(dir.path(), "crashes", "import ctypes\nctypes.string_at(0)\n");
  const auto env = scan_one(dir, prefix);
  EXPECT_EQ(env["verdict"], "drift");
  const auto* own = find_check(env, "import:torch");
  ASSERT_NE(own, nullptr);
  EXPECT_EQ((*own)["status"], "fail");
  EXPECT_EQ((*own)["diagnosis"]["cause"], "crash");
  const std::string summary = (*own)["diagnosis"]["summary"];
  EXPECT_NE(summary.find("import torch killed by SIGSEGV"), std::string::npos) << summary;
  EXPECT_TRUE((*own)["diagnosis"]["evidence"].contains("stderr_tail"));
  expect_blocked_by_torch(env);
}

TEST(BlockedChecks, ATorchThatFailsToImportNamesTheMissingLibrary) {
  TempDir dir;
  const auto prefix =
      make_env(dir.path(), "import-error",
               "raise ImportError('libbkcl.so: cannot open shared object file: No such file or "
               "directory')\n");
  const auto env = scan_one(dir, prefix);
  EXPECT_EQ(env["verdict"], "drift");
  const auto* own = find_check(env, "import:torch");
  ASSERT_NE(own, nullptr);
  EXPECT_EQ((*own)["status"], "fail");
  EXPECT_EQ((*own)["diagnosis"]["cause"], "missing_library");
  EXPECT_EQ((*own)["diagnosis"]["summary"], "import torch fails: libbkcl.so cannot be found");
  expect_blocked_by_torch(env);
}

TEST(BlockedChecks, AFailingImportsCheckOfTheContractIsTheBlocker) {
  TempDir dir;
  const auto prefix = make_env(dir.path(), "crashes", "raise RuntimeError('no')\n");
  std::string contract = k_contract;
  contract += "  - id: import-order\n    kind: imports\n    modules: [torch]\n";
  const auto file = dir.write("blocked.yaml", contract);
  const auto result = run_command({ENVCONTRACTD_PATH, "scan", "--contract", file.string(),
                                   "--prefix", prefix.string(), "--format", "json"});
  const auto env = Json::parse(result.out)["envs"][0];
  EXPECT_EQ(env["verdict"], "drift");
  for (const auto& check : env["checks"]) {
    EXPECT_NE(check["id"], "import:torch") << "the contract's own imports check says it";
  }
  for (const char* id : {"devices", "first-op"}) {
    const auto* check = find_check(env, id);
    ASSERT_NE(check, nullptr);
    EXPECT_EQ((*check)["diagnosis"]["evidence"]["blocked_by"], "import-order") << id;
  }
}

// A check is `blocked` only when its own run failed with the blocker's
// error. A torch that imports but lacks `ones` makes the first-op snippet
// fail on its own (AttributeError): that failure is the check's result, not
// hidden behind flag_gems' unrelated missing library.
TEST(BlockedChecks, ACheckThatFailsOnItsOwnKeepsItsFailure) {
  TempDir dir;
  const auto prefix = make_env(dir.path(), "own-failure", "");
  const auto site = prefix / "lib/python3.10/site-packages";
  fs::create_directories(site / "flag_gems");
  std::ofstream(site / "flag_gems/__init__.py")
      << "raise ImportError('libbkcl.so: cannot open shared object file: No such file or "
         "directory')\n";
  const std::string contract = R"(schema_version: 1
name: own-failure
envs:
  require: any
checks:
  - id: import-order
    kind: imports
    modules: [torch, flag_gems]
  - id: gems-op
    kind: smoke
    code: |
      import flag_gems
  - id: first-op
    kind: smoke
    code: |
      import torch
      print(torch.ones(1))
)";
  const auto env = scan_prefix(dir.write("own.yaml", contract), prefix, 1);
  EXPECT_EQ(env["verdict"], "drift");
  const auto* import_order = find_check(env, "import-order");
  ASSERT_NE(import_order, nullptr);
  EXPECT_EQ((*import_order)["diagnosis"]["cause"], "missing_library");

  const auto* gems = find_check(env, "gems-op");
  ASSERT_NE(gems, nullptr);
  EXPECT_EQ((*gems)["status"], "skip") << "it only repeats import-order's failure";
  EXPECT_EQ((*gems)["diagnosis"]["evidence"]["blocked_by"], "import-order");

  const auto* first_op = find_check(env, "first-op");
  ASSERT_NE(first_op, nullptr);
  EXPECT_EQ((*first_op)["status"], "fail") << *first_op;
  EXPECT_EQ((*first_op)["diagnosis"]["cause"], "smoke_failed");
  const std::string summary = (*first_op)["diagnosis"]["summary"];
  EXPECT_NE(summary.find("AttributeError"), std::string::npos) << summary;
  EXPECT_NE(summary.find("has no attribute 'ones'"), std::string::npos) << summary;
}

}  // namespace
}  // namespace envcontract

namespace envcontract {
namespace {

// Broken envs are named: the interpreter gone (a dangling link) or unable to
// start (its libpython missing), one failing check says which path and what
// is wrong, and every other check points at it.
void expect_broken(const Json& env, const std::string& summary_part) {
  EXPECT_EQ(env["verdict"], "drift");
  ASSERT_FALSE(env["checks"].empty());
  const auto& first = env["checks"][0];
  EXPECT_EQ(first["id"], "env:interpreter");
  EXPECT_EQ(first["status"], "fail");
  EXPECT_EQ(first["diagnosis"]["cause"], "broken_env");
  const std::string summary = first["diagnosis"]["summary"];
  EXPECT_NE(summary.find(summary_part), std::string::npos) << summary;
  for (const auto& check : env["checks"]) {
    if (check["id"] != "env:interpreter") {
      EXPECT_EQ(check["status"], "skip") << check["id"];
      EXPECT_EQ(check["diagnosis"]["evidence"]["blocked_by"], "env:interpreter") << check["id"];
    }
  }
}

TEST(BrokenEnvs, ADanglingInterpreterIsNamed) {
  TempDir dir;
  const auto prefix = make_env(dir.path(), "dangling", "");
  fs::remove(prefix / "bin/python");
  fs::create_symlink("python3.10", prefix / "bin/python");
  fs::create_symlink("/opt/gone/bin/python3.10", prefix / "bin/python3.10");
  // The whole chain, to the path that is missing.
  expect_broken(scan_one(dir, prefix),
                "bin/python is a dangling symlink: bin/python -> python3.10 -> "
                "/opt/gone/bin/python3.10, and /opt/gone/bin/python3.10 does not exist: its "
                "interpreter was removed or moved");
}

// Discovery's other problems (a version it cannot tell) leave the
// interpreter usable: they do not make the env broken.
TEST(BrokenEnvs, AnUnknownVersionIsNotABrokenInterpreter) {
  TempDir dir;
  const auto prefix = make_env(dir.path(), "no-version", "");
  std::ofstream(prefix / "pyvenv.cfg") << "home = /nowhere\n";
  fs::rename(prefix / "lib/python3.10", prefix / "lib/python3.10t");
  const auto env = scan_one(dir, prefix);
  for (const auto& check : env["checks"]) {
    EXPECT_NE(check["id"], "env:interpreter") << check;
  }
}

// An advisory imports check cannot stand for torch's failure: the env still
// gets its own required import:torch and drifts.
TEST(BlockedChecks, AnAdvisoryImportsCheckDoesNotHideTheFailure) {
  TempDir dir;
  const auto prefix = make_env(dir.path(), "crashes", "raise RuntimeError('no')\n");
  std::string contract = k_contract;
  contract +=
      "  - id: import-order\n    kind: imports\n    severity: advisory\n"
      "    modules: [torch]\n";
  const auto file = dir.write("blocked.yaml", contract);
  const auto result = run_command({ENVCONTRACTD_PATH, "scan", "--contract", file.string(),
                                   "--prefix", prefix.string(), "--format", "json"});
  const auto env = Json::parse(result.out)["envs"][0];
  EXPECT_EQ(env["verdict"], "drift");
  EXPECT_NE(find_check(env, "import:torch"), nullptr);
}

// What exec itself says of the interpreter: a file the kernel does not run
// (ENOEXEC), or one whose `#!` interpreter is gone (ENOENT), is a broken
// env, told by exec's error and not by the words of a message.
TEST(BrokenEnvs, AnInterpreterExecRefusesIsNamed) {
  TempDir dir;
  const auto garbage = make_env(dir.path(), "garbage", "");
  fs::remove(garbage / "bin/python");
  std::ofstream(garbage / "bin/python") << "\x01\x02 not a program the kernel runs\n";
  fs::permissions(garbage / "bin/python", fs::perms(0755));
  expect_broken(scan_one(dir, garbage), "Exec format error");

  const auto gone = make_env(dir.path(), "gone-interpreter", "");
  fs::remove(gone / "bin/python");
  std::ofstream(gone / "bin/python") << "#!/opt/gone/bin/python3.10\n";
  fs::permissions(gone / "bin/python", fs::perms(0755));
  expect_broken(scan_one(dir, gone), "No such file or directory");
}

TEST(BrokenEnvs, AnInterpreterThatCannotStartIsNamed) {
  TempDir dir;
  const auto prefix = make_env(dir.path(), "no-libpython", "");
  // The demo host's interpreter finds libpython through $ORIGIN/../lib: a
  // copy in a prefix without it cannot start.
  const auto python = fs::canonical(demo_host() / "venvs/xpu210v/bin/python");
  fs::remove(prefix / "bin/python");
  fs::remove(prefix / "pyvenv.cfg");
  fs::copy_file(python, prefix / "bin/python");
  expect_broken(scan_one(dir, prefix), "cannot start: ");
  const auto env = scan_one(dir, prefix);
  EXPECT_NE(env["checks"][0]["diagnosis"]["summary"].get<std::string>().find("libpython"),
            std::string::npos)
      << env["checks"][0]["diagnosis"]["summary"];
}

}  // namespace
}  // namespace envcontract

namespace envcontract {
namespace {

// The loader names one missing symbol at a time; the report names them all,
// so that the second is not found only after the first is fixed.
TEST(LinkageDiagnosis, EveryUnresolvedSymbolOfTheLibraryIsNamed) {
  TempDir dir;
  const auto prefix = make_env(dir.path(), "two-missing", "");
  const auto site = prefix / "lib/python3.10/site-packages";
  build_shared_library(site / "twomiss.cpython-310-x86_64-linux-gnu.so",
                       "extern int missing_one(void);\nextern int missing_two(void);\n"
                       "int call_them(void) { return missing_one() + missing_two(); }\n");
  const auto contract =
      dir.write("imports.yaml",
                "schema_version: 1\nname: imports\nchecks:\n  - id: import-twomiss\n"
                "    kind: imports\n    modules: [twomiss]\n");
  const auto result = run_command({ENVCONTRACTD_PATH, "scan", "--contract", contract.string(),
                                   "--prefix", prefix.string(), "--format", "json"});
  const auto report = Json::parse(result.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << result.err;
  const auto* check = find_check(report["envs"][0], "import-twomiss");
  ASSERT_NE(check, nullptr);
  EXPECT_EQ((*check)["status"], "fail");
  EXPECT_EQ((*check)["diagnosis"]["cause"], "undefined_symbol");
  const std::string summary = (*check)["diagnosis"]["summary"];
  EXPECT_NE(summary.find(", which nothing it loads defines; "
                         "twomiss.cpython-310-x86_64-linux-gnu.so also needs 1 more that "
                         "nothing defines: missing_"),
            std::string::npos)
      << summary;
  // Both names appear: the one the loader gave and the one it did not.
  EXPECT_NE(summary.find("missing_one"), std::string::npos) << summary;
  EXPECT_NE(summary.find("missing_two"), std::string::npos) << summary;
  EXPECT_EQ((*check)["diagnosis"]["evidence"]["also_unresolved"].size(), 1U);
}

// A C function its runtime moved to a newer version node: the loader says
// "symbol cfunc version RT_1 not defined in file libruntime.so with link
// time reference"; the report names the version each side has.
TEST(LinkageDiagnosis, ACSymbolUnderAnotherVersionIsANearMiss) {
  TempDir dir;
  const auto prefix = make_env(dir.path(), "versioned", "");
  const auto site = prefix / "lib/python3.10/site-packages";
  const std::string runtime = "int cfunc(void) { return 1; }\nint other(void) { return 2; }\n";
  build_shared_library(
      dir.path() / "old/libruntime.so", runtime,
      {"-Wl,-soname,libruntime.so",
       "-Wl,--version-script=" +
           dir.write("old.map", "RT_1 { global: cfunc; other; local: *; };\n").string()});
  build_shared_library(site / "verext.cpython-310-x86_64-linux-gnu.so",
                       "extern int cfunc(void);\nint call(void) { return cfunc(); }\n",
                       {"-L" + (dir.path() / "old").string(), "-lruntime", "-Wl,-rpath,$ORIGIN"});
  build_shared_library(
      site / "libruntime.so", runtime,
      {"-Wl,-soname,libruntime.so",
       "-Wl,--version-script=" +
           dir.write("new.map",
                     "RT_1 { global: other; local: *; };\nRT_2 { global: cfunc; } RT_1;\n")
               .string()});
  const auto contract =
      dir.write("imports.yaml",
                "schema_version: 1\nname: imports\nchecks:\n  - id: import-verext\n"
                "    kind: imports\n    modules: [verext]\n");
  const auto env = scan_prefix(contract, prefix, 1);
  const auto* check = find_check(env, "import-verext");
  ASSERT_NE(check, nullptr);
  EXPECT_EQ((*check)["diagnosis"]["cause"], "abi_signature_mismatch") << *check;
  const std::string summary = (*check)["diagnosis"]["summary"];
  EXPECT_NE(summary.find("verext.cpython-310-x86_64-linux-gnu.so wants cfunc but libruntime.so "
                         "defines cfunc (version: RT_1 (wanted) vs RT_2"),
            std::string::npos)
      << summary;
  // The other library is a runtime, not torch: what they must agree on is it.
  EXPECT_EQ((*check)["diagnosis"]["remedy"],
            "use a build of verext.cpython-310-x86_64-linux-gnu.so made against this "
            "libruntime.so, or the libruntime.so it was built against: they disagree on cfunc");
}

// A prefix its user cannot read is named as such: its own interpreter could
// not see torch either, so "not installed" would mislead. Nothing of it is
// known, so it is not judged (error), never called drift.
TEST(BrokenEnvs, APrefixItsUserCannotReadIsNamedAndNotJudged) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root: the env is root's, read as a uid of its own";
  }
  TempDir dir;
  const auto prefix = make_env(dir.path(), "private", "");
  fs::permissions(prefix, fs::perms::owner_all, fs::perm_options::replace);
  const auto contract = dir.write("blocked.yaml", k_contract);
  // Exit 2: the host cannot be judged, rather than 1, drift.
  const auto env = scan_prefix(contract, prefix, 2);
  EXPECT_EQ(env["verdict"], "error");
  const auto* broken = find_check(env, "env:interpreter");
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ((*broken)["status"], "error");
  EXPECT_EQ((*broken)["diagnosis"]["cause"], "unreadable_env");
  const std::string uid = std::to_string(env["run_as"]["uid"].get<unsigned>());
  EXPECT_EQ((*broken)["diagnosis"]["summary"],
            fs::canonical(prefix).string() + " cannot be read by uid " + uid +
                ", the user its code runs as (permission denied): nothing of it is known, and "
                "it is not judged");
  // Root's own env: the choices are its permissions or whom it runs as.
  const std::string remedy = (*broken)["diagnosis"]["remedy"];
  EXPECT_NE(remedy.find("run_root_envs_as"), std::string::npos) << remedy;
  const auto* torch = find_check(env, "torch-cpu");
  ASSERT_NE(torch, nullptr);
  EXPECT_EQ((*torch)["status"], "skip");
  EXPECT_EQ((*torch)["diagnosis"]["evidence"]["blocked_by"], "env:interpreter");
}

}  // namespace
}  // namespace envcontract

namespace envcontract {
namespace {

// An env's error text reaches the table as text: an escape sequence in it
// never reaches the operator's terminal as one.
TEST(BlockedChecks, EscapeSequencesInEnvOutputAreShownNotSent) {
  TempDir dir;
  const auto prefix =
      make_env(dir.path(), "escapes", "raise ImportError('\\x1b[2J\\x1b[31mwiped\\rover')\n");
  const auto file = dir.write("blocked.yaml", k_contract);
  const auto table = run_command(
      {ENVCONTRACTD_PATH, "scan", "--contract", file.string(), "--prefix", prefix.string(), "-v"});
  EXPECT_EQ(table.exit_code, 1) << table.err;
  EXPECT_EQ(table.out.find('\x1b'), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find('\r'), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("\\x1b[2J\\x1b[31mwiped\\x0dover"), std::string::npos) << table.out;
}

}  // namespace
}  // namespace envcontract
