// Purpose-built envs whose code aborts, segfaults, hangs, forks a stubborn
// grandchild, floods its output, corrupts the probe's report or exits early.
// Each probe ends in bounded time with the right classification, and no
// process of the probe survives it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "discovery/discovery.hpp"
#include "probes/dynamic_probe.hpp"
#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/probe_plans.hpp"
#include "tests/support/processes.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::probes {
namespace {

using testing::torch_contract_plan;

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* k_modules[][2] = {
    {"mb_abort", "import os\nos.abort()\n"},
    {"mb_segv", "import ctypes\nctypes.string_at(0)\n"},
    {"mb_sleep", "import time\ntime.sleep(3600)\n"},
    {"mb_fork",
     "import os, signal, time\n"
     "pid = os.fork()\n"
     "if pid == 0:\n"
     "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
     "    time.sleep(3600)\n"
     "    os._exit(0)\n"
     "with open(os.path.join(os.environ['ENVCONTRACT_TEST_OUT'], 'mb_fork.pid'), 'w') as f:\n"
     "    f.write(str(pid))\n"},
    {"mb_flood", "import sys\nsys.stdout.write('x' * 100_000_000)\nsys.stdout.flush()\n"},
    {"mb_badjson", "import sys\nwith open(sys.argv[2], 'a') as f:\n    f.write('{not json\\n')\n"},
    {"mb_exit0", "import os\nos._exit(0)\n"},
    {"mb_typed",
     "import sys\nwith open(sys.argv[2], 'a') as f:\n"
     "    f.write('{\"type\": \"import\", \"module\": 5, \"ok\": false, \"error\": [1]}\\n')\n"
     "    f.write('{\"type\": \"devices\"}\\n')\n"},
};

// A venv made by hand (pyvenv.cfg and a link to a real interpreter), holding
// the misbehaving modules.
class MisbehavingEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path real_python = fs::canonical(testing::demo_host() / "venvs/xpu210v/bin/python");
    const std::string version = real_python.filename().string().substr(6);  // python3.10
    m_prefix = m_dir.path() / "misbehaving";
    fs::create_directories(m_prefix / "bin");
    m_site = m_prefix / "lib" / ("python" + version) / "site-packages";
    fs::create_directories(m_site);
    std::ofstream(m_prefix / "pyvenv.cfg")
        << "home = " << real_python.parent_path().string() << "\nversion = " << version << "\n";
    fs::create_symlink(real_python, m_prefix / "bin" / "python");
    for (const auto& [name, source] : k_modules) {
      std::ofstream(m_site / (std::string(name) + ".py")) << source;
    }
    m_env = discovery::describe_prefix(m_prefix).value();
    // Where the modules may write: the probe runs as an unprivileged user,
    // who cannot write the root-owned env.
    m_out = m_dir.path() / "out";
    fs::create_directories(m_out);
    fs::permissions(m_out, fs::perms::all);
    m_marker = "envcontract-test-" + std::to_string(std::random_device{}());
  }

  StageResult run_imports(const std::string& module, std::chrono::milliseconds timeout = 20s) {
    ProbePlan plan = torch_contract_plan();
    plan.imports = {module};
    plan.imports_timeout = timeout;
    plan.compare_bare = false;
    for (auto& stage : run_plan(plan).stages) {
      if (stage.stage == "imports") {
        return stage;
      }
    }
    ADD_FAILURE() << "no imports stage";
    return {};
  }

  // `loading_changed`: activation also sets LD_LIBRARY_PATH, as a vendor's
  // activate.d does, so that identity and imports run bare too.
  DynamicFacts run_plan(const ProbePlan& plan, bool loading_changed = false) {
    ActivatedEnvironment activation;
    activation.bare = bare_environment(m_env);
    activation.bare["ENVCONTRACT_TEST_MARKER"] = m_marker;
    activation.bare["ENVCONTRACT_TEST_OUT"] = m_out.string();
    activation.activated = activation.bare;
    if (loading_changed) {
      activation.activated["LD_LIBRARY_PATH"] = (m_dir.path() / "vendor-lib").string();
      // What the modules write, activated, apart from what they write bare.
      fs::create_directories(activated_out());
      fs::permissions(activated_out(), fs::perms::all);
      activation.activated["ENVCONTRACT_TEST_OUT"] = activated_out().string();
    }
    const auto started = std::chrono::steady_clock::now();
    auto facts = probe_env(m_env, activation, plan);
    m_elapsed = std::chrono::steady_clock::now() - started;
    return facts;
  }

  // A torch whose import takes `seconds`, and a plan that imports it, then
  // mb_sleep (which never ends), in one interpreter.
  ProbePlan slow_torch_then_a_hang(int seconds, std::chrono::milliseconds imports_timeout) {
    fs::create_directories(m_site / "torch");
    std::ofstream(m_site / "torch/__init__.py")
        << "import time\ntime.sleep(" << seconds << ")\n__version__ = '2.10.0'\n";
    ProbePlan plan = torch_contract_plan();
    plan.identity_timeout = 20s;
    plan.imports = {"torch", "mb_sleep"};
    plan.imports_timeout = imports_timeout;
    plan.compare_bare = false;
    return plan;
  }

  fs::path activated_out() const { return m_out / "activated"; }

  // Runs `plan` on `lane_count` lanes of a scan of its own; every stage
  // passes, `stage_count` of them, and every lane is given back.
  DynamicFacts run_on_lanes(ProbePlan plan, int lane_count, std::size_t stage_count,
                            bool loading_changed = false) {
    const auto lanes = std::make_shared<ProbeLanes>(lane_count, 1);
    plan.lanes = lanes;
    DynamicFacts facts;
    {
      const ProbeLanes::EnvTurn turn(*lanes);  // as the scan gives the env its turn
      facts = run_plan(plan, loading_changed);
    }
    EXPECT_EQ(facts.stages.size(), stage_count);
    for (const auto& stage : facts.stages) {
      EXPECT_EQ(stage.status, StageStatus::ok) << stage.stage << ": " << stage.summary;
    }
    EXPECT_EQ(lanes->free(), lane_count);
    return facts;
  }

  // How many interpreters imported `module`, a pid module (write_pid_module).
  std::size_t times_imported(const std::string& module) const {
    const std::string pids = testing::read_text(m_out / (module + ".pid"));
    return static_cast<std::size_t>(std::count(pids.begin(), pids.end(), '\n'));
  }

  std::vector<pid_t> survivors() const {
    return testing::processes_with_environment("ENVCONTRACT_TEST_MARKER=" + m_marker);
  }

  void expect_nothing_survives() {
    // A killed orphan may take a moment to leave the process table.
    for (int attempt = 0; attempt < 50 && !survivors().empty(); ++attempt) {
      std::this_thread::sleep_for(20ms);
    }
    EXPECT_TRUE(survivors().empty());
  }

  // A module at `file` that appends its interpreter's pid to OUT/NAME.pid,
  // a line each time it is imported.
  static void write_pid_module(const fs::path& file, const std::string& more = "") {
    fs::create_directories(file.parent_path());
    const std::string name = file.filename() == "__init__.py"
                                 ? file.parent_path().filename().string()
                                 : file.stem().string();
    std::ofstream(file) << "import os\n"
                           "with open(os.path.join(os.environ['ENVCONTRACT_TEST_OUT'], '"
                        << name << ".pid'), 'a') as f:\n    f.write(str(os.getpid()) + '\\n')\n"
                        << more;
  }

  testing::TempDir m_dir;
  fs::path m_prefix;
  fs::path m_site;
  fs::path m_out;
  PythonEnv m_env;
  std::string m_marker;
  std::chrono::steady_clock::duration m_elapsed{};
};

const StageResult* find_stage(const DynamicFacts& facts, const std::string& name) {
  for (const auto& stage : facts.stages) {
    if (stage.stage == name) {
      return &stage;
    }
  }
  ADD_FAILURE() << "no stage " << name;
  return nullptr;
}

// The env's deadline bounds its stages together: the hanging import gets
// what is left of it, and the command after it does not start.
TEST_F(MisbehavingEnv, TheEnvDeadlineBoundsAllItsStages) {
  ProbePlan plan = torch_contract_plan();
  plan.imports = {"mb_sleep"};
  plan.imports_timeout = 60s;
  plan.commands.push_back({"after", "echo never", {}, 60s, false, {}, "", "", false});
  plan.compare_bare = false;
  plan.env_deadline = 2s;
  const auto facts = run_plan(plan);
  EXPECT_LT(m_elapsed, 10s);
  const auto* imports = find_stage(facts, "imports");
  ASSERT_NE(imports, nullptr);
  // Stopped, not hung: it ran out of the env's time before its own 60 s.
  EXPECT_EQ(imports->status, StageStatus::stopped) << imports->summary;
  EXPECT_NE(imports->summary.find("(what was left of the env's 2 s deadline, env_deadline in the "
                                  "agent's config), before its own time-out"),
            std::string::npos)
      << imports->summary;
  // What it was doing is kept: the stacks show why it was slow.
  ASSERT_TRUE(imports->hang.has_value());
  EXPECT_NE(imports->hang->python_stacks.find("mb_sleep.py"), std::string::npos);
  const auto* command = find_stage(facts, "command:after");
  ASSERT_NE(command, nullptr);
  EXPECT_EQ(command->status, StageStatus::stopped);
  EXPECT_EQ(command->summary,
            "not run: the env's deadline of 2 s passed before this stage (env_deadline in the "
            "agent's config)");
  expect_nothing_survives();
}

// The env's deadline runs out in the middle of a chain: the stage it ran
// out in is stopped (its own time-out never came), not hung, and says so.
TEST_F(MisbehavingEnv, TheEnvDeadlineRunningOutMidChainStopsTheStageItRanOutIn) {
  auto plan = slow_torch_then_a_hang(1, 60s);
  plan.env_deadline = 3s;
  const auto facts = run_plan(plan);
  EXPECT_LT(m_elapsed, 10s);
  const auto* identity = find_stage(facts, "identity");
  const auto* imports = find_stage(facts, "imports");
  ASSERT_TRUE(identity != nullptr && imports != nullptr);
  EXPECT_EQ(identity->status, StageStatus::ok) << identity->summary;
  EXPECT_EQ(identity->process,
            "finished in a process forked from the interpreter after import torch");
  EXPECT_EQ(imports->status, StageStatus::stopped) << imports->summary;
  EXPECT_TRUE(imports->summary.starts_with("import mb_sleep was stopped after "))
      << imports->summary;
  EXPECT_NE(imports->summary.find("before its own time-out"), std::string::npos)
      << imports->summary;
  expect_nothing_survives();
}

// Env code that writes into the probe's progress file (it runs in the same
// interpreter, as the same user): a line that is not the next stage's name
// moves nothing, so the stage in force keeps its deadline, and the stage
// after it, whose start the agent never saw, is stopped at that deadline
// rather than called a hang of its own. (Env code that wrote the next
// stage's name early could move the clock, as it could forge the records:
// time-outs stop hangs; they do not guard against env code that lies.)
TEST_F(MisbehavingEnv, AProgressLineThatIsNotTheNextStagesNameBuysNoTime) {
  fs::create_directories(m_site / "torch");
  std::ofstream(m_site / "torch/__init__.py")
      << "import sys\nwith open(sys.argv[4], 'a') as f:\n    f.write('imports-later\\n')\n"
         "__version__ = '2.10.0'\n";
  ProbePlan plan = torch_contract_plan();
  plan.identity_timeout = 2s;
  plan.imports = {"torch", "mb_sleep"};
  plan.imports_timeout = 60s;
  plan.compare_bare = false;
  const auto facts = run_plan(plan);
  EXPECT_LT(m_elapsed, 10s);  // identity's 2 s, not the imports stage's 60
  const auto* imports = find_stage(facts, "imports");
  ASSERT_NE(imports, nullptr);
  EXPECT_EQ(imports->status, StageStatus::stopped) << imports->summary;
  EXPECT_TRUE(imports->summary.starts_with(
      "import mb_sleep was stopped at the time-out of the stage before it (2000 ms): the agent "
      "did not see it start in the probe's progress file"))
      << imports->summary;
  expect_nothing_survives();
}

// The bare comparison runs identity and imports in one interpreter too; when
// the env's deadline runs out in its second stage, the first still compares.
TEST_F(MisbehavingEnv, ABareComparisonCutShortKeepsItsFinishedStages) {
  write_pid_module(m_site / "torch/__init__.py", "__version__ = '2.10.0'\n");
  // Hangs only without activation.
  std::ofstream(m_site / "mb_bare_sleep.py")
      << "import os, time\nif 'MB_ACTIVATED' not in os.environ:\n    time.sleep(3600)\n";
  ProbePlan plan = torch_contract_plan();
  plan.imports = {"torch", "mb_bare_sleep"};
  plan.imports_timeout = 60s;
  plan.env_deadline = 4s;
  ActivatedEnvironment activation;
  activation.bare = bare_environment(m_env);
  activation.bare["ENVCONTRACT_TEST_MARKER"] = m_marker;
  activation.bare["ENVCONTRACT_TEST_OUT"] = m_out.string();
  activation.activated = activation.bare;
  activation.activated["MB_ACTIVATED"] = "1";  // more than PATH: the comparison is made
  const auto facts = probe_env(m_env, activation, plan);
  std::map<std::string, const StageResult*> bare;
  std::map<std::string, const StageResult*> activated;
  for (const auto& stage : facts.stages) {
    (stage.activation == Activation::bare ? bare : activated)[stage.stage] = &stage;
  }
  ASSERT_TRUE(activated.contains("identity") && activated.contains("imports"));
  EXPECT_EQ(activated["imports"]->status, StageStatus::ok) << activated["imports"]->summary;
  ASSERT_TRUE(bare.contains("identity")) << "the bare identity finished and is kept";
  EXPECT_EQ(bare["identity"]->status, StageStatus::ok) << bare["identity"]->summary;
  EXPECT_EQ(bare["identity"]->process,
            "finished in a process forked from the interpreter after import torch");
  // Cut short by the env's deadline: not compared, so no artifact is invented.
  EXPECT_FALSE(bare.contains("imports"));
  EXPECT_TRUE(facts.artifacts.empty());
  // One interpreter for each chain: torch imported twice, once activated, once bare.
  EXPECT_EQ(times_imported("torch"), 2U);
  expect_nothing_survives();
}

// As the CI runner: after a fail-fast entry of a config fails, no later
// entry of that config runs; other configs' entries and plain commands do.
TEST_F(MisbehavingEnv, AFailedFailFastEntryStopsTheLaterOnesOfItsConfig) {
  ProbePlan plan = torch_contract_plan();
  plan.commands.push_back({"first", "echo one", {}, 60s, true, {}, "", "a.yml", true});
  plan.commands.push_back({"gate", "exit 3", {}, 60s, true, {}, "", "a.yml", true});
  plan.commands.push_back({"later", "echo never", {}, 60s, true, {}, "", "a.yml", false});
  plan.commands.push_back({"other", "echo other", {}, 60s, true, {}, "", "b.yml", true});
  plan.commands.push_back({"plain", "echo plain", {}, 60s, false, {}, "", "", false});
  plan.compare_bare = false;
  const auto facts = run_plan(plan);
  for (const char* ran : {"command:first", "command:gate", "command:other", "command:plain"}) {
    const auto* stage = find_stage(facts, ran);
    ASSERT_NE(stage, nullptr) << ran;
    EXPECT_EQ(stage->status, StageStatus::ok) << ran << ": " << stage->summary;
  }
  const auto* later = find_stage(facts, "command:later");
  ASSERT_NE(later, nullptr);
  EXPECT_EQ(later->status, StageStatus::stopped);
  EXPECT_EQ(later->summary,
            "not run: integration test gate failed first, and its failure_policy is fail-fast "
            "(the CI runner runs nothing after it)");
  ASSERT_EQ(later->records.size(), 1U);
  EXPECT_EQ(later->records.front().blocked_by, "gate");
  expect_nothing_survives();
}

// The agent's shutdown (or the scan's watchdog) stops a probe at once.
TEST_F(MisbehavingEnv, ACancelledProbeStopsAndSaysWhy) {
  process::Cancellation cancellation;
  ProbePlan plan = torch_contract_plan();
  plan.imports = {"mb_sleep"};
  plan.imports_timeout = 60s;
  plan.commands.push_back({"after", "echo never", {}, 60s, false, {}, "", "", false});
  plan.compare_bare = false;
  plan.cancellation = &cancellation;
  std::thread canceller([&] {
    std::this_thread::sleep_for(1s);
    cancellation.cancel("the agent is stopping");
  });
  const auto facts = run_plan(plan);
  canceller.join();
  EXPECT_LT(m_elapsed, 10s);
  const auto* imports = find_stage(facts, "imports");
  ASSERT_NE(imports, nullptr);
  EXPECT_EQ(imports->status, StageStatus::stopped);
  EXPECT_NE(imports->summary.find(": the agent is stopping"), std::string::npos)
      << imports->summary;
  const auto* command = find_stage(facts, "command:after");
  ASSERT_NE(command, nullptr);
  EXPECT_EQ(command->summary, "not run: the agent is stopping");
  expect_nothing_survives();
}

// Where the imports start with torch, identity and imports run in one
// interpreter: torch is imported once, and the imports stage reports
// identity's import of it as its own first (the one it would have made).
TEST_F(MisbehavingEnv, IdentityAndImportsStartingWithTorchShareOneInterpreter) {
  write_pid_module(m_site / "torch/__init__.py", "import warnings\nwarnings.warn('from torch')\n");
  write_pid_module(m_site / "mb_pid.py", "import time\ntime.sleep(0.3)\n");
  ProbePlan plan = torch_contract_plan();
  plan.imports = {"torch", "mb_pid"};
  plan.compare_bare = false;
  const auto facts = run_plan(plan);
  const auto* identity = find_stage(facts, "identity");
  const auto* imports = find_stage(facts, "imports");
  ASSERT_TRUE(identity != nullptr && imports != nullptr);
  EXPECT_EQ(identity->status, StageStatus::ok) << identity->summary;
  EXPECT_EQ(imports->status, StageStatus::ok) << imports->summary;
  EXPECT_EQ(identity->process,
            "finished in a process forked from the interpreter after import torch");
  EXPECT_EQ(imports->process, "exit 0");
  // Each stage's own time: mb_pid's sleep is the imports stage's.
  EXPECT_GE(imports->duration, std::chrono::milliseconds(300));
  EXPECT_LT(identity->duration, imports->duration);
  // One line: torch was imported once, in the interpreter that imported mb_pid.
  EXPECT_EQ(testing::read_text(m_out / "torch.pid"), testing::read_text(m_out / "mb_pid.pid"));
  const auto first_import =
      std::find_if(imports->records.begin(), imports->records.end(),
                   [](const ProbeRecord& record) { return record.type == "import"; });
  ASSERT_NE(first_import, imports->records.end());
  const auto& torch_import = *first_import;
  EXPECT_EQ(torch_import.module, "torch");
  EXPECT_TRUE(torch_import.ok);
  ASSERT_EQ(torch_import.warnings.size(), 1U);
  EXPECT_EQ(torch_import.warnings.front(), "UserWarning: from torch");
  expect_nothing_survives();
}

// Imports that start with another module import it before torch, as the
// contract orders them: in an interpreter of their own.
TEST_F(MisbehavingEnv, ImportsThatDoNotStartWithTorchGetAnInterpreterOfTheirOwn) {
  write_pid_module(m_site / "torch/__init__.py");
  write_pid_module(
      m_site / "mb_first.py",
      "import sys\n"
      "with open(os.path.join(os.environ['ENVCONTRACT_TEST_OUT'], 'order'), 'w') as f:\n"
      "    f.write(str('torch' in sys.modules))\n");
  ProbePlan plan = torch_contract_plan();
  plan.imports = {"mb_first", "torch"};
  plan.compare_bare = false;
  const auto facts = run_plan(plan);
  const auto* imports = find_stage(facts, "imports");
  ASSERT_NE(imports, nullptr);
  EXPECT_EQ(imports->status, StageStatus::ok) << imports->summary;
  EXPECT_EQ(testing::read_text(m_out / "order"), "False") << "mb_first came after torch";
  // Identity's interpreter, then the imports stage's own, which imported mb_first.
  const std::string mb_first_pid = testing::read_text(m_out / "mb_first.pid");
  const std::string torch_pids = testing::read_text(m_out / "torch.pid");
  EXPECT_EQ(times_imported("torch"), 2U);
  EXPECT_TRUE(torch_pids.ends_with("\n" + mb_first_pid)) << torch_pids << " / " << mb_first_pid;
  expect_nothing_survives();
}

// Every stage whose first import is torch starts from one interpreter that
// imported it: identity, imports, a device count and two snippets, torch
// imported once. Each but the last runs in a process forked for it, so what
// one snippet changes is not there for the next, as in a fresh interpreter.
TEST_F(MisbehavingEnv, StagesThatImportTorchFirstShareOneImportOfIt) {
  write_pid_module(m_site / "torch/__init__.py",
                   "import time, warnings\ntime.sleep(0.3)\nwarnings.warn('from torch')\n"
                   "print('torch says hello')\n__version__ = '2.10.0'\n"
                   "def device_count():\n    return 3\n");
  write_pid_module(m_site / "mb_pid.py");
  ProbePlan plan = torch_contract_plan();
  plan.imports = {"torch", "mb_pid"};
  plan.devices.push_back({"count", "torch.device_count()", {"torch"}, 20s});
  plan.smokes.push_back({"changes", "import torch\ntorch.changed = True\nprint('changed')\n", 20s});
  plan.smokes.push_back({"sees", "import torch\nprint(getattr(torch, 'changed', False))\n", 20s});
  plan.compare_bare = false;
  const auto facts = run_plan(plan);
  ASSERT_EQ(facts.stages.size(), 5U);
  for (const auto& stage : facts.stages) {
    EXPECT_EQ(stage.status, StageStatus::ok) << stage.stage << ": " << stage.summary;
  }
  // One interpreter imported torch; the imports stage's process, forked from
  // it, imported mb_pid.
  const std::string torch_pid = testing::read_text(m_out / "torch.pid");
  EXPECT_EQ(std::count(torch_pid.begin(), torch_pid.end(), '\n'), 1) << torch_pid;
  EXPECT_NE(testing::read_text(m_out / "mb_pid.pid"), torch_pid);
  const std::string forked = "finished in a process forked from the interpreter after import torch";
  EXPECT_EQ(facts.stages[0].process, forked);  // identity
  EXPECT_EQ(facts.stages[1].process, forked);  // imports
  EXPECT_EQ(facts.stages[2].process, forked);  // devices:count
  EXPECT_EQ(facts.stages[3].process, forked);  // smoke:changes
  EXPECT_EQ(facts.stages[4].process, "exit 0");
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(facts.stages[i].end.how, envcontract::facts::ProcessEnd::How::in_fork) << i;
  }
  EXPECT_TRUE(facts.stages[4].end.exited_with(0));
  // Each reports the import it started from as its own first, as it would
  // have made it.
  for (const auto* name : {"identity", "imports", "devices:count"}) {
    const auto* stage = find_stage(facts, name);
    ASSERT_NE(stage, nullptr);
    const auto import = std::find_if(stage->records.begin(), stage->records.end(),
                                     [](const ProbeRecord& r) { return r.type == "import"; });
    ASSERT_NE(import, stage->records.end()) << name;
    EXPECT_EQ(import->module, "torch") << name;
    EXPECT_TRUE(import->ok) << name;
    EXPECT_EQ(import->warnings, std::vector<std::string>{"UserWarning: from torch"}) << name;
  }
  // Each stage's time includes the import it started from, as it would alone.
  for (const auto& stage : facts.stages) {
    EXPECT_GE(stage.duration, 300ms) << stage.stage;
  }
  EXPECT_EQ(facts.stages[2].records.back().value, 3);
  // What torch printed as it was imported is each snippet's own output, as
  // in a fresh interpreter; the first snippet's change is not the second's.
  EXPECT_EQ(facts.stages[3].records.back().output, "torch says hello\nchanged\n");
  EXPECT_EQ(facts.stages[4].records.back().output, "torch says hello\nFalse\n");
  expect_nothing_survives();
}

// A stage whose first import is another module makes it in an interpreter
// that imported nothing before it, as the contract orders it; stages that
// share that first import share an interpreter of their own.
TEST_F(MisbehavingEnv, StagesThatImportAnotherModuleFirstKeepTheirOrder) {
  write_pid_module(m_site / "torch/__init__.py", "__version__ = '2.10.0'\n");
  write_pid_module(m_site / "mb_first.py",
                   "import sys\n"
                   "before = 'torch' in sys.modules\n"
                   "def count():\n    return 2\n");
  ProbePlan plan = torch_contract_plan();
  plan.imports = {"torch"};
  plan.devices.push_back({"first", "mb_first.count()", {"mb_first", "torch"}, 20s});
  plan.smokes.push_back({"first", "import mb_first\nprint(mb_first.before)\n", 20s});
  plan.compare_bare = false;
  const auto facts = run_plan(plan);
  const auto* devices = find_stage(facts, "devices:first");
  const auto* smoke = find_stage(facts, "smoke:first");
  ASSERT_TRUE(devices != nullptr && smoke != nullptr);
  EXPECT_EQ(devices->status, StageStatus::ok) << devices->summary;
  EXPECT_EQ(devices->records.back().value, 2);
  EXPECT_EQ(devices->process,
            "finished in a process forked from the interpreter after import mb_first");
  EXPECT_EQ(smoke->status, StageStatus::ok) << smoke->summary;
  EXPECT_EQ(smoke->records.back().output, "False\n") << "mb_first came after torch";
  // Two interpreters imported torch (identity's chain, and the devices
  // stage's after mb_first); one imported mb_first.
  EXPECT_EQ(times_imported("torch"), 2U);
  EXPECT_EQ(times_imported("mb_first"), 1U);
  expect_nothing_survives();
}

// Two modules, each of which, as it is imported, says so in OUT/NAME.started
// and waits up to `wait_seconds` for the other to say the same (unless its
// interpreter imported the other already), noting in OUT/NAME.saw whether it
// did: proof that two interpreters imported them at the same time, with no
// clock in the test.
void write_rendezvous_modules(const fs::path& site, int wait_seconds) {
  const auto source = [&](const std::string& self, const std::string& other) {
    // An interpreter that imported the other before is no proof: it waits for nothing.
    return "import os, sys, time\n"
           "out = os.environ['ENVCONTRACT_TEST_OUT']\n"
           "open(os.path.join(out, '" +
           self +
           ".started'), 'a').close()\n"
           "for _ in range(0 if '" +
           other + "' in sys.modules else " + std::to_string(wait_seconds * 20) +
           "):\n"
           "    if os.path.exists(os.path.join(out, '" +
           other +
           ".started')):\n"
           "        open(os.path.join(out, '" +
           self +
           ".saw'), 'a').close()\n"
           "        break\n"
           "    time.sleep(0.05)\n";
  };
  fs::create_directories(site / "torch");
  std::ofstream(site / "torch/__init__.py")
      << source("torch", "mb_first") << "__version__ = '2.10.0'\n";
  std::ofstream(site / "mb_first.py") << source("mb_first", "torch") << "def count():\n"
                                      << "    return 2\n";
}

// Identity imports torch first; the imports and a device count import
// mb_first first: two chains, only the second of which uses a device.
ProbePlan identity_then_a_chain_of_mb_first() {
  ProbePlan plan = torch_contract_plan();
  plan.imports = {"mb_first"};
  plan.devices.push_back({"first", "mb_first.count()", {"mb_first"}, 30s});
  plan.compare_bare = false;
  return plan;
}

// With a lane to spare (a lone env on a host of several cores), the chain
// that imports mb_first first does not wait for identity's: its interpreter
// starts at once, beside it, and the lane is given back.
TEST_F(MisbehavingEnv, AChainWithAnotherFirstImportRunsBesideTheFirstOnASpareLane) {
  write_rendezvous_modules(m_site, 20);
  const auto facts = run_on_lanes(identity_then_a_chain_of_mb_first(), 2, 3);
  ASSERT_EQ(facts.stages.size(), 3U);
  EXPECT_EQ(facts.stages[0].stage, "identity");
  EXPECT_EQ(facts.stages[1].stage, "imports");
  EXPECT_EQ(facts.stages[2].stage, "devices:first");
  EXPECT_EQ(facts.stages[2].records.back().value, 2);
  EXPECT_TRUE(fs::exists(m_out / "torch.saw")) << "torch's import never saw mb_first's start";
  EXPECT_TRUE(fs::exists(m_out / "mb_first.saw"));
  expect_nothing_survives();
}

// With every lane held (as many envs in progress as lanes), the chains run
// one after the other, as they always did.
TEST_F(MisbehavingEnv, WithNoLaneToSpareChainsRunOneAfterAnother) {
  write_rendezvous_modules(m_site, 1);
  run_on_lanes(identity_then_a_chain_of_mb_first(), 1, 3);
  EXPECT_FALSE(fs::exists(m_out / "torch.saw")) << "mb_first's chain ran beside identity's";
  expect_nothing_survives();
}

// The bare comparison is an env's second line of work and holds a lane of
// its own when one is spare: on two lanes nothing is left for a chain to run
// beside another (neither run's torch sees its mb_first start); on three, a
// chain of mb_first (activated or bare) runs beside identity's. The bare and
// the activated run each write in a directory of their own.
TEST_F(MisbehavingEnv, TheBareComparisonHoldsALaneBeforeAChainRunsBeside) {
  auto plan = identity_then_a_chain_of_mb_first();
  plan.compare_bare = true;
  write_rendezvous_modules(m_site, 2);
  // Five stages: identity and imports bare too.
  run_on_lanes(plan, 2, 5, true);
  EXPECT_FALSE(fs::exists(m_out / "torch.saw")) << "a bare chain ran beside another";
  EXPECT_FALSE(fs::exists(activated_out() / "torch.saw")) << "an activated chain ran beside";
  for (const auto& out : {m_out, activated_out()}) {
    for (const auto* name : {"torch.started", "mb_first.started", "mb_first.saw"}) {
      fs::remove(out / name);
    }
  }
  // The run that gets no lane to spare waits this long for nothing.
  write_rendezvous_modules(m_site, 4);
  run_on_lanes(plan, 3, 5, true);
  // One lane was left, for one chain of mb_first, bare or activated.
  EXPECT_NE(fs::exists(m_out / "torch.saw"), fs::exists(activated_out() / "torch.saw"))
      << "not exactly one chain ran beside another on three lanes";
  expect_nothing_survives();
}

// A probe cancelled before it starts says the same on any number of lanes:
// each stage not run, for the scan's reason.
TEST_F(MisbehavingEnv, ACancelledProbeSaysTheSameOnAnyLanes) {
  write_pid_module(m_site / "mb_first.py", "def count():\n    return 2\n");
  process::Cancellation cancelled;
  cancelled.cancel("the scan's deadline passed");
  const auto run = [&](int lane_count) {
    auto plan = identity_then_a_chain_of_mb_first();
    plan.cancellation = &cancelled;
    plan.lanes = std::make_shared<ProbeLanes>(lane_count, 1);
    return run_plan(plan);
  };
  const auto in_order = run(1);
  const auto beside = run(2);
  ASSERT_EQ(in_order.stages.size(), 3U);
  ASSERT_EQ(beside.stages.size(), 3U);
  for (std::size_t i = 0; i < beside.stages.size(); ++i) {
    EXPECT_EQ(beside.stages[i].stage, in_order.stages[i].stage);
    EXPECT_EQ(beside.stages[i].status, StageStatus::stopped) << beside.stages[i].stage;
    EXPECT_EQ(beside.stages[i].summary, in_order.stages[i].summary) << beside.stages[i].stage;
    EXPECT_EQ(beside.stages[i].summary, "not run: the scan's deadline passed");
  }
  EXPECT_FALSE(fs::exists(m_out / "mb_first.pid")) << "no env code ran";
}

// The env's deadline cuts identity short while torch imports: what needs
// torch after it is not run, for that reason, on any number of lanes (not
// skipped: a torch cut short says nothing of whether it imports). The
// imports stage, which needs no torch, finished beside where in order the
// deadline left it not run.
TEST_F(MisbehavingEnv, WhenTheDeadlineCutsIdentityShortWhatNeedsTorchIsNotRunOnAnyLanes) {
  fs::create_directories(m_site / "torch");
  std::ofstream(m_site / "torch/__init__.py") << "import time\ntime.sleep(30)\n";
  write_pid_module(m_site / "mb_first.py", "def count():\n    return 2\n");
  const auto run = [&](int lane_count) {
    auto plan = identity_then_a_chain_of_mb_first();
    // The device count needs torch too (after mb_first, its chain's first import).
    plan.devices.back().imports.push_back("torch");
    plan.env_deadline = 2s;
    plan.lanes = std::make_shared<ProbeLanes>(lane_count, 1);
    return run_plan(plan);
  };
  const std::string deadline_passed =
      "not run: the env's deadline of 2 s passed before this stage (env_deadline in the agent's "
      "config)";
  for (const int lanes : {1, 2}) {
    const auto facts = run(lanes);
    ASSERT_EQ(facts.stages.size(), 3U) << lanes << " lanes";
    EXPECT_EQ(facts.stages[0].stage, "identity");
    EXPECT_EQ(facts.stages[0].status, StageStatus::stopped) << facts.stages[0].summary;
    const auto* devices = find_stage(facts, "devices:first");
    ASSERT_NE(devices, nullptr);
    EXPECT_EQ(devices->status, StageStatus::stopped) << lanes << " lanes";
    EXPECT_EQ(devices->summary, deadline_passed) << lanes << " lanes";
    const auto* imports = find_stage(facts, "imports");
    ASSERT_NE(imports, nullptr);
    if (lanes == 1) {
      EXPECT_EQ(imports->summary, deadline_passed);
    } else {
      EXPECT_EQ(imports->status, StageStatus::ok) << imports->summary;
    }
  }
  EXPECT_EQ(times_imported("mb_first"), 1U) << "beside only: its chain imported it once";
  expect_nothing_survives();
}

// In order too: a device count right after an identity the env's deadline
// cut short is not run for that reason, not skipped as if torch did not
// import.
TEST_F(MisbehavingEnv, AnIdentityCutShortSaysNothingOfWhetherTorchImports) {
  fs::create_directories(m_site / "torch");
  std::ofstream(m_site / "torch/__init__.py") << "import time\ntime.sleep(30)\n";
  ProbePlan plan = torch_contract_plan();
  plan.devices.push_back({"count", "torch.device_count()", {"torch"}, 30s});
  plan.compare_bare = false;
  plan.env_deadline = 2s;
  const auto facts = run_plan(plan);
  ASSERT_EQ(facts.stages.size(), 2U);
  EXPECT_EQ(facts.stages[0].status, StageStatus::stopped) << facts.stages[0].summary;
  EXPECT_EQ(facts.stages[1].stage, "devices:count");
  EXPECT_EQ(facts.stages[1].status, StageStatus::stopped);
  EXPECT_EQ(facts.stages[1].summary,
            "not run: the env's deadline of 2 s passed before this stage (env_deadline in the "
            "agent's config)");
  expect_nothing_survives();
}

// Kunlunxin's shape: a snippet in torch's chain, a device count in
// mb_first's. Side by side, the count would use the accelerator while the
// snippet does; with lanes to spare, they still run one after the other.
TEST_F(MisbehavingEnv, TwoChainsThatUseADeviceNeverRunBesideEachOther) {
  write_rendezvous_modules(m_site, 1);
  ProbePlan plan = torch_contract_plan();
  plan.imports = {"torch"};
  plan.devices.push_back({"first", "mb_first.count()", {"mb_first", "torch"}, 30s});
  plan.smokes.push_back({"op", "import torch\nprint('op')\n", 30s});
  plan.compare_bare = false;
  run_on_lanes(plan, 4, 4);
  EXPECT_FALSE(fs::exists(m_out / "torch.saw")) << "the device count ran beside the snippet";
  expect_nothing_survives();
}

// A stage that ran beside identity's chain when torch does not import says
// what it says when run in order, skipped: the report does not depend on how
// many lanes were spare.
TEST_F(MisbehavingEnv, AStageThatRanBesideIsSkippedWhenTorchDoesNotImport) {
  write_pid_module(m_site / "torch/__init__.py", "raise ImportError('no torch here')\n");
  write_pid_module(m_site / "mb_first.py", "def count():\n    return 2\n");
  const auto run = [&](unsigned lane_count) {
    ProbePlan plan = torch_contract_plan();
    plan.imports = {"torch"};
    // It imports torch after mb_first: it needs torch, in a chain of its own.
    plan.devices.push_back({"first", "mb_first.count()", {"mb_first", "torch"}, 30s});
    plan.compare_bare = false;
    plan.lanes = std::make_shared<ProbeLanes>(lane_count, 1);
    return run_plan(plan);
  };
  const auto in_order = run(1);
  EXPECT_FALSE(fs::exists(m_out / "mb_first.pid")) << "skipped in order: never imported";
  const auto beside = run(2);
  EXPECT_EQ(times_imported("mb_first"), 1U) << "run beside, then marked skipped";
  ASSERT_EQ(beside.stages.size(), 3U);
  ASSERT_EQ(beside.stages.size(), in_order.stages.size());
  for (std::size_t i = 0; i < beside.stages.size(); ++i) {
    EXPECT_EQ(beside.stages[i].stage, in_order.stages[i].stage);
    EXPECT_EQ(beside.stages[i].status, in_order.stages[i].status) << beside.stages[i].stage;
    EXPECT_EQ(beside.stages[i].summary, in_order.stages[i].summary) << beside.stages[i].stage;
  }
  const auto* devices = find_stage(beside, "devices:first");
  ASSERT_NE(devices, nullptr);
  EXPECT_EQ(devices->status, StageStatus::skipped);
  EXPECT_EQ(devices->summary, "skipped: torch does not import in this env");
  expect_nothing_survives();
}

// A snippet that kills its process is that stage's crash, with its signal,
// and one that exits early is that stage's early end, as either would be in
// an interpreter of its own; the stages after it start again from a new
// interpreter's import.
TEST_F(MisbehavingEnv, ACrashInAForkedStageIsThatStagesAndTheNextStillRun) {
  write_pid_module(m_site / "torch/__init__.py", "__version__ = '2.10.0'\n");
  ProbePlan plan = torch_contract_plan();
  plan.smokes.push_back({"segv", "import torch\nimport ctypes\nctypes.string_at(0)\n", 20s});
  plan.smokes.push_back({"exit0", "import torch\nimport os\nos._exit(0)\n", 20s});
  plan.smokes.push_back({"after", "import torch\nprint('still here')\n", 20s});
  plan.compare_bare = false;
  const auto facts = run_plan(plan);
  const auto* identity = find_stage(facts, "identity");
  const auto* segv = find_stage(facts, "smoke:segv");
  const auto* after = find_stage(facts, "smoke:after");
  ASSERT_TRUE(identity != nullptr && segv != nullptr && after != nullptr);
  EXPECT_EQ(identity->status, StageStatus::ok) << identity->summary;
  EXPECT_EQ(segv->status, StageStatus::crashed) << segv->summary;
  EXPECT_EQ(segv->process, "killed by SIGSEGV");
  EXPECT_EQ(segv->end.how, envcontract::facts::ProcessEnd::How::signaled);
  EXPECT_EQ(segv->end.signal, SIGSEGV);
  EXPECT_TRUE(segv->summary.starts_with("smoke:segv killed by SIGSEGV")) << segv->summary;
  // A snippet that ends its process quietly ends the stage as it would alone.
  const auto* exit0 = find_stage(facts, "smoke:exit0");
  ASSERT_NE(exit0, nullptr);
  EXPECT_EQ(exit0->status, StageStatus::crashed) << exit0->summary;
  EXPECT_TRUE(exit0->end.exited_with(0)) << exit0->process;
  EXPECT_EQ(exit0->summary, "smoke:exit0 ended the process (exit 0) before the probe finished");
  EXPECT_EQ(after->status, StageStatus::ok) << after->summary;
  EXPECT_EQ(after->records.back().output, "still here\n");
  // One interpreter for identity and the crash, one for the quiet exit, one for the last.
  EXPECT_EQ(times_imported("torch"), 3U);
  expect_nothing_survives();
}

// A snippet that hangs in a forked process: the diagnosis samples that
// process (its Python stack is the snippet's, not the interpreter waiting
// for it), and the stage after it still runs.
TEST_F(MisbehavingEnv, AHangInAForkedStageIsDiagnosedInItsOwnProcess) {
  write_pid_module(m_site / "torch/__init__.py", "__version__ = '2.10.0'\n");
  ProbePlan plan = torch_contract_plan();
  plan.smokes.push_back({"sleeps", "import torch\nimport time\ntime.sleep(3600)\n", 1500ms});
  plan.smokes.push_back({"after", "import torch\nprint('still here')\n", 20s});
  plan.compare_bare = false;
  const auto facts = run_plan(plan);
  EXPECT_LT(m_elapsed, 15s);
  const auto* sleeps = find_stage(facts, "smoke:sleeps");
  const auto* after = find_stage(facts, "smoke:after");
  ASSERT_TRUE(sleeps != nullptr && after != nullptr);
  EXPECT_EQ(sleeps->status, StageStatus::hung) << sleeps->summary;
  ASSERT_TRUE(sleeps->hang.has_value());
  EXPECT_EQ(sleeps->hang->classification, "blocked");
  EXPECT_NE(sleeps->hang->python_stacks.find("File \"<smoke>\", line 3"), std::string::npos)
      << sleeps->hang->python_stacks;
  // The interpreter that forked it waits in run_forked, outside any stage.
  EXPECT_NE(sleeps->hang->python_stacks.find("in stage_smoke"), std::string::npos)
      << "not the stage's process: " << sleeps->hang->python_stacks;
  EXPECT_EQ(after->status, StageStatus::ok) << after->summary;
  expect_nothing_survives();
}

// What a snippet starts and leaves running would have been killed with its
// interpreter: the chain ends after that stage, whose result stands, and the
// next starts from a new interpreter.
TEST_F(MisbehavingEnv, AStageThatLeavesAProcessRunningEndsItsChain) {
  write_pid_module(m_site / "torch/__init__.py", "__version__ = '2.10.0'\n");
  ProbePlan plan = torch_contract_plan();
  plan.smokes.push_back({"leaves",
                         "import torch\nimport subprocess\n"
                         "subprocess.Popen(['sleep', '3600'])\nprint('left one')\n",
                         20s});
  plan.smokes.push_back({"after", "import torch\nprint('still here')\n", 20s});
  plan.compare_bare = false;
  const auto facts = run_plan(plan);
  const auto* leaves = find_stage(facts, "smoke:leaves");
  const auto* after = find_stage(facts, "smoke:after");
  ASSERT_TRUE(leaves != nullptr && after != nullptr);
  EXPECT_EQ(leaves->status, StageStatus::ok) << leaves->summary;
  EXPECT_NE(leaves->process.find("the interpreter stopped after it (a forked smoke stage left 1 "
                                 "process running)"),
            std::string::npos)
      << leaves->process;
  EXPECT_EQ(after->status, StageStatus::ok) << after->summary;
  EXPECT_EQ(times_imported("torch"), 2U);
  expect_nothing_survives();
}

// A snippet that does not compile runs nothing, so nothing of the import it
// would have started with is its own: no output, as in a fresh interpreter.
TEST_F(MisbehavingEnv, ASnippetThatDoesNotCompileTakesNothingFromTheImport) {
  write_pid_module(m_site / "torch/__init__.py",
                   "print('torch says hello')\n__version__ = '2.10.0'\n");
  ProbePlan plan = torch_contract_plan();
  plan.smokes.push_back({"broken", "import torch\ndef (:\n", 20s});
  plan.compare_bare = false;
  const auto facts = run_plan(plan);
  const auto* broken = find_stage(facts, "smoke:broken");
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->status, StageStatus::failed);
  EXPECT_TRUE(broken->summary.starts_with("smoke: SyntaxError: invalid syntax")) << broken->summary;
  ASSERT_FALSE(broken->records.empty());
  EXPECT_EQ(broken->records.back().output, "");
  expect_nothing_survives();
}

// Signal handlers the import installs are the stages' own, never run in the
// interpreter between them: one that raises on SIGCHLD, or ignoring SIGCHLD
// (children reaped unseen), changes nothing the chain reports.
TEST_F(MisbehavingEnv, SignalHandlersOfTheImportDoNotRunBetweenStages) {
  for (const char* handler : {"lambda *_: 1 / 0", "signal.SIG_IGN"}) {
    SCOPED_TRACE(handler);
    write_pid_module(m_site / "torch/__init__.py",
                     std::string("import signal\nsignal.signal(signal.SIGCHLD, ") + handler +
                         ")\n__version__ = '2.10.0'\n");
    fs::remove(m_out / "torch.pid");
    ProbePlan plan = torch_contract_plan();
    plan.imports = {"torch"};
    plan.smokes.push_back(
        {"handler", "import torch\nimport signal\nprint(signal.getsignal(signal.SIGCHLD))\n", 20s});
    // A crash is still told by its signal, SIGCHLD ignored or not.
    plan.smokes.push_back({"segv", "import torch\nimport ctypes\nctypes.string_at(0)\n", 20s});
    plan.smokes.push_back({"after", "import torch\nprint('still here')\n", 20s});
    plan.compare_bare = false;
    const auto facts = run_plan(plan);
    ASSERT_EQ(facts.stages.size(), 5U);
    for (const auto* name : {"identity", "imports", "smoke:handler", "smoke:after"}) {
      const auto* stage = find_stage(facts, name);
      ASSERT_NE(stage, nullptr);
      EXPECT_EQ(stage->status, StageStatus::ok) << name << ": " << stage->summary;
    }
    const std::string forked =
        "finished in a process forked from the interpreter after import torch";
    EXPECT_EQ(facts.stages[0].process, forked);
    EXPECT_EQ(facts.stages[2].process, forked);
    // The stage's own disposition is the one the import set.
    EXPECT_EQ(facts.stages[2].records.back().output.find("SIG_IGN") != std::string::npos,
              std::string(handler) == "signal.SIG_IGN")
        << facts.stages[2].records.back().output;
    EXPECT_EQ(facts.stages[3].status, StageStatus::crashed) << facts.stages[3].summary;
    EXPECT_EQ(facts.stages[3].process, "killed by SIGSEGV");
    EXPECT_EQ(times_imported("torch"), 2U);
    expect_nothing_survives();
  }
}

// A fork copies one thread and shares open devices: after an import that
// started a thread, or opened a device, the stages are not forked but each
// runs in an interpreter of its own, and the report says why.
TEST_F(MisbehavingEnv, AnImportThatStartsAThreadIsNotForked) {
  write_pid_module(m_site / "torch/__init__.py",
                   "import threading, time\n"
                   "threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n"
                   "__version__ = '2.10.0'\n");
  ProbePlan plan = torch_contract_plan();
  plan.imports = {"torch"};
  plan.smokes.push_back({"op", "import torch\nprint('ok')\n", 20s});
  plan.compare_bare = false;
  const auto facts = run_plan(plan);
  ASSERT_EQ(facts.stages.size(), 3U);
  for (const auto& stage : facts.stages) {
    EXPECT_EQ(stage.status, StageStatus::ok) << stage.stage << ": " << stage.summary;
  }
  EXPECT_EQ(facts.stages[0].process,
            "exit 0 (in an interpreter of its own: import torch started 1 other thread, which a "
            "fork does not copy)");
  // So does each stage after it that imports torch first: the interpreter
  // that stopped the chain is not asked again.
  for (std::size_t i = 1; i < facts.stages.size(); ++i) {
    EXPECT_EQ(facts.stages[i].process, facts.stages[0].process) << facts.stages[i].stage;
  }
  // The declined chain imported torch and stopped; each stage then imported
  // it alone.
  EXPECT_EQ(times_imported("torch"), 4U);
  EXPECT_EQ(facts.stages[2].records.back().output, "ok\n");
  expect_nothing_survives();
}

TEST_F(MisbehavingEnv, AnImportThatOpensADeviceIsNotForked) {
  // A device node of our own (FUSE's numbers: opening it alone does nothing),
  // which the unprivileged probe may open.
  const fs::path device = m_out / "accelerator0";
  if (::mknod(device.c_str(), S_IFCHR | 0666, ::makedev(10, 229)) != 0) {
    GTEST_SKIP() << "cannot make a device node here: " << std::strerror(errno);
  }
  ::chmod(device.c_str(), 0666);
  write_pid_module(m_site / "torch/__init__.py",
                   "import os\n"
                   "_device = os.open(os.path.join(os.environ['ENVCONTRACT_TEST_OUT'], "
                   "'accelerator0'), os.O_RDWR)\n"
                   "__version__ = '2.10.0'\n");
  ProbePlan plan = torch_contract_plan();
  plan.imports = {"torch"};
  plan.compare_bare = false;
  const auto facts = run_plan(plan);
  const auto* identity = find_stage(facts, "identity");
  ASSERT_NE(identity, nullptr);
  EXPECT_EQ(identity->status, StageStatus::ok) << identity->summary;
  EXPECT_EQ(identity->process, "exit 0 (in an interpreter of its own: import torch opened " +
                                   device.string() + ", whose state a fork would share)");
  expect_nothing_survives();
}

// When torch does not import, the chain stops before the stages that need
// it, and those are skipped, not run.
TEST_F(MisbehavingEnv, WhenTorchDoesNotImportTheStagesThatNeedItAreSkipped) {
  write_pid_module(m_site / "torch/__init__.py", "raise ImportError('no torch here')\n");
  ProbePlan plan = torch_contract_plan();
  plan.imports = {"torch"};
  plan.devices.push_back({"count", "torch.device_count()", {"torch"}, 20s});
  plan.smokes.push_back({"op", "import torch\nprint('ok')\n", 20s});
  plan.compare_bare = false;
  const auto facts = run_plan(plan);
  ASSERT_EQ(facts.stages.size(), 4U);
  EXPECT_EQ(facts.stages[0].status, StageStatus::failed);
  EXPECT_EQ(facts.stages[0].summary, "import torch: ImportError: no torch here");
  EXPECT_EQ(facts.stages[1].status, StageStatus::failed);
  EXPECT_EQ(facts.stages[1].summary, "import torch: ImportError: no torch here");
  for (const auto* name : {"devices:count", "smoke:op"}) {
    const auto* stage = find_stage(facts, name);
    ASSERT_NE(stage, nullptr);
    EXPECT_EQ(stage->status, StageStatus::skipped) << name;
    EXPECT_EQ(stage->summary, "skipped: torch does not import in this env") << name;
  }
  // One interpreter tried: the chain stopped after the imports stage.
  EXPECT_EQ(times_imported("torch"), 1U);
  EXPECT_NE(facts.stages[1].process.find("the interpreter stopped after it (import torch failed)"),
            std::string::npos)
      << facts.stages[1].process;
  expect_nothing_survives();
}

// Each stage of the interpreter is held to its own time-out from its own
// start: a slow torch import does not eat the imports stage's time, and a
// hang in the imports stage is that stage's.
TEST_F(MisbehavingEnv, AHangInTheSecondStageIsTimedFromItsOwnStart) {
  const auto plan = slow_torch_then_a_hang(2, 1500ms);
  const auto facts = run_plan(plan);
  EXPECT_GT(m_elapsed, 3s);
  EXPECT_LT(m_elapsed, 15s);
  const auto* identity = find_stage(facts, "identity");
  const auto* imports = find_stage(facts, "imports");
  ASSERT_NE(identity, nullptr);
  ASSERT_NE(imports, nullptr);
  EXPECT_EQ(identity->status, StageStatus::ok) << identity->summary;
  EXPECT_GE(identity->duration, 2s);
  EXPECT_EQ(imports->status, StageStatus::hung) << imports->summary;
  EXPECT_TRUE(imports->summary.starts_with("import mb_sleep did not finish within 1500 ms"))
      << imports->summary;
  ASSERT_TRUE(imports->hang.has_value());
  EXPECT_NE(imports->hang->python_stacks.find("mb_sleep.py"), std::string::npos);
  expect_nothing_survives();
}

// A torch that kills its interpreter: identity is the crash, and the imports
// stage runs again in an interpreter of its own, with its own end.
TEST_F(MisbehavingEnv, ACrashInIdentityLeavesImportsToANewInterpreter) {
  fs::create_directories(m_site / "torch");
  std::ofstream(m_site / "torch/__init__.py") << "import ctypes\nctypes.string_at(0)\n";
  ProbePlan plan = torch_contract_plan();
  plan.imports = {"torch", "json"};
  plan.compare_bare = false;
  const auto facts = run_plan(plan);
  const auto* identity = find_stage(facts, "identity");
  const auto* imports = find_stage(facts, "imports");
  ASSERT_TRUE(identity != nullptr && imports != nullptr);
  EXPECT_EQ(identity->status, StageStatus::crashed) << identity->summary;
  EXPECT_TRUE(identity->summary.starts_with("import torch killed by SIGSEGV")) << identity->summary;
  EXPECT_EQ(imports->status, StageStatus::crashed) << imports->summary;
  EXPECT_TRUE(imports->summary.starts_with("import torch killed by SIGSEGV")) << imports->summary;
  EXPECT_EQ(imports->process, "killed by SIGSEGV");
  expect_nothing_survives();
}

TEST_F(MisbehavingEnv, AbortAtImportIsACrashWithItsSignal) {
  const auto stage = run_imports("mb_abort");
  EXPECT_EQ(stage.status, StageStatus::crashed);
  EXPECT_EQ(stage.process, "killed by SIGABRT");
  EXPECT_TRUE(stage.summary.starts_with("import mb_abort killed by SIGABRT")) << stage.summary;
  expect_nothing_survives();
}

TEST_F(MisbehavingEnv, SegfaultIsACrashWithItsSignal) {
  const auto stage = run_imports("mb_segv");
  EXPECT_EQ(stage.status, StageStatus::crashed);
  EXPECT_EQ(stage.process, "killed by SIGSEGV");
  // Python's own fault handler is not ours; the stderr tail still says where.
  EXPECT_TRUE(stage.summary.starts_with("import mb_segv killed by SIGSEGV")) << stage.summary;
  expect_nothing_survives();
}

TEST_F(MisbehavingEnv, SleepingForeverIsABlockedHang) {
  const auto stage = run_imports("mb_sleep", 1500ms);
  EXPECT_LT(m_elapsed, 15s);
  EXPECT_EQ(stage.status, StageStatus::hung);
  ASSERT_TRUE(stage.hang.has_value());
  EXPECT_EQ(stage.hang->classification, "blocked");
  // time.sleep waits in select() or clock_nanosleep(), depending on the Python.
  EXPECT_TRUE(stage.hang->summary.starts_with("all 1 thread asleep: 1 in ")) << stage.hang->summary;
  EXPECT_NE(stage.hang->python_stacks.find("mb_sleep.py\", line 2"), std::string::npos)
      << stage.hang->python_stacks;
  EXPECT_TRUE(stage.summary.starts_with("import mb_sleep did not finish within 1500 ms"))
      << stage.summary;
  expect_nothing_survives();
}

TEST_F(MisbehavingEnv, AStubbornGrandchildDoesNotKeepTheProbeAlive) {
  const auto stage = run_imports("mb_fork");
  EXPECT_LT(m_elapsed, 15s);
  EXPECT_EQ(stage.status, StageStatus::ok) << stage.summary;
  std::ifstream pid_file(m_out / "mb_fork.pid");
  pid_t grandchild = 0;
  pid_file >> grandchild;
  EXPECT_GT(grandchild, 0);
  expect_nothing_survives();
}

TEST_F(MisbehavingEnv, AFloodCostsOnlyTheBound) {
  const auto stage = run_imports("mb_flood");
  EXPECT_EQ(stage.status, StageStatus::ok) << stage.summary;
  EXPECT_LE(stage.stdout_tail.size(), 4096U);
  expect_nothing_survives();
}

TEST_F(MisbehavingEnv, CorruptedProbeOutputIsAProbeError) {
  const auto stage = run_imports("mb_badjson");
  EXPECT_EQ(stage.status, StageStatus::probe_error);
  // Line 1 is the start record, line 2 the interpreter's sys.path.
  EXPECT_TRUE(stage.summary.starts_with("malformed probe output at line 3: {not json"))
      << stage.summary;
  expect_nothing_survives();
}

TEST_F(MisbehavingEnv, RecordsOfTheWrongTypeDoNotCrashTheAgent) {
  const auto stage = run_imports("mb_typed");
  EXPECT_EQ(stage.status, StageStatus::failed);
  // Fields of the wrong type are dropped when the records are read.
  EXPECT_EQ(stage.summary, "import (unnamed module): no error recorded");
}

// The probe never ends before its end record: an exit 0 in the middle is
// the env's code ending its own process, not the agent's failure.
TEST_F(MisbehavingEnv, ExitZeroMidwayIsTheEnvEndingItsProcess) {
  const auto stage = run_imports("mb_exit0");
  EXPECT_EQ(stage.status, StageStatus::crashed);
  EXPECT_EQ(stage.process, "exit 0");
  EXPECT_EQ(stage.summary, "import mb_exit0 ended the process (exit 0) before it returned");
  expect_nothing_survives();
}

TEST_F(MisbehavingEnv, AnInterpreterThatPrintsNothingIsAProbeError) {
  fs::remove(m_prefix / "bin" / "python");
  fs::create_symlink("/bin/true", m_prefix / "bin" / "python");
  const auto stage = run_imports("mb_abort");
  EXPECT_EQ(stage.status, StageStatus::probe_error);
  EXPECT_EQ(stage.summary, "the probe reported nothing (exit 0): the interpreter could not run it");
  expect_nothing_survives();
}

}  // namespace
}  // namespace envcontract::probes
